"""The board and its history shaped as the spec's `.liza/state.yaml` and `.liza/log.yaml` (pure).

This module only builds plain data (dicts in the spec's key order, lists, str/int/bool/None); the
shell renders it with ruamel.yaml (`gitliza/services/views/yamlrender.py`) and writes the files
(`gitliza/services/views/materialize.py`). Keeping the shaping here keeps it testable without git or
YAML, and keeps the core free of I/O.

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

from gitliza.core.encoding import codec

from gitliza.core.reports import metrics
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
    "add": "task_created", "add-tasks": "tasks_created", "finalize": "task_finalized",
    "rescope": "rescoped",
    "abandon": "abandoned", "unblock": "unblocked", "heartbeat": "heartbeat",
    "release": "released", "block": "blocked", "submit": "ready_for_review",
    "claim-review": "review_claimed", "handoff": "handoff", "discover": "discovered",
    "anomaly": "anomaly_logged", "note": "human_note", "spec-change": "spec_changed",
    "complete-goal": "goal_completed", "abort-goal": "goal_aborted", "edit": "task_edited",
    "convert": "discovery_converted",
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


def state_view(board: Board, *, archived: bool = True,
               keep: Iterable[Task] = ()) -> dict[str, Any]:
    """The whole board as the spec's state.yaml document (top-level keys in the spec's order).
    With `archived` False, `tasks` holds the live tasks and the archived ones in `keep` (the
    materialized view writes every archived one to `.liza/archive/`, and keeps in state.yaml
    those core/encoding/retention.py names); the metrics count every task either way.
    Raises ValidationError when there is no board (no goal)."""
    goal = board.goal
    every = list(board.all_tasks())
    tasks = sorted(every if archived else [*board.tasks(), *keep], key=task_key)
    sprint = codec.encode(board.sprint)
    computed = metrics.compute(every, sprint_started=board.sprint.timeline.started)
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


def log_entry(trailers: Mapping[str, str], subject: str,
              task_record: Task | None = None) -> dict[str, Any]:
    """One log.yaml entry from a state commit's `Liza-*` trailers and subject line. `task_record`:
    the entry's task as that commit left it, when the caller has it (its description and iteration
    make a better `detail`)."""
    entry: dict[str, Any] = {
        "timestamp": trailers.get("Liza-Time"),
        "agent": trailers.get("Liza-Actor"),
        "action": action_of(trailers.get("Liza-Op", "unknown"), trailers.get("Liza-To"),
                            trailers.get("Liza-From")),
    }
    task = trailers.get("Liza-Task")
    if task:
        entry["task"] = task  # the spec leaves `task` out of goal-level entries
    if trailers.get("Liza-Op") == "merge" and '"drift_commits"' in trailers.get("Liza-Args", ""):
        import json
        try:
            entry["drift_commits"] = int(json.loads(trailers["Liza-Args"])["drift_commits"])
        except (ValueError, KeyError, TypeError):
            pass
    entry["detail"] = describe(trailers, task_record) or one_line(subject) or entry["action"]
    return entry


_DETAIL_MAX = 200


def describe(trailers: Mapping[str, str], task: Task | None = None) -> str:
    """The log's `detail`: what happened, for a human skimming the log (blackboard-schema.md's
    log.yaml: the task's description on a claim, "Iteration 2, commit a1b2c3d4" on a submit, the
    reviewer's reason, "SUPERSEDED -> task-4a, task-4b (reason)"...), from the recorded op
    arguments. Empty when the op says nothing more than its subject line."""
    import json
    try:
        args = json.loads(trailers.get("Liza-Args", "{}"))
    except ValueError:
        args = {}
    if not isinstance(args, dict):
        args = {}
    op, to = trailers.get("Liza-Op", ""), trailers.get("Liza-To")
    text = _describe(op, to, args, task)
    text = one_line(text)
    return text if len(text) <= _DETAIL_MAX else text[: _DETAIL_MAX - 3] + "..."


def _sha(value: Any) -> str:
    return str(value)[:8] if value else ""


def _describe(op: str, to: str | None, a: dict[str, Any], task: Task | None) -> str:
    desc = task.description if task is not None else ""
    if op == "init":
        return str(a.get("goal", ""))
    if op == "config":
        return f"{a.get('key')} = {a.get('value')}"
    if op == "register":
        return f"{a.get('agent')} as {a.get('role')}"
    if op == "add":
        return str(a.get("description", "")) + (" (ready)" if a.get("ready") else "")
    if op == "edit":
        changed = sorted(k for k in a if k not in ("task", "gen"))
        return f"changed {', '.join(changed)}" + (f": {desc}" if desc else "")
    if op == "finalize":
        return f"DRAFT -> UNCLAIMED: {desc}" if desc else "DRAFT -> UNCLAIMED"
    if op == "claim":
        if to == "BLOCKED":
            if task is not None and task.blocked_reason:
                return f"not claimed, blocked: {task.blocked_reason}"
            return "not claimed: the task is exhausted"
        it = f"iteration {task.iteration}: " if task is not None and task.iteration else ""
        return it + desc
    if op == "submit":
        it = f"Iteration {task.iteration}, " if task is not None and task.iteration else ""
        return f"{it}commit {_sha(a.get('commit'))}"
    if op == "claim-review":
        if task is not None and task.review_commit:
            return f"review of commit {_sha(task.review_commit)}"
        return "review claimed"
    if op == "verdict":
        word = "Approved" if to == "APPROVED" else "Rejected"
        return str(a.get("reason") or f"{word} commit {_sha(a.get('commit'))}")
    if op == "merge":
        if to == "MERGED":
            return f"merged {_sha(a.get('merge_commit'))} into the integration branch"
        return str(a.get("reason") or "integration failed")
    if op == "rescope":
        into = a.get("into") or []
        return f"SUPERSEDED -> {', '.join(map(str, into))} ({a.get('reason', '')})"
    if op in ("abandon", "block", "abort-goal"):
        return str(a.get("reason", ""))
    if op == "release":
        return "given back" + (f": {desc}" if desc else "")
    if op == "unblock":
        return "BLOCKED -> UNCLAIMED" + (f": {desc}" if desc else "")
    if op == "heartbeat":
        until = task.lease_expires or task.review_lease_expires if task is not None else None
        return f"lease until {until}" if until else "alive"
    if op == "handoff":
        return f"{a.get('summary', '')}; next: {a.get('next_action', '')}"
    if op == "discover":
        return f"{a.get('description', '')} ({a.get('severity', 'medium')}, " \
               f"{a.get('urgency', 'deferred')})"
    if op == "convert":
        return f"{a.get('discovery')} -> task {a.get('task')}"
    if op == "anomaly":
        details = a.get("details") or {}
        pairs = ", ".join(f"{k}={v}" for k, v in details.items()) if isinstance(details, dict) \
            else ""
        return f"{a.get('type')}" + (f": {pairs}" if pairs else "")
    if op == "note":
        return str(a.get("message", ""))
    if op == "spec-change":
        return f"{a.get('spec')}: {a.get('change')}"
    if op == "complete-goal":
        return str(a.get("summary") or "goal completed")
    return str(a.get("reason") or "")
