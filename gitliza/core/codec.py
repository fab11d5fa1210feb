"""Entities to plain data (TOML blobs, YAML, JSON) and back.

Encoding is deterministic: fields in dataclass order, `None`/empty/False left out. Determinism is
what lets `verify` and the server hook require that replaying an op reproduces the recorded tree
byte for byte. Decoding is strict (unknown keys, wrong types are refused) because a blob may come
from someone else's push.
"""
from __future__ import annotations

import dataclasses
import re
import tomllib
import typing
from enum import Enum
from typing import Any, Callable, TypeVar

import tomli_w

from gitliza.core import model
from gitliza.errors import InconsistentState

T = TypeVar("T")

# Python field name -> key on disk (the spec's YAML uses the keyword `for`).
_RENAMES: dict[tuple[type, str], str] = {(model.HumanNote, "for_task"): "for"}

Enc = Callable[[Any], Any]
Dec = Callable[[Any, str], Any]


def _fail(where: str, msg: str) -> typing.NoReturn:
    raise InconsistentState(f"malformed entity at {where}: {msg}")


def _scalar(kind: type) -> tuple[Enc, Dec]:
    def dec(v: Any, where: str) -> Any:
        # bool is an int subclass in Python; a TOML `true` must not pass as a priority.
        if type(v) is not kind:
            _fail(where, f"expected {kind.__name__}, got {type(v).__name__}")
        return v
    return (lambda v: v), dec


def _enum(kind: type[Enum]) -> tuple[Enc, Dec]:
    def dec(v: Any, where: str) -> Any:
        try:
            return kind(v)
        except ValueError:
            _fail(where, f"{v!r} is not a {kind.__name__}")
    return (lambda v: kind(v).value), dec


def _codec_for(tp: Any) -> tuple[Enc, Dec]:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType")):
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return _codec_for(inner[0])
        # str | int | bool (anomaly detail values)
        def dec_any(v: Any, where: str) -> Any:
            if not isinstance(v, (str, int, bool)):
                _fail(where, f"unsupported value {v!r}")
            return v
        return (lambda v: v), dec_any
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            item = args[0]
            if typing.get_origin(item) is tuple:  # ordered mapping, e.g. Anomaly.details
                return _pairs_codec()
            ienc, idec = _codec_for(item)

            def dec_seq(v: Any, where: str) -> Any:
                if not isinstance(v, list):
                    _fail(where, "expected a list")
                return tuple(idec(x, f"{where}[{i}]") for i, x in enumerate(v))
            return (lambda v: [ienc(x) for x in v]), dec_seq
    if isinstance(tp, type) and issubclass(tp, Enum):
        return _enum(tp)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return (lambda v: encode(v)), (lambda v, where: _decode(tp, v, where))
    if tp in (str, int, bool):
        return _scalar(tp)
    raise TypeError(f"no codec for {tp!r}")


def _pairs_codec() -> tuple[Enc, Dec]:
    def dec(v: Any, where: str) -> Any:
        if not isinstance(v, dict):
            _fail(where, "expected a table")
        for k, x in v.items():
            if not isinstance(x, (str, int, bool)):
                _fail(f"{where}.{k}", f"unsupported value {x!r}")
        return tuple(v.items())
    return (lambda v: dict(v)), dec


_Spec = tuple[tuple[str, str, Enc, Dec, bool], ...]  # (attr, key, enc, dec, required)
_SPECS: dict[type, _Spec] = {}


def _spec(cls: type) -> _Spec:
    spec = _SPECS.get(cls)
    if spec is None:
        hints = typing.get_type_hints(cls)
        rows = []
        for f in dataclasses.fields(cls):
            enc, dec = _codec_for(hints[f.name])
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            rows.append((f.name, _RENAMES.get((cls, f.name), f.name), enc, dec, required))
        spec = _SPECS[cls] = tuple(rows)
    return spec


def _omitted(v: Any) -> bool:
    return v is None or v is False or v == ()


def encode(entity: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for attr, key, enc, _dec, _req in _spec(type(entity)):
        v = getattr(entity, attr)
        if not _omitted(v):
            out[key] = enc(v)
    return out


def _decode(cls: type[T], data: Any, where: str) -> T:
    if not isinstance(data, dict):
        _fail(where, "expected a table")
    kwargs: dict[str, Any] = {}
    keys = set(data)
    for attr, key, _enc, dec, required in _spec(cls):
        if key in data:
            kwargs[attr] = dec(data[key], f"{where}.{key}")
            keys.discard(key)
        elif required:
            _fail(where, f"missing field {key!r}")
    if keys:
        _fail(where, f"unknown field(s) {', '.join(sorted(keys))}")
    return cls(**kwargs)


def decode(cls: type[T], data: Any, where: str = "") -> T:
    return _decode(cls, data, where or cls.__name__)


def dumps(entity: Any) -> bytes:
    table = encode(entity)
    try:
        return _toml(table).encode()
    except _Unsupported:  # a value shape the fast writer does not know: tomli-w decides
        return tomli_w.dumps(table).encode()


# -- TOML writer ----------------------------------------------------------------------------------
# Every transition encodes the entities it changes, and `verify` re-encodes them for every commit it
# replays; tomli-w's generic writer was ~40% of verify's time. This writer renders the shapes
# `encode` produces (str, int, bool, lists, dicts) *byte for byte as tomli-w 1.x does*, because
# existing histories must replay to the same blob ids: the same table layout (literals first, then
# sub-tables and arrays of tables, a blank line between tables), the same array layout (one item a
# line, indented four spaces, trailing comma), the same choice between an inline array of inline
# tables and `[[name]]` tables (inline when every item renders in at most 100 characters with the
# indent and comma), the same string escapes. Anything else raises _Unsupported and the whole
# entity goes to tomli-w, so an unforeseen shape is slower, never different.
# tests/core/test_codec.py compares both writers on random entities of every type.

class _Unsupported(Exception):
    pass


_INDENT = "    "
_MAX_LINE = 100
# tomli-w escapes '"', '\\' and the ASCII control characters except tab.
_ESCAPED = re.compile(r'[\x00-\x08\x0a-\x1f\x7f"\\]')
_COMPACT = {"\b": "\\b", "\n": "\\n", "\f": "\\f", "\r": "\\r", '"': '\\"', "\\": "\\\\"}
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    return _COMPACT.get(c) or "\\u%04x" % ord(c)


def _string(s: str) -> str:
    if _ESCAPED.search(s) is None:
        return '"' + s + '"'
    return '"' + _ESCAPED.sub(_escape, s) + '"'


_KEYS: dict[str, str] = {}  # rendered keys: nearly all are the few dozen field names


def _key(k: str) -> str:
    r = _KEYS.get(k)
    if r is None:
        if type(k) is not str:
            raise _Unsupported()
        r = k if _BARE_KEY.fullmatch(k) else _string(k)
        if len(_KEYS) < 4096:
            _KEYS[k] = r
    return r


def _literal(v: Any, nest: int) -> str:
    t = type(v)
    if t is str:
        return '"' + v + '"' if _ESCAPED.search(v) is None else _string(v)
    if t is bool:
        return "true" if v else "false"
    if t is int:
        return str(v)
    if t is list or t is tuple:
        if not v:
            return "[]"
        indent = _INDENT * (nest + 1)
        return "[\n" + ",\n".join([indent + _literal(x, nest + 1) for x in v]) + \
            ",\n" + _INDENT * nest + "]"
    if t is dict:
        return _inline_table(v)
    if isinstance(v, str):  # a str subclass (an enum member) renders as its text
        return _string(v)
    raise _Unsupported()


def _inline_table(t: dict[str, Any]) -> str:
    if not t:
        return "{}"
    # tomli-w renders the values of an inline table at nesting level 0, whatever its own level.
    return "{ " + ", ".join([_key(k) + " = " + _literal(v, 0) for k, v in t.items()]) + " }"


def _toml(table: dict[str, Any]) -> str:
    out: list[str] = []
    _table(table, "", False, out)
    return "".join(out)


def _table(table: dict[str, Any], name: str, in_array: bool, out: list[str]) -> None:
    literals: list[str] = []  # rendered "key = value" lines
    tables: list[tuple[str, dict[str, Any], bool]] = []
    for k, v in table.items():
        if type(v) is dict:
            tables.append((k, v, False))
        elif type(v) in (list, tuple) and v and all(type(t) is dict for t in v):
            # An array of tables stays inline only if every item fits on its line; the items are
            # rendered once, for the test and for the output.
            items = [_INDENT + _inline_table(t) + "," for t in v]
            if all(len(i) <= _MAX_LINE and "\n" not in i for i in items):
                literals.append(_key(k) + " = [\n" + "\n".join(items) + "\n]\n")
            else:
                tables.extend((k, t, True) for t in v)
        else:
            literals.append(_key(k) + " = " + _literal(v, 0) + "\n")
    written = False
    if in_array or name and (literals or not tables):
        written = True
        out.append(f"[[{name}]]\n" if in_array else f"[{name}]\n")
    if literals:
        written = True
        out.extend(literals)
    for k, t, in_arr in tables:
        if written:
            out.append("\n")
        written = True
        part = _key(k)
        _table(t, f"{name}.{part}" if name else part, in_arr, out)


def loads(cls: type[T], blob: bytes, where: str = "") -> T:
    try:
        data = tomllib.loads(blob.decode())
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        _fail(where or cls.__name__, f"not TOML: {e}")
    return decode(cls, data, where)
