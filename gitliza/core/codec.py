"""Entities to plain data (TOML blobs, YAML, JSON) and back.

Encoding is deterministic: fields in dataclass order, `None`/empty/False left out. Determinism is
what lets `verify` and the server hook require that replaying an op reproduces the recorded tree
byte for byte. Decoding is strict (unknown keys, wrong types are refused) because a blob may come
from someone else's push.
"""
from __future__ import annotations

import dataclasses
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
    return tomli_w.dumps(encode(entity)).encode()


def loads(cls: type[T], blob: bytes, where: str = "") -> T:
    try:
        data = tomllib.loads(blob.decode())
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        _fail(where or cls.__name__, f"not TOML: {e}")
    return decode(cls, data, where)
