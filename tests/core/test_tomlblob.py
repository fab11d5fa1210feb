"""tomlblob's TOML writer is tomli-w, byte for byte: on every entity, and on shapes no entity has
yet."""
from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

import pytest
import tomli_w
from hypothesis import given, settings
from hypothesis import strategies as st

from gitliza.core.encoding import codec, tomlblob
from gitliza.core.board import ENTITY_TYPES

from tests.core.test_codec import TEXT, strategy


# -- the fast TOML writer is tomli-w, byte for byte -----------------------------------------------
# Blob ids in existing histories depend on the exact bytes, so tomlblob's own writer must render
# every entity exactly as tomli-w does. Strings mix plain text with the characters tomli-w escapes
# and lengths either side of its 100-column limit for inline tables (arrays of tables switch
# layout).
ESCAPES = st.sampled_from(['"', "\\", "\n", "\r", "\t", "\b", "\f", "\x00", "\x1f", "\x7f", "é",
                           "\u2028", " ", "'", "#", "="])
MIXED = st.lists(st.one_of(TEXT, ESCAPES), max_size=8).map("".join)


def _shapes(tp: Any) -> st.SearchStrategy[Any]:
    """`strategy`, with strings that exercise escapes and line lengths, and arbitrary detail keys."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is str:
        return st.one_of(TEXT, MIXED, st.text(max_size=120))
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        base = st.one_of(*[_shapes(a) for a in inner])
        return st.one_of(st.none(), base) if type(None) in args else base
    if origin is tuple and typing.get_origin(args[0]) is tuple:
        pair = st.tuples(st.one_of(st.text("abcdefgh_", min_size=1, max_size=8), MIXED),
                         st.one_of(MIXED, st.integers(-10**12, 10**12), st.booleans()))
        return st.lists(pair, max_size=4, unique_by=lambda p: p[0]).map(tuple)
    if origin is tuple:
        return st.lists(_shapes(args[0]), max_size=4).map(tuple)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        return st.builds(tp, **{f.name: _shapes(hints[f.name]) for f in dataclasses.fields(tp)})
    return strategy(tp)


@pytest.mark.parametrize("coll", sorted(ENTITY_TYPES))
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_writer_is_tomli_w_byte_for_byte(coll: str, data: st.DataObject) -> None:
    entity = data.draw(_shapes(ENTITY_TYPES[coll]))
    try:
        expected = tomli_w.dumps(codec.encode(entity)).encode()
    except UnicodeEncodeError:  # lone surrogates: not UTF-8, refused by both writers alike
        with pytest.raises(UnicodeEncodeError):
            tomlblob.dumps(entity)
        return
    assert tomlblob._render(entity).encode() == expected  # _render never falls back to tomli-w
    assert tomlblob._render(entity).encode() == expected  # again, from the cache of nested entities
    assert tomlblob.dumps(entity) == expected
    assert tomlblob.loads(ENTITY_TYPES[coll], expected) == entity


@settings(max_examples=300, deadline=None)
@given(value=st.recursive(
    st.one_of(MIXED, st.integers(), st.booleans()),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.one_of(MIXED, st.text("ab-_1", min_size=1)),
                                            inner, max_size=3)),
    max_leaves=12))
def test_writer_is_tomli_w_on_any_nesting(value: Any) -> None:
    """Shapes no entity has today (tables in arrays in tables...), so that a new field cannot make
    the two writers part ways silently."""
    table = {"k": value}
    try:
        expected = tomli_w.dumps(table)
    except (TypeError, ValueError):
        return
    assert tomlblob._toml(table) == expected


@dataclasses.dataclass(frozen=True)
class Leaf:
    a: str
    b: int | None = None


@dataclasses.dataclass(frozen=True)
class Mid:
    name: str
    leaf: Leaf | None = None
    leaves: tuple[Leaf, ...] = ()
    tags: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Top:
    id: str
    mids: tuple[Mid, ...] = ()
    mid: Mid | None = None
    n: int = 0


@settings(max_examples=200, deadline=None)
@given(top=_shapes(Top))
def test_writer_is_tomli_w_on_nested_entities(top: Top) -> None:
    """Entities nested deeper than any today (arrays of tables whose items have sub-tables...),
    through the cache of rendered nested entities."""
    expected = tomli_w.dumps(codec.encode(top))
    assert tomlblob._render(top) == expected
    assert tomlblob._render(top) == expected


def test_writer_falls_back_to_tomli_w_for_other_values() -> None:
    import datetime
    table = {"when": datetime.date(2025, 1, 17), "x": 1.5}
    with pytest.raises(tomlblob._Unsupported):
        tomlblob._toml(table)


@pytest.mark.parametrize("n", [81, 82, 83])  # "    { time = \"...\" }," is 18 + n characters
def test_writer_inline_table_limit_is_tomli_ws(n: int) -> None:
    table = {"history": [{"time": "x" * n}, {"time": "y"}]}
    assert tomlblob._toml(table) == tomli_w.dumps(table)
    assert tomlblob._toml(table).startswith("history = [" if n <= 82 else "[[history]]")
