"""YAML nodes to the model's dataclasses, strictly, each problem reported with its place in the
file: the seed schema's own rules for values (enums, timestamps, ids, the keys that differ from
field names) and the walk over a document's sections (gitliza/interop/seed.py reads the whole
document with them). The nodes come from gitliza/interop/yamlload.py, which remembers lines.

    Where(name, path, line).fail(msg)  ->  ValidationError("state.yaml:42: tasks[3].status: msg")
"""
from __future__ import annotations

import dataclasses
import typing
from enum import Enum
from typing import Any, Iterator

from gitliza.core import clock, ids
from gitliza.core.model import Agent, Discovery, Goal, HumanNote, Sprint, Task
from gitliza.errors import LizaError, ValidationError
from gitliza.interop import yamlload

# Fields whose value is an ISO timestamp.
TIMESTAMPS = frozenset({"created", "lease_expires", "review_lease_expires", "heartbeat",
                        "registered", "timestamp", "time", "started", "deadline",
                        "checkpoint_at", "ended", "last_check", "resolved_at", "paused_at",
                        "aborted_at", "resumed_at"})
# YAML key -> field, per class (the spec's `for` is a Python keyword).
RENAMES: dict[type, dict[str, str]] = {HumanNote: {"for": "for_task"},
                                       Agent: {"task": "current_task"}}
IDS = {(Task, "id"): "task id", (Agent, "id"): "agent id", (Goal, "id"): "goal id",
       (Sprint, "id"): "sprint id", (Discovery, "id"): "discovery id"}


class Where:
    """A place in the document: a dotted path and a line number."""

    def __init__(self, name: str, path: str, line: int | None) -> None:
        self.name, self.path, self.line = name, path, line

    def fail(self, msg: str) -> typing.NoReturn:
        raise ValidationError(self.message(msg))

    def message(self, msg: str) -> str:
        at = f"{self.name}:{self.line}" if self.line is not None else self.name
        where = f" {self.path}:" if self.path else ""
        return f"{at}:{where} {msg}"

    def broken(self, msg: str, warnings: list[str] | None) -> None:
        """A broken invariant: refused, or with `warnings` (import) one warning more."""
        if warnings is None:
            self.fail(msg)
        warnings.append(self.message(msg))

    def key(self, node: Any, k: str) -> Where:
        return Where(self.name, f"{self.path}.{k}" if self.path else k,
                     yamlload.line_of(node, k, self.line))

    def item(self, node: Any, i: int) -> Where:
        return Where(self.name, f"{self.path}[{i}]", yamlload.line_of(node, i, self.line))


# -- values ---------------------------------------------------------------------------------------
def scalar(tp: Any, v: Any, at: Where, field: str) -> Any:
    if isinstance(tp, type) and issubclass(tp, Enum):
        try:
            return tp(v)
        except ValueError:
            allowed = ", ".join(str(m.value) for m in tp)
            at.fail(f"{v!r} is not one of {allowed}")
    if tp is bool:
        if type(v) is not bool:
            at.fail(f"expected true or false, got {v!r}")
        return v
    if tp is int:
        if not isinstance(v, int) or isinstance(v, bool):
            at.fail(f"expected an integer, got {v!r}")
        return int(v)
    if tp is str:
        if isinstance(v, int) and not isinstance(v, bool):
            v = getattr(v, "raw", str(v))  # an all-digit short commit id, as written
        if not isinstance(v, str):
            at.fail(f"expected text, got {type(v).__name__} {v!r}")
        v = str(v)  # drop ruamel's scalar-string subclasses
        if field in TIMESTAMPS:
            try:
                clock.check_ts(v)
            except LizaError:
                at.fail(f"{v!r} is not an ISO 8601 UTC timestamp (YYYY-MM-DDTHH:MM:SSZ)")
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            at.fail("text is not valid UTF-8")
        return v
    at.fail(f"unsupported value {v!r}")


def value(tp: Any, v: Any, at: Where, field: str) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType")):
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return value(inner[0], v, at, field)
        if not isinstance(v, (str, int, bool)) or v is None:  # an anomaly detail value
            at.fail(f"expected text, a number or true/false, got {v!r}")
        return str(v) if isinstance(v, str) else v
    if origin is tuple:
        item = args[0]
        if typing.get_origin(item) is tuple:  # an ordered mapping (Anomaly.details)
            if not isinstance(v, dict):
                at.fail("expected a mapping")
            return tuple((str(k), _detail(x, at.key(v, str(k)))) for k, x in v.items())
        if not isinstance(v, list):
            at.fail("expected a list")
        return tuple(value(item, x, at.item(v, i), field) for i, x in enumerate(v))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return entity(tp, v, at)
    return scalar(tp, v, at, field)


def _detail(v: Any, at: Where) -> str | int | bool:
    if isinstance(v, bool):
        return bool(v)
    if isinstance(v, int):
        return int(v)
    if isinstance(v, str):
        return str(v)
    at.fail(f"an anomaly detail must be text, a number or true/false, got {v!r}")


_HINTS: dict[type, dict[str, Any]] = {}


def entity(cls: type, node: Any, at: Where, extra: dict[str, Any] | None = None,
            skip: tuple[str, ...] = ()) -> Any:
    """A dataclass from a YAML mapping: null means unset, unknown keys are refused."""
    if not isinstance(node, dict):
        at.fail(f"expected a mapping, got {type(node).__name__}")
    hints = _HINTS.get(cls) or _HINTS.setdefault(cls, typing.get_type_hints(cls))
    fields = {f.name: f for f in dataclasses.fields(cls)}
    renames = RENAMES.get(cls, {})
    kwargs: dict[str, Any] = dict(extra or {})
    for k, v in node.items():
        if not isinstance(k, str):
            at.fail(f"key {k!r} is not text")
        if k in skip:
            continue
        name = renames.get(k, k)
        f = fields.get(name)
        if f is None or name in (extra or {}):
            at.key(node, k).fail(f"unknown key {k!r} (known: {', '.join(_keys(cls))})")
        if v is None:
            continue
        if name in kwargs and k != name:
            at.key(node, k).fail(f"{k!r} repeats {name!r}")
        kwargs[name] = value(hints[name], v, at.key(node, k), name)
        what = IDS.get((cls, name))
        if what:
            check_id(kwargs[name], what, at.key(node, k))
    for name, f in fields.items():
        if name not in kwargs and f.default is dataclasses.MISSING and \
                f.default_factory is dataclasses.MISSING:
            at.fail(f"missing required field {_key_of(cls, name)!r}")
    return cls(**kwargs)


def _keys(cls: type) -> list[str]:
    return [_key_of(cls, f.name) for f in dataclasses.fields(cls)]


def _key_of(cls: type, name: str) -> str:
    for k, n in RENAMES.get(cls, {}).items():
        if n == name and k != "task":
            return k
    return name


def check_id(value: str, what: str, at: Where) -> None:
    try:
        ids.check_id(value, what)
    except LizaError as e:
        at.fail(str(e))


def ref(value: str | None, known: typing.Container[str], what: str, at: Where) -> None:
    if value is not None and value not in known:
        at.fail(f"{what} {value!r} does not exist")


def list_items(doc: Any, key: str, at: Where) -> Iterator[tuple[int, Any, Where]]:
    node = doc.get(key)
    if node is None:
        return
    if not isinstance(node, list):
        at.key(doc, key).fail("expected a list")
    here = at.key(doc, key)
    for i, item in enumerate(node):
        yield i, item, here.item(node, i)


def mapping_items(doc: Any, key: str, at: Where) -> Iterator[tuple[str, Any, Where]]:
    node = doc.get(key)
    if node is None:
        return
    if not isinstance(node, dict):
        at.key(doc, key).fail("expected a mapping")
    here = at.key(doc, key)
    for k, item in node.items():
        yield str(k), item, here.key(node, k)
