"""The board and its history shaped as the spec's `.liza/state.yaml` and `.liza/log.yaml` (pure).

This module only builds plain data (dicts in the spec's key order, lists, str/int/bool/None); the
shell (`gitliza/materialize.py`) renders it with ruamel.yaml and writes the files. Keeping the
shaping here keeps it testable without git or YAML, and keeps the core free of I/O.

Shape rules (see docs/materialize.md):
- Keys follow the order of `blackboard-schema.md`; the spec is not fully consistent across its
  examples, so tasks use one fixed order (identity, holder, review, definition, diagnosis, created,
  history).
- A key the spec shows for a state is always written, as `null` / `false` / `[]` / `0` when unset
  (readers can test `.worktree == null` instead of guessing whether absent means null). Any other
  field is written only when it is set, as in the TOML blobs.
- Fields gitliza adds to the spec's schema (`scope`, `approved_by`, `merge_commit`, ...) follow the
  same rule: written when set, never renamed.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping

from gitliza.core import codec, metrics
from gitliza.core.board import Board
from gitliza.core.model import SCHEMA_VERSION, Agent, Task
from gitliza.core.states import Role, TaskState

S = TaskState
_STATUS_ORDER = {s: i for i, s in enumerate(TaskState)}

# One fixed key order for every task (the spec's examples mostly agree on it).
TASK_ORDER = (
    "id", "description", "status", "supersedes", "superseded_by", "rescope_reason", "priority",
    "depends_on", "assigned_to", "worktree", "base_commit", "lease_expires", "iteration",
    "review_cycles_current", "review_cycles_total", "review_commit", "reviewing_by",
    "review_lease_expires", "approved_by", "spec_ref", "done_when", "scope", "rejection_reason",
    "blocked_reason", "blocked_questions", "attempted", "failed_by", "integration_fix",
    "integration_failure", "handoff_pending", "abandon_reason", "merge_commit", "max_iterations",
    "max_review_cycles", "created", "history",
)
_TASK_ALWAYS = ("id", "description", "status", "priority", "created")
# Per state, the keys the spec (its examples and its invariants) expects to see even when unset.
_DEFINED = ("spec_ref", "done_when")
_HELD = ("assigned_to", "worktree")
TASK_STATE_KEYS: dict[TaskState, tuple[str, ...]] = {
    S.DRAFT: ("worktree",),
    S.UNCLAIMED: ("depends_on", *_DEFINED),
    S.CLAIMED: (*_HELD, "base_commit", "lease_expires", "iteration", *_DEFINED,
                "handoff_pending"),
    S.READY_FOR_REVIEW: (*_HELD, "review_commit", "reviewing_by", "review_lease_expires",
                         *_DEFINED),
    S.REJECTED: (*_HELD, "iteration", "review_cycles_current", "review_cycles_total",
                 "review_commit", *_DEFINED, "rejection_reason"),
    S.APPROVED: (*_HELD, "review_commit", *_DEFINED),
    S.BLOCKED: (*_HELD, *_DEFINED, "blocked_reason", "blocked_questions"),
    S.INTEGRATION_FAILED: (*_HELD, "review_commit", *_DEFINED, "integration_failure"),
    S.MERGED: ("worktree", "review_commit", *_DEFINED),
    S.SUPERSEDED: ("superseded_by", "rescope_reason"),
    S.ABANDONED: ("abandon_reason",),
}
# Counters that are noise at 0 outside the states listed above (codec.encode keeps 0s).
_ZERO_IS_UNSET = frozenset({"review_cycles_current", "review_cycles_total"})

AGENT_ORDER = ("role", "status", "current_task", "lease_expires", "heartbeat", "terminal",
               "iterations_total", "context_percent", "registered")
_AGENT_ALWAYS = ("role", "status", "current_task", "lease_expires", "heartbeat")

DISCOVERY_ORDER = ("id", "by", "during", "description", "severity", "urgency", "recommendation",
                   "created", "converted_to_task")
HANDOFF_ORDER = ("agent", "context_used", "timestamp", "summary", "next_action", "approach",
                 "blockers", "files_modified", "next_steps")
ANOMALY_ORDER = ("timestamp", "task", "reporter", "type", "details")
NOTE_ORDER = ("timestamp", "message", "for", "author")

# The event word of a log entry: per op, or per (op, target state) where one op has several
# outcomes. The words are the spec's log.yaml actions where it has one, else the task-history word.
_ACTIONS = {
    "init": "goal_created", "config": "config_changed", "register": "agent_registered",
    "add": "task_created", "finalize": "task_finalized", "rescope": "rescoped",
    "abandon": "abandoned", "unblock": "unblocked", "heartbeat": "heartbeat",
    "release": "released", "block": "blocked", "submit": "ready_for_review",
    "claim-review": "review_claimed", "handoff": "handoff", "discover": "discovered",
    "anomaly": "anomaly_logged", "note": "human_note", "spec-change": "spec_changed",
}
_ACTIONS_BY_TARGET = {
    ("claim", "BLOCKED"): "blocked",  # hypothesis exhaustion or max iterations: not claimed
    ("verdict", "APPROVED"): "approved",
    ("verdict", "REJECTED"): "rejected",
    ("verdict", "BLOCKED"): "rejected",  # the rejection that hit max_review_cycles
    ("merge", "MERGED"): "merged",
    ("merge", "INTEGRATION_FAILED"): "integration_failed",
}


def _field_defaults(cls: type) -> dict[str, Any]:
    """The encoded 'unset' value of each field: None -> null, () -> [], False -> false."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        d = f.default if f.default is not dataclasses.MISSING else None
        out[f.name] = list(d) if isinstance(d, tuple) else d
    return out


_TASK_DEFAULTS = _field_defaults(Task)
_AGENT_DEFAULTS = _field_defaults(Agent)


def _ordered(data: Mapping[str, Any], order: Iterable[str], always: Iterable[str] = (),
             defaults: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """`data` in `order` (unknown keys last, in their own order), `always` keys filled in."""
    want = set(always)
    out: dict[str, Any] = {}
    for k in order:
        if k in data:
            out[k] = data[k]
        elif k in want:
            out[k] = (defaults or {}).get(k)
    for k, v in data.items():
        if k not in out:
            out[k] = v
    return out


def task_key(t: Task) -> tuple[int, int, str]:
    """Live states first (in the state machine's order), then priority, then id."""
    return _STATUS_ORDER[t.status], t.priority, t.id


def task_view(t: Task) -> dict[str, Any]:
    state_keys = TASK_STATE_KEYS.get(t.status, ())
    data = codec.encode(t)
    for k in _ZERO_IS_UNSET:
        if data.get(k) == 0 and k not in state_keys:
            del data[k]
    return _ordered(data, TASK_ORDER, (*_TASK_ALWAYS, *state_keys), _TASK_DEFAULTS)


def agent_view(a: Agent) -> dict[str, Any]:
    data = codec.encode(a)
    del data["id"]  # the mapping's key
    if a.role != Role.CODER and not a.iterations_total:
        del data["iterations_total"]  # a coder's counter; the spec shows it for coders only
    always = _AGENT_ALWAYS + (("iterations_total",) if a.role == Role.CODER else ())
    return _ordered(data, AGENT_ORDER, always, _AGENT_DEFAULTS)


def state_view(board: Board) -> dict[str, Any]:
    """The whole board as the spec's state.yaml document (top-level keys in the spec's order).
    Raises ValidationError when there is no board (no goal)."""
    goal = board.goal
    tasks = sorted(board.all_tasks(), key=task_key)
    sprint = codec.encode(board.sprint)
    computed = metrics.compute(tasks)
    # Every metric, in the spec's order; a rate with no denominator is null (0 % would claim
    # every review was a rejection).
    m = {f.name: getattr(computed, f.name) for f in dataclasses.fields(computed)}
    scope = {"planned": [], "stretch": [], **sprint.get("scope", {})}
    timeline = {"started": None, "deadline": None, "checkpoint_at": None, "ended": None,
                **sprint.get("timeline", {})}
    cb = board.circuit_breaker
    return {
        "version": SCHEMA_VERSION,
        "goal": _ordered(codec.encode(goal), ("id", "description", "created", "status",
                                              "alignment_history"), ("alignment_history",),
                         {"alignment_history": []}),
        "tasks": [task_view(t) for t in tasks],
        "agents": {a.id: agent_view(a) for a in board.agents()},
        "discovered": [_ordered(codec.encode(d), DISCOVERY_ORDER, ("converted_to_task",))
                       for d in sorted(board.values("discovered"), key=lambda d: (d.created, d.id))],
        "handoff": {h.task: _ordered({k: v for k, v in codec.encode(h).items() if k != "task"},
                                     HANDOFF_ORDER)
                    for h in board.values("handoff")},
        # Journal keys start with the entry's time, so key order is chronological.
        "human_notes": [_ordered(codec.encode(n), NOTE_ORDER) for n in board.values("human_notes")],
        "spec_changes": [_ordered(codec.encode(c), ("timestamp", "spec", "change", "triggered_by"),
                                  ("triggered_by",))
                         for c in board.values("spec_changes")],
        "anomalies": [_ordered(codec.encode(a), ANOMALY_ORDER) for a in board.values("anomalies")],
        "sprint": {
            "id": sprint["id"], "goal_ref": sprint["goal_ref"], "scope": scope,
            "timeline": timeline, "status": sprint["status"], "metrics": m,
            "retrospective": sprint.get("retrospective"),
        },
        "circuit_breaker": {
            "last_check": cb.last_check, "status": cb.status.value,
            "current_trigger": None if cb.current_trigger is None else _ordered(
                codec.encode(cb.current_trigger), ("timestamp", "pattern", "severity")),
            "history": [_ordered(codec.encode(h), ("timestamp", "pattern", "severity", "result"),
                                 ("pattern",)) for h in cb.history],
        },
        "config": codec.encode(board.config) | {
            "escalation_webhook": board.config.escalation_webhook},
        # gitliza's extension: pause/abort/checkpoint as recorded by the control ops (the seed
        # keeps them as files in .liza/); written only when the board has it.
        **({"control": codec.encode(c)} if (c := board.get("control")) is not None else {}),
    }


def action_of(op: str, to_state: str | None, from_state: str | None = None) -> str:
    """The log.yaml `action` word of a recorded op."""
    if op == "claim" and to_state == "CLAIMED":
        # A takeover of an expired claim is a reclaim (the task history says the same).
        return "reclaimed" if from_state == "CLAIMED" else "claimed"
    word = _ACTIONS_BY_TARGET.get((op, to_state or "")) or _ACTIONS.get(op)
    return word if word is not None else op.replace("-", "_")


def one_line(text: str) -> str:
    """The spec requires a one-line detail a human can skim."""
    return " ".join(text.split())


def log_entry(trailers: Mapping[str, str], subject: str) -> dict[str, Any]:
    """One log.yaml entry from a state commit's `Liza-*` trailers and subject line."""
    entry: dict[str, Any] = {
        "timestamp": trailers.get("Liza-Time"),
        "agent": trailers.get("Liza-Actor"),
        "action": action_of(trailers.get("Liza-Op", "unknown"), trailers.get("Liza-To"),
                            trailers.get("Liza-From")),
    }
    task = trailers.get("Liza-Task")
    if task:
        entry["task"] = task  # the spec leaves `task` out of goal-level entries
    entry["detail"] = one_line(subject) or entry["action"]
    return entry
