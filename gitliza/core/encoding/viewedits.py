"""What a hand edit of the materialized `.liza/state.yaml` changed, and the command that makes
that change on the board.

The view is written from refs/liza/state and rewritten after every transition: an edit of the file
changes nothing on the board. Comparing the file a person edited with the view the board renders
names each change and the `git liza` command that would make it, so the edit is not silently
lost. Pure: two documents in (the view as rendered, the file as read), lines out.
"""
from __future__ import annotations

from typing import Any, Mapping

# Task fields `git liza edit TASK` changes, with its option for each.
_EDIT = {"description": "--desc", "priority": "--priority", "spec_ref": "--spec-ref",
         "done_when": "--done-when", "scope": "--scope", "depends_on": "--depends-on"}
# The command that moves a task into each state (the usual one; the transition table has all).
_INTO = {"DRAFT": "add", "CLAIMED": "claim", "READY_FOR_REVIEW": "submit",
         "APPROVED": "verdict TASK approve", "REJECTED": "verdict TASK reject",
         "MERGED": "merge", "INTEGRATION_FAILED": "merge", "BLOCKED": "block",
         "ABANDONED": "abandon", "SUPERSEDED": "rescope"}
_UNCLAIMED_FROM = {"DRAFT": "finalize", "CLAIMED": "release", "BLOCKED": "unblock"}
LIMIT = 5  # changes named; the rest are counted


def _norm(v: Any) -> Any:
    """Values as text, so that `priority: 2` and `priority: '2'` compare equal, and a list as a
    tuple (depends_on)."""
    if v is None or v == "" or v == [] or v == ():
        return None
    if isinstance(v, (list, tuple)):
        return tuple(_norm(x) for x in v)
    if isinstance(v, Mapping):
        return tuple(sorted((str(k), _norm(x)) for k, x in v.items()))
    return str(v)


def _tasks(doc: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    tasks = doc.get("tasks") or []
    return {str(t.get("id")): t for t in tasks if isinstance(t, Mapping) and t.get("id")}


def _command(task: str, field: str, old: Any, new: Any) -> str:
    if field == "status":
        new_s, old_s = str(new), str(old)
        verb = _UNCLAIMED_FROM.get(old_s, "release") if new_s == "UNCLAIMED" else _INTO.get(new_s)
        if verb is None:
            return "`git liza help` lists the commands"
        return f"`git liza {verb.replace('TASK', task)}`" if "TASK" in verb \
            else f"`git liza {verb} {task}`"
    if field in _EDIT:
        return f"`git liza edit {task} {_EDIT[field]} ...`"
    if field == "assigned_to":
        return f"`git liza claim {task}` (as that agent) or `git liza release {task}`"
    return "no command sets it by hand: the supervisors and transitions keep it"


def view_edits(expected: Mapping[str, Any], found: Any) -> list[str]:
    """The changes from `expected` (the view the board renders) to `found` (the file as read),
    each with the command that makes it; [] when they agree on what a person edits (tasks,
    config, agents, the goal). `found` not a mapping: one line saying the file is no board."""
    if not isinstance(found, Mapping):
        return ["the file is no longer a board (not a mapping)"]
    out: list[str] = []
    mine, theirs = _tasks(expected), _tasks(found)
    for tid, t in mine.items():
        e = theirs.get(tid)
        if e is None:
            out.append(f"task {tid} removed from the view (`git liza abandon {tid}` ends a task)")
            continue
        for field in ("status", *_EDIT, "assigned_to"):
            old, new = t.get(field), e.get(field)
            if _norm(old) != _norm(new):
                out.append(f"task {tid} {field}: {_show(old)} -> {_show(new)} "
                           f"({_command(tid, field, old, new)})")
    for tid in theirs:
        if tid not in mine:
            out.append(f"task {tid} added to the view (`git liza add {tid} --desc ...`, or "
                       "`git liza add --from FILE`)")
    cfg, cfg_found = expected.get("config") or {}, found.get("config") or {}
    if isinstance(cfg_found, Mapping):
        for key in sorted(set(cfg) | set(cfg_found)):
            if _norm(cfg.get(key)) != _norm(cfg_found.get(key)):
                out.append(f"config {key}: {_show(cfg.get(key))} -> {_show(cfg_found.get(key))} "
                           f"(`git liza config {key} VALUE`)")
    agents, agents_found = expected.get("agents") or {}, found.get("agents") or {}
    if isinstance(agents_found, Mapping):
        for aid in sorted(set(agents) | set(agents_found)):
            if _norm(agents.get(aid)) != _norm(agents_found.get(aid)):
                out.append(f"agent {aid} changed (`git liza register {aid} --role ROLE` adds "
                           "one; the supervisors keep the rest)")
    goal, goal_found = expected.get("goal") or {}, found.get("goal") or {}
    if isinstance(goal_found, Mapping) and _norm(goal.get("status")) != _norm(
            goal_found.get("status")):
        out.append(f"goal status: {_show(goal.get('status'))} -> {_show(goal_found.get('status'))}"
                   " (`git liza complete-goal` or `git liza abort-goal --reason TEXT`)")
    if len(out) > LIMIT:
        out = out[:LIMIT] + [f"and {len(out) - LIMIT} more change(s)"]
    return out


def _show(v: Any) -> str:
    n = _norm(v)
    if n is None:
        return "(none)"
    text = ", ".join(map(str, n)) if isinstance(n, tuple) else str(n)
    return text if len(text) <= 40 else text[:37] + "..."
