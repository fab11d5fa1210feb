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

from gitliza.core.encoding import tomlblob
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
    blob = tomlblob.dumps(entity)
    assert tomlblob.loads(cls, blob) == entity
    assert tomlblob.dumps(tomlblob.loads(cls, blob)) == blob  # deterministic bytes


@pytest.mark.parametrize("coll", sorted(ENTITY_TYPES))
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_a_decoded_entity_is_its_class_as_init_makes_it(coll: str, data: st.DataObject) -> None:
    """The codec builds entities on a mutable twin of the class and then gives them their class
    (core/encoding/codec.py `_maker`): the result must be what `__init__` makes, frozen, hashed alike,
    every slot set (those left at their default too)."""
    cls = ENTITY_TYPES[coll]
    entity = data.draw(strategy(cls))
    back = tomlblob.loads(cls, tomlblob.dumps(entity))
    assert type(back) is cls and back == entity and repr(back) == repr(entity)
    assert hash(back) == hash(entity)
    assert all(getattr(back, f.name) == getattr(entity, f.name) for f in dataclasses.fields(cls))
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(back, dataclasses.fields(cls)[0].name, None)


def test_unknown_field_and_wrong_type_are_refused() -> None:
    good = tomlblob.dumps(Task(id="t-1", description="d", status="UNCLAIMED",  # type: ignore[arg-type]
                            created="2025-01-17T14:00:00Z"))
    with pytest.raises(InconsistentState, match="unknown field"):
        tomlblob.loads(Task, good + b'sneaky = "x"\n')
    with pytest.raises(InconsistentState, match="expected int"):
        tomlblob.loads(Task, good.replace(b"priority = 3", b'priority = "3"'))
    with pytest.raises(InconsistentState, match="not a TaskState"):
        tomlblob.loads(Task, good.replace(b'"UNCLAIMED"', b'"DONE"'))
    with pytest.raises(InconsistentState, match="not TOML"):
        tomlblob.loads(Task, b"id = ")


GOLDEN_TASK = b'''id = "task-1"
description = "Retry \\"get_user\\"\\nline two"
status = "CLAIMED"
created = "2025-01-17T14:00:00Z"
priority = 2
spec_ref = "specs/r.md#x"
done_when = "retries 3x"
depends_on = [
    "a",
    "b",
]
assigned_to = "coder-1"
lease_expires = "2025-01-17T14:05:00Z"
iteration = 1
review_cycles_current = 0
review_cycles_total = 0
failed_by = [
    "coder-9",
]
integration_fix = true
history = [
    { time = "2025-01-17T14:00:00Z", event = "created" },
    { time = "2025-01-17T14:01:00Z", event = "claimed", agent = "coder-1" },
]
'''


def test_storage_format_v1_bytes_are_pinned() -> None:
    """Replay (verify, the server hook) needs every machine to write the same bytes for the same
    entity, whatever version of gitliza or tomli-w it has. A change here is a format change: it
    needs a new FORMAT_VERSION, not an edit of this test."""
    from gitliza.core.model import HistoryEntry
    from gitliza.core.states import TaskState
    t = Task(id="task-1", description='Retry "get_user"\nline two', status=TaskState.CLAIMED,
             created="2025-01-17T14:00:00Z", priority=2, spec_ref="specs/r.md#x",
             done_when="retries 3x", depends_on=("a", "b"), assigned_to="coder-1",
             lease_expires="2025-01-17T14:05:00Z", iteration=1, failed_by=("coder-9",),
             integration_fix=True,
             history=(HistoryEntry(time="2025-01-17T14:00:00Z", event="created"),
                      HistoryEntry(time="2025-01-17T14:01:00Z", event="claimed",
                                   agent="coder-1")))
    assert tomlblob.dumps(t) == GOLDEN_TASK


# The fields of every entity as format 1 shipped them (commit 76e9c0a). A field added since must
# either default to None/False/() or be declared with `model.since_v1(default)`, which the codec
# leaves out while it holds its default; otherwise replaying any older board writes a different
# blob and verify (and the server hook) refuse it.
FORMAT1_FIELDS = {
    "Agent": ("id", "role", "status", "current_task", "lease_expires", "heartbeat", "terminal",
              "iterations_total", "context_percent", "registered"),
    "Alignment": ("timestamp", "event", "summary"),
    "Anomaly": ("timestamp", "type", "reporter", "task", "details"),
    "CBEntry": ("timestamp", "result", "pattern"),
    "CircuitBreaker": ("status", "last_check", "current_trigger", "history"),
    "Config": ("max_coder_iterations", "max_review_cycles", "heartbeat_interval", "lease_duration",
               "coder_poll_interval", "coder_max_wait", "integration_branch",
               "escalation_webhook"),
    "Discovery": ("id", "by", "description", "created", "during", "severity", "urgency",
                  "recommendation", "converted_to_task"),
    "Goal": ("id", "description", "created", "status", "alignment_history"),
    "Handoff": ("task", "agent", "timestamp", "summary", "next_action", "context_used",
                "approach", "blockers", "files_modified", "next_steps"),
    "HistoryEntry": ("time", "event", "agent", "commit", "task", "reason", "note"),
    "HumanNote": ("timestamp", "message", "for_task", "author"),
    "SpecChange": ("timestamp", "spec", "change", "triggered_by"),
    "Sprint": ("id", "goal_ref", "status", "scope", "timeline", "retrospective"),
    "SprintScope": ("planned", "stretch"),
    "SprintTimeline": ("started", "deadline", "checkpoint_at", "ended"),
    "Task": ("id", "description", "status", "created", "priority", "spec_ref", "done_when",
             "scope", "depends_on", "assigned_to", "worktree", "base_commit", "lease_expires",
             "iteration", "review_commit", "reviewing_by", "review_lease_expires", "approved_by",
             "rejection_reason", "review_cycles_current", "review_cycles_total",
             "blocked_reason", "blocked_questions", "attempted", "failed_by", "integration_fix",
             "integration_failure", "handoff_pending", "supersedes", "superseded_by",
             "rescope_reason", "abandon_reason", "merge_commit", "max_iterations",
             "max_review_cycles", "history"),
}


@pytest.mark.parametrize("name", sorted(FORMAT1_FIELDS))
def test_fields_added_since_format1_leave_old_bytes_alone(name: str) -> None:
    import dataclasses as dc

    from gitliza.core import model
    cls = getattr(model, name)
    names = tuple(f.name for f in dc.fields(cls))
    assert set(FORMAT1_FIELDS[name]) <= set(names), "a format-1 field went"
    old_order = [n for n in names if n in FORMAT1_FIELDS[name]]
    assert tuple(old_order) == FORMAT1_FIELDS[name], "format-1 fields were reordered"
    for f in dc.fields(cls):
        if f.name in FORMAT1_FIELDS[name]:
            continue
        empty = f.default in (None, False) or (f.default is dc.MISSING
                                               and f.default_factory is tuple)
        assert empty or f.metadata.get(model.SINCE_V1), (
            f"{name}.{f.name} is new since format 1 and defaults to {f.default!r}: declare it "
            "with model.since_v1(default) so older boards replay to the same bytes")


def test_since_v1_fields_are_written_only_away_from_their_default() -> None:
    from gitliza.core.model import Config
    assert "planner_max_wait" not in tomlblob.dumps(Config()).decode()
    assert tomlblob.dumps(Config()) == tomlblob.dumps(Config(planner_max_wait=600))
    blob = tomlblob.dumps(Config(planner_max_wait=42))
    assert b"planner_max_wait = 42" in blob
    assert tomlblob.loads(Config, blob).planner_max_wait == 42
    assert tomlblob.loads(Config, tomlblob.dumps(Config())).planner_max_wait == 600
