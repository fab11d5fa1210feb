"""Entities to plain data (TOML blobs, YAML, JSON) and back.

Encoding is deterministic: fields in dataclass order, `None`/empty/False left out, and so is a field
added after format 1 (marked with `model.since_v1`) while it holds its default: a board written
before the field existed must replay to the same bytes. Determinism is
what lets `verify` and the server hook require that replaying an op reproduces the recorded tree
byte for byte. Decoding is strict (unknown keys, wrong types are refused) because a blob may come
from someone else's push.
"""
from __future__ import annotations

import dataclasses
import operator
import re
import typing
from enum import Enum
from typing import Any, Callable, TypeVar

from gitliza.core import model, tomlfast
from gitliza.errors import InconsistentState

T = TypeVar("T")

# Python field name -> key on disk (the spec's YAML uses the keyword `for`).
_RENAMES: dict[tuple[type, str], str] = {(model.HumanNote, "for_task"): "for"}

Enc = Callable[[Any], Any]
Dec = Callable[[Any, str], Any]


def _fail(where: str, msg: str) -> typing.NoReturn:
    raise InconsistentState(f"malformed entity at {where}: {msg}")


def _same(v: Any) -> Any:
    return v


def _scalar(kind: type) -> tuple[Enc, Dec]:
    def dec(v: Any, where: str) -> Any:
        # bool is an int subclass in Python; a TOML `true` must not pass as a priority.
        if type(v) is not kind:
            _fail(where, f"expected {kind.__name__}, got {type(v).__name__}")
        return v
    return _same, dec


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
        return _same, dec_any
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


# Per class: a getter of all field values at once, and per field (key, encoder or None when the
# value is stored as it is, whether the value is a nested entity or a tuple of them). Every transition
# encodes what it changes and verify re-encodes every commit's changes: fetching the fields in one C
# call and skipping identity encoders halves encode.
_Field = tuple[str, Enc | None, bool, Any]  # (key, encoder, nested, default to leave out)
_KEEP = object()  # a field that is written whatever its value (other than None/False/())
_Encoder = tuple[Callable[[Any], tuple[Any, ...]], tuple[_Field, ...]]
_ENCODERS: dict[type, _Encoder] = {}


def _nested(tp: Any) -> bool:
    """Whether a field holds an entity or a tuple of them (whose encoders are then made too: the
    writer recognises an entity by its type having an encoder)."""
    args = [a for a in typing.get_args(tp) if a is not type(None) and a is not Ellipsis]
    if typing.get_origin(tp) is not None and len(args) == 1:  # X | None, tuple[X, ...]
        tp = args[0]
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if tp not in _ENCODERS:
            _encoder(tp)
        return True
    return False


def _encoder(cls: type) -> _Encoder:
    spec = _spec(cls)
    hints = typing.get_type_hints(cls)
    attrs = [attr for attr, *_rest in spec]
    getter: Callable[[Any], tuple[Any, ...]]
    if len(attrs) > 1:
        getter = operator.attrgetter(*attrs)
    else:  # attrgetter returns a bare value for one attribute
        getter = lambda e: tuple(getattr(e, a) for a in attrs)  # noqa: E731
    omit = {f.name: f.default for f in dataclasses.fields(cls) if f.metadata.get(model.SINCE_V1)}
    found = _ENCODERS[cls] = (getter, tuple(
        (key, None if enc is _same else enc, _nested(hints[attr]), omit.get(attr, _KEEP))
        for attr, key, enc, _dec, _req in spec))
    return found


def encode(entity: Any) -> dict[str, Any]:
    """The entity as a table: fields in dataclass order, None, False and () left out."""
    getter, fields = _ENCODERS.get(type(entity)) or _encoder(type(entity))
    out: dict[str, Any] = {}
    for (key, enc, _nest, dflt), v in zip(fields, getter(entity)):
        if v is None or v is False or v == () or (dflt is not _KEEP and v == dflt):
            continue
        out[key] = v if enc is None else enc(v)
    return out


def _shallow(entity: Any) -> dict[str, Any]:
    """`encode` one level deep: nested entities are left as they are, for the TOML writer (which
    caches their rendering)."""
    getter, fields = _ENCODERS.get(type(entity)) or _encoder(type(entity))
    out: dict[str, Any] = {}
    for (key, enc, nest, dflt), v in zip(fields, getter(entity)):
        if v is None or v is False or v == () or (dflt is not _KEEP and v == dflt):
            continue
        out[key] = v if enc is None or nest else enc(v)
    return out


# Per class, for decoding: by key on disk (attr, the scalar type a value may have as it is or None,
# decoder), the attrs that are required, and the rows in field order for the error path. Reading
# a board decodes every entity it touches (status on a 1,000-task board: ~10,000 fields out of
# ~37,000 declared), so decoding walks the keys present, checks a plain scalar inline, and builds
# the "where" text only an error needs only then.
_Row = tuple[str, str, type | None, Dec, bool]
_Decoder = tuple[dict[str, tuple[str, type | None, Dec]], frozenset[str], tuple[_Row, ...],
                 frozenset[str]]
_DECODERS: dict[type, _Decoder] = {}


def _scalar_kind(tp: Any) -> type | None:
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if typing.get_origin(tp) in (typing.Union, getattr(__import__("types"), "UnionType")) \
            and len(args) == 1:
        tp = args[0]
    return tp if tp in (str, int, bool) else None


def _decoder(cls: type) -> _Decoder:
    hints = typing.get_type_hints(cls)
    rows = tuple((attr, key, _scalar_kind(hints[attr]), dec, required)
                 for attr, key, _enc, dec, required in _spec(cls))
    found = _DECODERS[cls] = ({key: (attr, kind, dec) for attr, key, kind, dec, _r in rows},
                              frozenset(r[0] for r in rows if r[4]), rows,
                              frozenset(r[1] for r in rows))
    return found


def _decode(cls: type[T], data: Any, where: str) -> T:
    if not isinstance(data, dict):
        _fail(where, "expected a table")
    by_key, required, rows, known = _DECODERS.get(cls) or _decoder(cls)
    kwargs: dict[str, Any] = {}
    try:
        for key, v in data.items():
            attr, kind, dec = by_key[key]
            kwargs[attr] = v if type(v) is kind else dec(v, f"{where}.{key}")
    except (KeyError, InconsistentState):
        _refuse(rows, known, data, where)
    if not required <= kwargs.keys():
        _refuse(rows, known, data, where)
    return cls(**kwargs)


def _refuse(rows: tuple[_Row, ...], known: frozenset[str], data: dict[str, Any],
            where: str) -> typing.NoReturn:
    """The first problem in field order (a bad value, a missing field), else the unknown keys."""
    for _attr, key, kind, dec, required in rows:
        if key in data:
            if type(data[key]) is not kind:
                dec(data[key], f"{where}.{key}")
        elif required:
            _fail(where, f"missing field {key!r}")
    _fail(where, f"unknown field(s) {', '.join(sorted(set(data) - known))}")


def decode(cls: type[T], data: Any, where: str = "") -> T:
    return _decode(cls, data, where or cls.__name__)


def dumps(entity: Any) -> bytes:
    try:
        return _render(entity).encode()
    except _Unsupported:  # a value shape the fast writer does not know: tomli-w decides
        import tomli_w  # imported only then: most processes never need it
        return tomli_w.dumps(encode(entity)).encode()


def table(blob: bytes, where: str) -> dict[str, Any]:
    """A blob's TOML table (what `decode` turns into an entity)."""
    try:
        text = blob.decode()
    except UnicodeDecodeError as e:
        _fail(where, f"not TOML: {e}")
    data = tomlfast.loads(text)
    if data is None:  # not in the canonical layout: the general reader decides
        import tomllib
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            _fail(where, f"not TOML: {e}")
    return data


def loads(cls: type[T], blob: bytes, where: str = "") -> T:
    return decode(cls, table(blob, where or cls.__name__), where)


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
    if t in _ENCODERS:
        return _item(v)[0]
    if isinstance(v, str):  # a str subclass (an enum member) renders as its text
        return _string(v)
    raise _Unsupported()


def _inline_table(t: dict[str, Any]) -> str:
    if not t:
        return "{}"
    # tomli-w renders the values of an inline table at nesting level 0, whatever its own level.
    return "{ " + ", ".join([_key(k) + " = " + _literal(v, 0) for k, v in t.items()]) + " }"


# Renderings of nested entities (history entries...) by identity: a task carries the same entry
# objects from one version to the next (dataclasses.replace copies references), so each entry is
# rendered about once. The entity itself is held in the entry, so its id cannot be reused while
# cached; entities are frozen, so the rendering cannot go stale. Bounded by dropping all when full.
_ITEMS: dict[int, tuple[Any, str, str | None]] = {}
_ITEMS_MAX = 20_000


def _item(entity: Any) -> tuple[str, str | None]:
    """A nested entity as an inline table, and as the lines of its `[[name]]` table (None when it
    has sub-tables: its header names them, so those lines depend on where it is)."""
    found = _ITEMS.get(id(entity))
    if found is not None and found[0] is entity:
        return found[1], found[2]
    table = _shallow(entity)
    inline = _inline_table(table)
    lines, tables = _split(table)
    flat = None if tables else "".join(lines)
    if len(_ITEMS) >= _ITEMS_MAX:
        _ITEMS.clear()
    _ITEMS[id(entity)] = (entity, inline, flat)
    return inline, flat


def _render(entity: Any) -> str:
    """The entity as tomli-w renders `encode(entity)`; raises _Unsupported for other shapes."""
    out: list[str] = []
    _table(_shallow(entity), "", False, out)
    return "".join(out)


def _toml(table: dict[str, Any]) -> str:
    """A plain table (dicts, lists, scalars) as tomli-w renders it."""
    out: list[str] = []
    _table(table, "", False, out)
    return "".join(out)


_Sub = tuple[str, Any, bool]  # (key, a dict or an entity, whether it is an item of an array)


def _split(table: dict[str, Any]) -> tuple[list[str], list[_Sub]]:
    """A table's rendered "key = value" lines, and its sub-tables in order (tomli-w writes the
    lines first)."""
    lines: list[str] = []
    tables: list[_Sub] = []
    for k, v in table.items():
        t = type(v)
        if t is dict or t in _ENCODERS:
            tables.append((k, v, False))
        elif (t is list or t is tuple) and v and \
                all(type(x) is dict or type(x) in _ENCODERS for x in v):
            # An array of tables stays inline only if every item fits on its line; the items are
            # rendered once, for the test and for the output.
            items = [_INDENT + (_inline_table(x) if type(x) is dict else _item(x)[0]) + ","
                     for x in v]
            if all(len(i) <= _MAX_LINE and "\n" not in i for i in items):
                lines.append(_key(k) + " = [\n" + "\n".join(items) + "\n]\n")
            else:
                tables.extend((k, x, True) for x in v)
        else:
            lines.append(_key(k) + " = " + _literal(v, 0) + "\n")
    return lines, tables


def _table(table: dict[str, Any], name: str, in_array: bool, out: list[str]) -> None:
    lines, tables = _split(table)
    written = False
    if in_array or name and (lines or not tables):
        written = True
        out.append(f"[[{name}]]\n" if in_array else f"[{name}]\n")
    if lines:
        written = True
        out.extend(lines)
    for k, t, in_arr in tables:
        if written:
            out.append("\n")
        written = True
        part = _key(k)
        sub = f"{name}.{part}" if name else part
        if type(t) is dict:
            _table(t, sub, in_arr, out)
            continue
        flat = _item(t)[1] if in_arr else None
        if flat is not None:  # an item of an array of tables, without sub-tables of its own
            out.append(f"[[{sub}]]\n")
            out.append(flat)
        else:
            _table(_shallow(t), sub, in_arr, out)
