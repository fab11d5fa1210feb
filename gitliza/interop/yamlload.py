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
from pathlib import Path
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


# Limits, checked as the document is read, before anything can blow up: a file far larger than
# any board; nesting far deeper than the schema's (4 levels) and than a recursive reader survives
# (libyaml's own composer recursed in C: 100,000 nested `[` crashed the process); and the number
# of values the document stands for with every alias expanded ("billion laughs": 520 bytes that
# stand for 10^9 values). A board of 10,000 tasks is ~10 MB and ~500,000 values.
MAX_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 64
MAX_VALUES = 5_000_000
MAX_ALIASES = 10_000


def _too(name: str, line: int, what: str) -> ValidationError:
    return ValidationError(f"{name}:{line}: refused: {what}", hint="not a board gitliza wrote; "
                           "check where the file came from")


class _Open:
    """A collection being read: its value, its weight so far (the values it stands for, aliases
    expanded), the key waiting for its value (mappings), and its anchor."""

    __slots__ = ("coll", "weight", "key", "anchor")

    def __init__(self, coll: Map | Seq, anchor: str | None) -> None:
        self.coll, self.weight, self.key, self.anchor = coll, 1, _NO_KEY, anchor


_NO_KEY: Any = object()


def _compose(events: Any, name: str) -> Any:
    """The document's data from libyaml's event stream, without recursion."""
    stack: list[_Open] = []
    anchors: dict[str, tuple[Any, int]] = {}
    aliases = docs = 0
    root: Any = None
    for ev in events:
        kind = type(ev).__name__
        line = ev.start_mark.line + 1
        anchor = None
        if kind == "ScalarEvent":
            value, weight, anchor = _scalar(ev), 1, ev.anchor
        elif kind == "AliasEvent":
            aliases += 1
            if aliases > MAX_ALIASES:
                raise _too(name, line, f"more than {MAX_ALIASES:,} aliases")
            if ev.anchor not in anchors:
                raise ValidationError(f"{name}:{line}: not valid YAML: found undefined alias "
                                      f"{ev.anchor!r}")
            value, weight = anchors[ev.anchor]
        elif kind in ("MappingStartEvent", "SequenceStartEvent"):
            if len(stack) >= MAX_DEPTH:
                raise _too(name, line, f"nested more than {MAX_DEPTH} levels deep")
            coll: Map | Seq
            if kind == "MappingStartEvent":
                coll = Map()
                coll.lines = {}
            else:
                coll = Seq()
                coll.lines = []
            coll.line = line
            stack.append(_Open(coll, ev.anchor))
            continue
        elif kind in ("MappingEndEvent", "SequenceEndEvent"):
            done = stack.pop()
            value, weight, anchor, line = done.coll, done.weight, done.anchor, done.coll.line
        elif kind == "DocumentStartEvent":
            docs += 1
            if docs > 1:
                raise ValidationError(f"{name}:{line}: not valid YAML: expected a single "
                                      "document in the stream")
            continue
        else:  # the stream's and the document's ends
            continue
        if anchor is not None:
            anchors[anchor] = (value, weight)
        if not stack:
            root = value
            continue
        top = stack[-1]
        top.weight += weight
        if top.weight > MAX_VALUES:
            raise _too(name, line, f"stands for more than {MAX_VALUES:,} values (aliases "
                       "expanded)")
        if isinstance(top.coll, Seq):
            top.coll.append(value)
            top.coll.lines.append(line)
        elif top.key is _NO_KEY:
            try:
                hash(value)
            except TypeError:
                raise ValidationError(f"{name}:{line}: a key must be a scalar") from None
            if value in top.coll:
                raise ValidationError(f"{name}:{line}: not valid YAML: duplicate key {value!r}")
            top.coll.lines[value] = line
            top.key = value
        else:
            top.coll[top.key] = value
            top.key = _NO_KEY
    return root


def check_size(path: Path) -> None:
    """Refuse a file larger than MAX_BYTES before reading it (nothing is read when it is)."""
    try:
        size = path.stat().st_size
    except OSError:
        return  # the reader says what is wrong with it
    if size > MAX_BYTES:
        raise _too(path.name, 1, f"{size:,} bytes, more than {MAX_BYTES:,}")


def load(text: str, name: str) -> Any:
    """The document's data (None for an empty document). Raises ValidationError with the line of
    the first syntax error, or of the first limit exceeded."""
    try:
        import yaml  # type: ignore[import-untyped]
    except ImportError:
        raise MissingDependency("PyYAML is not installed", hint="pip install pyyaml") from None
    size = len(text.encode("utf-8", "surrogatepass")) if len(text) * 4 > MAX_BYTES else len(text)
    if size > MAX_BYTES:
        raise _too(name, 1, f"{size:,} bytes, more than {MAX_BYTES:,}")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return _compose(yaml.parse(text, Loader=loader), name)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        what = " ".join(str(e.problem or e.context or "malformed YAML").split())
        raise ValidationError(f"{name}{line}: not valid YAML: {what}") from None
    except yaml.YAMLError as e:
        raise ValidationError(f"{name}: not valid YAML: {' '.join(str(e).split())}") from None


def line_of(node: Any, key: Any, default: int | None) -> int | None:
    """The line of `node[key]` (a mapping key or a sequence index), else `default`."""
    if isinstance(node, Map):
        return node.lines.get(key, default)
    if isinstance(node, Seq) and isinstance(key, int) and 0 <= key < len(node.lines):
        return node.lines[key]
    return default
