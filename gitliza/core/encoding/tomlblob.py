"""Entities as the TOML blobs of a state tree: `dumps` writes one, `loads` (and `table`) read one.

Reading tries tomlfast.py (the writer's own layout, fast) and falls back to tomllib. Writing uses
this module's own TOML writer, which renders what `codec.encode` produces byte for byte as
tomli-w 1.x does, several times faster (below); any other shape goes to tomli-w itself.
"""
from __future__ import annotations

import re
from typing import Any, TypeVar

from gitliza.core.encoding import tomlfast
from gitliza.core.encoding.codec import ENCODERS, decode, encode, malformed, shallow
from gitliza.core.encoding.lazyre import lazy

T = TypeVar("T")


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
        malformed(where, f"not TOML: {e}")
    data = tomlfast.loads(text)
    if data is None:  # not in the canonical layout: the general reader decides
        import tomllib
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            malformed(where, f"not TOML: {e}")
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
# tests/core/test_tomlblob.py compares both writers on random entities of every type.

class _Unsupported(Exception):
    pass


_INDENT = "    "
_MAX_LINE = 100
# tomli-w escapes '"', '\\' and the ASCII control characters except tab.
_ESCAPED = lazy(r'[\x00-\x08\x0a-\x1f\x7f"\\]')
_COMPACT = {"\b": "\\b", "\n": "\\n", "\f": "\\f", "\r": "\\r", '"': '\\"', "\\": "\\\\"}
_BARE_KEY = lazy(r"[A-Za-z0-9_-]+")


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
    if t in ENCODERS:
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
# cached; entities are frozen, so the rendering cannot go stale. Two generations, as
# gitliza/git/memo.py's: what is rendered again (the history of a task in flight) stays, the
# entries of tasks no longer written go. (One dict emptied at 20,000 entries held the history of
# every task a long-lived process had written: ~0.65 KB per entry, 15 KB per task a supervisor
# wrote, ~13 MB before its first emptying.)
_ITEMS: dict[int, tuple[Any, str, str | None]] = {}  # the young generation
_ITEMS_OLD: dict[int, tuple[Any, str, str | None]] = {}
_ITEMS_MAX = 512  # entries per generation: a few tasks' histories


def _item(entity: Any) -> tuple[str, str | None]:
    """A nested entity as an inline table, and as the lines of its `[[name]]` table (None when it
    has sub-tables: its header names them, so those lines depend on where it is)."""
    key = id(entity)
    found = _ITEMS.get(key)
    if found is None:
        found = _ITEMS_OLD.pop(key, None)
        if found is not None and found[0] is entity:
            _remember(key, found)  # in use again: back to the young generation
    if found is not None and found[0] is entity:
        return found[1], found[2]
    table = shallow(entity)
    inline = _inline_table(table)
    lines, tables = _split(table)
    flat = None if tables else "".join(lines)
    _remember(key, (entity, inline, flat))
    return inline, flat


def _remember(key: int, value: tuple[Any, str, str | None]) -> None:
    global _ITEMS, _ITEMS_OLD
    if len(_ITEMS) >= _ITEMS_MAX:
        _ITEMS_OLD, _ITEMS = _ITEMS, {}
    _ITEMS[key] = value


def _render(entity: Any) -> str:
    """The entity as tomli-w renders `encode(entity)`; raises _Unsupported for other shapes."""
    out: list[str] = []
    _table(shallow(entity), "", False, out)
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
        if t is dict or t in ENCODERS:
            tables.append((k, v, False))
        elif (t is list or t is tuple) and v and \
                all(type(x) is dict or type(x) in ENCODERS for x in v):
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
            _table(shallow(t), sub, in_arr, out)
