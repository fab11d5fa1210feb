"""Every entity survives TOML (and back) unchanged; decoding refuses malformed blobs."""
from __future__ import annotations

import dataclasses
import types
import typing
from enum import Enum
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitliza.core import codec
from gitliza.core.board import ENTITY_TYPES
from gitliza.core.model import Task
from gitliza.errors import InconsistentState

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)


def strategy(tp: Any) -> st.SearchStrategy[Any]:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        base = st.one_of(*[strategy(a) for a in inner])
        return st.one_of(st.none(), base) if type(None) in args else base
    if origin is tuple:
        item = args[0]
        if typing.get_origin(item) is tuple:  # ordered mapping (anomaly details)
            pair = st.tuples(st.text("abcdefgh_", min_size=1, max_size=8),
                             st.one_of(TEXT, st.integers(-10**6, 10**6), st.booleans()))
            return st.lists(pair, max_size=4, unique_by=lambda p: p[0]).map(tuple)
        return st.lists(strategy(item), max_size=3).map(tuple)
    if isinstance(tp, type) and issubclass(tp, Enum):
        return st.sampled_from(list(tp))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        return st.builds(tp, **{f.name: strategy(hints[f.name]) for f in dataclasses.fields(tp)})
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.integers(-10**9, 10**9)
    if tp is str:
        return TEXT
    raise TypeError(tp)


@pytest.mark.parametrize("coll", sorted(ENTITY_TYPES))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_toml_round_trip(coll: str, data: st.DataObject) -> None:
    cls = ENTITY_TYPES[coll]
    entity = data.draw(strategy(cls))
    blob = codec.dumps(entity)
    assert codec.loads(cls, blob) == entity
    assert codec.dumps(codec.loads(cls, blob)) == blob  # deterministic bytes


def test_unknown_field_and_wrong_type_are_refused() -> None:
    good = codec.dumps(Task(id="t-1", description="d", status="UNCLAIMED",  # type: ignore[arg-type]
                            created="2025-01-17T14:00:00Z"))
    with pytest.raises(InconsistentState, match="unknown field"):
        codec.loads(Task, good + b'sneaky = "x"\n')
    with pytest.raises(InconsistentState, match="expected int"):
        codec.loads(Task, good.replace(b"priority = 3", b'priority = "3"'))
    with pytest.raises(InconsistentState, match="not a TaskState"):
        codec.loads(Task, good.replace(b'"UNCLAIMED"', b'"DONE"'))
    with pytest.raises(InconsistentState, match="not TOML"):
        codec.loads(Task, b"id = ")
