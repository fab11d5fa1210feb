"""YAML text to plain data that remembers where each value was written, fast.

libyaml (PyYAML's C parser) composes the node tree; the values are built here, so that:
- every mapping and sequence knows the line of each of its entries (for one-line errors that name
  the place in the file), and duplicate keys are refused;
- plain scalars follow the YAML 1.2 core schema, as ruamel.yaml (which writes the files) does:
  null, true/false, decimal integers, everything else text (`no`, `on`, timestamps and version-like
  numbers stay text; a float is left as its text, which no field of the schema accepts as a number);
- an integer remembers its text, so a field that wants text (a short all-digit commit id) gets the
  text as written (`0123`, not `123`).

A ruamel.yaml round-trip load of a 5,000-task board takes ~8 s in pure Python; libyaml composes it
in a fraction of that (benchmarks/bench_governance.py).
"""
from __future__ import annotations

import re
from typing import Any

from gitliza.errors import MissingDependency, ValidationError

_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_TRUE = re.compile(r"^(?:true|True|TRUE)$")
_FALSE = re.compile(r"^(?:false|False|FALSE)$")
_INT = re.compile(r"^[-+]?[0-9]+$")


class Int(int):
    """An integer with the text it was written as."""

    raw: str

    def __new__(cls, text: str) -> Int:
        obj = super().__new__(cls, int(text))
        obj.raw = text
        return obj


class Map(dict[Any, Any]):
    line: int = 0
    lines: dict[Any, int]


class Seq(list[Any]):
    line: int = 0
    lines: list[int]


def _scalar(node: Any) -> Any:
    text = node.value
    if node.style:  # quoted, literal or folded: always text
        return text
    if _NULL.match(text):
        return None
    if _TRUE.match(text):
        return True
    if _FALSE.match(text):
        return False
    if _INT.match(text):
        return Int(text)
    return text


def _build(node: Any, name: str) -> Any:
    kind = node.id
    if kind == "scalar":
        return _scalar(node)
    if kind == "sequence":
        seq = Seq(_build(n, name) for n in node.value)
        seq.line = node.start_mark.line + 1
        seq.lines = [n.start_mark.line + 1 for n in node.value]
        return seq
    if kind == "mapping":
        m = Map()
        m.line = node.start_mark.line + 1
        m.lines = {}
        for knode, vnode in node.value:
            key = _build(knode, name)
            try:
                hash(key)
            except TypeError:
                raise ValidationError(f"{name}:{knode.start_mark.line + 1}: a key must be a "
                                      "scalar") from None
            if key in m:
                raise ValidationError(f"{name}:{knode.start_mark.line + 1}: not valid YAML: "
                                      f"duplicate key {key!r}")
            m[key] = _build(vnode, name)
            m.lines[key] = knode.start_mark.line + 1
        return m
    raise ValidationError(f"{name}:{node.start_mark.line + 1}: unsupported YAML node")


def load(text: str, name: str) -> Any:
    """The document's data (None for an empty document). Raises ValidationError with the line of
    the first syntax error."""
    try:
        import yaml  # type: ignore[import-untyped]
    except ImportError:
        raise MissingDependency("PyYAML is not installed", hint="pip install pyyaml") from None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        node = yaml.compose(text, Loader=loader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        what = " ".join(str(e.problem or e.context or "malformed YAML").split())
        raise ValidationError(f"{name}{line}: not valid YAML: {what}") from None
    except yaml.YAMLError as e:
        raise ValidationError(f"{name}: not valid YAML: {' '.join(str(e).split())}") from None
    return None if node is None else _build(node, name)


def line_of(node: Any, key: Any, default: int | None) -> int | None:
    """The line of `node[key]` (a mapping key or a sequence index), else `default`."""
    if isinstance(node, Map):
        return node.lines.get(key, default)
    if isinstance(node, Seq) and isinstance(key, int) and 0 <= key < len(node.lines):
        return node.lines[key]
    return default
