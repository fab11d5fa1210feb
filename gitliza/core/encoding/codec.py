"""Entities to plain data (tables of str, int, bool, lists and tables, for TOML, YAML and JSON)
and back; the TOML bytes themselves are tomlblob.py's.

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
import sys
import typing
from enum import Enum
from typing import Any, Callable, TypeVar

from gitliza.core import model
from gitliza.errors import InconsistentState

T = TypeVar("T")

# Python field name -> key on disk (the spec's YAML uses the keyword `for`).
_RENAMES: dict[tuple[type, str], str] = {(model.HumanNote, "for_task"): "for"}

Enc = Callable[[Any], Any]
Dec = Callable[[Any, str], Any]


def malformed(where: str, msg: str) -> typing.NoReturn:
    """Refuse a blob or table that is not a well-formed entity (it may come from someone's push)."""
    raise InconsistentState(f"malformed entity at {where}: {msg}")


def _same(v: Any) -> Any:
    return v


def _scalar(kind: type) -> tuple[Enc, Dec]:
    def dec(v: Any, where: str) -> Any:
        # bool is an int subclass in Python; a TOML `true` must not pass as a priority.
        if type(v) is not kind:
            malformed(where, f"expected {kind.__name__}, got {type(v).__name__}")
        return v
    return _same, dec


def _enum(kind: type[Enum]) -> tuple[Enc, Dec]:
    members = kind._value2member_map_  # a dict look-up: ~10x cheaper than calling the Enum

    def dec(v: Any, where: str) -> Any:
        try:
            return members[v]
        except (KeyError, TypeError):
            pass
        try:
            return kind(v)
        except ValueError:
            malformed(where, f"{v!r} is not a {kind.__name__}")
    return (lambda v: kind(v).value), dec


_CODECS: dict[Any, tuple[Enc, Dec]] = {}


def _codec_for(tp: Any) -> tuple[Enc, Dec]:
    """The (encoder, decoder) of a field's type; one pair per distinct type, shared by every field
    of that type (a `status` start asked 250 times for ~40 types, each through `typing`'s
    introspection)."""
    found = _CODECS.get(tp)
    if found is None:
        found = _CODECS[tp] = _make_codec(tp)
    return found


def _make_codec(tp: Any) -> tuple[Enc, Dec]:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType")):
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return _codec_for(inner[0])
        # str | int | bool (anomaly detail values)
        def dec_any(v: Any, where: str) -> Any:
            if not isinstance(v, (str, int, bool)):
                malformed(where, f"unsupported value {v!r}")
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
                    malformed(where, "expected a list")
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
            malformed(where, "expected a table")
        for k, x in v.items():
            if not isinstance(x, (str, int, bool)):
                malformed(f"{where}.{k}", f"unsupported value {x!r}")
        return tuple(v.items())
    return (lambda v: dict(v)), dec


_HINTS: dict[type, dict[str, Any]] = {}
_EVALUATED: dict[tuple[str, str], Any] = {}


def type_hints(cls: type) -> dict[str, Any]:
    """`typing.get_type_hints(cls)` for a dataclass whose annotations are strings (`from
    __future__ import annotations`), with each distinct annotation evaluated once per module.
    get_type_hints compiles and evaluates every field's string anew on every call, and the codec
    asks for each class three times: ~200 compiles per CLI start, for ~30 distinct strings."""
    found = _HINTS.get(cls)
    if found is None:
        found = {}
        for klass in reversed(cls.__mro__):
            module = sys.modules.get(klass.__module__)
            names = vars(module) if module is not None else {}
            for name, ann in klass.__dict__.get("__annotations__", {}).items():
                if isinstance(ann, str):
                    key = (klass.__module__, ann)
                    if key not in _EVALUATED:
                        _EVALUATED[key] = eval(ann, dict(names), dict(vars(klass)))  # noqa: S307
                    ann = _EVALUATED[key]
                found[name] = ann
        _HINTS[cls] = found
    return found


_Spec = tuple[tuple[str, str, Enc, Dec, bool], ...]  # (attr, key, enc, dec, required)
_SPECS: dict[type, _Spec] = {}


def _spec(cls: type) -> _Spec:
    spec = _SPECS.get(cls)
    if spec is None:
        hints = type_hints(cls)
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
# Public for tomlblob.py's writer, which tells an entity from plain data by its type being here.
ENCODERS: dict[type, _Encoder] = {}


def _nested(tp: Any) -> bool:
    """Whether a field holds an entity or a tuple of them (whose encoders are then made too: the
    TOML writer, tomlblob.py, recognises an entity by its type having an encoder)."""
    args = [a for a in typing.get_args(tp) if a is not type(None) and a is not Ellipsis]
    if typing.get_origin(tp) is not None and len(args) == 1:  # X | None, tuple[X, ...]
        tp = args[0]
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if tp not in ENCODERS:
            _encoder(tp)
        return True
    return False


def _encoder(cls: type) -> _Encoder:
    spec = _spec(cls)
    hints = type_hints(cls)
    attrs = [attr for attr, *_rest in spec]
    getter: Callable[[Any], tuple[Any, ...]]
    if len(attrs) > 1:
        getter = operator.attrgetter(*attrs)
    else:  # attrgetter returns a bare value for one attribute
        getter = lambda e: tuple(getattr(e, a) for a in attrs)  # noqa: E731
    omit = {f.name: f.default for f in dataclasses.fields(cls) if f.metadata.get(model.SINCE_V1)}
    found = ENCODERS[cls] = (getter, tuple(
        (key, None if enc is _same else enc, _nested(hints[attr]), omit.get(attr, _KEEP))
        for attr, key, enc, _dec, _req in spec))
    return found


def encode(entity: Any) -> dict[str, Any]:
    """The entity as a table: fields in dataclass order, None, False and () left out."""
    getter, fields = ENCODERS.get(type(entity)) or _encoder(type(entity))
    out: dict[str, Any] = {}
    for (key, enc, _nest, dflt), v in zip(fields, getter(entity)):
        if v is None or v is False or v == () or (dflt is not _KEEP and v == dflt):
            continue
        out[key] = v if enc is None else enc(v)
    return out


def shallow(entity: Any) -> dict[str, Any]:
    """`encode` one level deep: nested entities are left as they are, for the TOML writer
    (tomlblob.py, which caches their rendering)."""
    getter, fields = ENCODERS.get(type(entity)) or _encoder(type(entity))
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
                 frozenset[str], Callable[[dict[str, Any]], Any]]
_DECODERS: dict[type, _Decoder] = {}


def _maker(cls: type) -> Callable[[dict[str, Any]], Any]:
    """A constructor from checked keyword values, for decoding. A frozen dataclass's `__init__`
    parses every keyword and sets each of its fields through `object.__setattr__` (a task has
    48): most of decoding a task. For a slotted class on `object` without `__post_init__`, the
    same object is made on its twin (`_twin`): the defaults stored as constants and the present
    values set, attribute stores that the interpreter specialises (a frozen class refuses them),
    then the object given its class: ~1/3 of the time of setting each slot through its
    descriptor, ~1/5 of `__init__`'s. Anything else is built by its `__init__`."""
    fields = dataclasses.fields(cls)
    twin = None
    if "__slots__" in cls.__dict__ and not hasattr(cls, "__post_init__") \
            and all(f.init for f in fields):
        twin = _twin(cls)
    if twin is None:
        return lambda kwargs: cls(**kwargs)
    env: dict[str, Any] = {"new": object.__new__, "Twin": twin, "cls": cls, "put": setattr,
                           "__name__": __name__}
    body = ["def make(kw):", " o = new(Twin)"]
    for i, f in enumerate(fields):
        if f.default is not dataclasses.MISSING:
            env[f"D{i}"] = f.default
            body.append(f" o.{f.name} = D{i}")
        elif f.default_factory is not dataclasses.MISSING:
            env[f"F{i}"] = f.default_factory
            body.append(f" if {f.name!r} not in kw:\n  o.{f.name} = F{i}()")
        # required: present in kw (the caller checked), set below
    body += [" for k, v in kw.items():", "  put(o, k, v)", " o.__class__ = cls", " return o"]
    # Compiling this costs more than decoding a thousand tasks with it. The CLI gives `dataclasses`
    # an `exec` that keeps compiled code between processes, keyed by the source text
    # (gitliza/cli/classcache.py); the text here depends only on the class, so it goes the same way.
    run = getattr(dataclasses, "exec", exec)
    run("\n".join(body), env)  # noqa: S102 - our own field names, no outside text
    made: Callable[[dict[str, Any]], Any] = env["make"]
    return made


def _twin(cls: type) -> type | None:
    """A mutable class with `cls`'s layout (its slots, on `object`), whose objects can become
    `cls` objects by `__class__` assignment; None when Python refuses the assignment."""
    if cls.__bases__ != (object,):
        return None
    twin = type(f"{cls.__name__}Decoding", (object,), {"__slots__": cls.__dict__["__slots__"]})
    probe: Any = object.__new__(twin)
    try:
        probe.__class__ = cls
    except TypeError:
        return None
    return twin


def _scalar_kind(tp: Any) -> type | None:
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if typing.get_origin(tp) in (typing.Union, getattr(__import__("types"), "UnionType")) \
            and len(args) == 1:
        tp = args[0]
    return tp if tp in (str, int, bool) else None


def _decoder(cls: type) -> _Decoder:
    hints = type_hints(cls)
    rows = tuple((attr, key, _scalar_kind(hints[attr]), dec, required)
                 for attr, key, _enc, dec, required in _spec(cls))
    found = _DECODERS[cls] = ({key: (attr, kind, dec) for attr, key, kind, dec, _r in rows},
                              frozenset(r[0] for r in rows if r[4]), rows,
                              frozenset(r[1] for r in rows), _maker(cls))
    return found


def _decode(cls: type[T], data: Any, where: str) -> T:
    if not isinstance(data, dict):
        malformed(where, "expected a table")
    by_key, required, rows, known, make = _DECODERS.get(cls) or _decoder(cls)
    kwargs: dict[str, Any] = {}
    try:
        for key, v in data.items():
            attr, kind, dec = by_key[key]
            kwargs[attr] = v if type(v) is kind else dec(v, f"{where}.{key}")
    except (KeyError, InconsistentState):
        _refuse(rows, known, data, where)
    if not required <= kwargs.keys():
        _refuse(rows, known, data, where)
    made: T = make(kwargs)
    return made


def _refuse(rows: tuple[_Row, ...], known: frozenset[str], data: dict[str, Any],
            where: str) -> typing.NoReturn:
    """The first problem in field order (a bad value, a missing field), else the unknown keys."""
    for _attr, key, kind, dec, required in rows:
        if key in data:
            if type(data[key]) is not kind:
                dec(data[key], f"{where}.{key}")
        elif required:
            malformed(where, f"missing field {key!r}")
    malformed(where, f"unknown field(s) {', '.join(sorted(set(data) - known))}")


def decode(cls: type[T], data: Any, where: str = "") -> T:
    return _decode(cls, data, where or cls.__name__)
