"""The seed schema's `.liza/state.yaml` and `log.yaml` (blackboard-schema.md), read strictly.

    read_state(text, name) -> Seed            (the board's entities, keyed as the store keys them)
    read_log(text, name)   -> list of entries

A board may come from a team's running Liza, edited by hand and by yq: everything is checked before
anything is written, and the first problem is reported as one line with its place in the file
(`state.yaml:42: tasks[3].status: 'DONE' is not one of DRAFT, UNCLAIMED, ...`), as a
ValidationError (exit 1). Checked: YAML syntax and duplicate keys, unknown keys, missing required
fields, types, enums (statuses, roles, severities, anomaly types), timestamps, ids (the kebab-case
ids gitliza uses as file and branch names), references (dependencies, successors, assignees,
handoffs, discoveries, notes, anomalies, the sprint's scope) and each entity's invariants.

What is derived is not read: `sprint.metrics` (the core computes it from the tasks) and `version`
(must be 1). One leniency, for boards written by the reference scripts: an agent's `task` is read as
`current_task` (liza-watch.sh reads `.task`).

This module walks the documents' sections and checks what crosses entities (duplicates,
references, cycles, each entity's invariants, the sprint's goal and scope); each value and entity
is decoded, with its place, by gitliza/interop/decode.py.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, NoReturn

from gitliza.core import oplimits
from gitliza.core.board import Board, Key, journal_key
from gitliza.core.config import coerce_config
from gitliza.core.invariants import agent_problems, anomaly_problems, find_cycle, task_problems
from gitliza.core.model import (ANOMALY_TYPES, SCHEMA_VERSION, Agent, Anomaly, CircuitBreaker,
                                Config, Control, Discovery, Goal, Handoff, HumanNote, SpecChange,
                                Sprint, Task)
from gitliza.core.states import HUMAN_ACTOR, REGISTRABLE_ROLES, TERMINAL, TaskState
from gitliza.errors import LizaError
from gitliza.interop import yamlload
from gitliza.interop.decode import (Where, check_id, entity, list_items, mapping_items, ref,
                                    scalar)

S = TaskState

TOP_KEYS = ("version", "goal", "tasks", "agents", "discovered", "handoff", "human_notes",
            "spec_changes", "anomalies", "sprint", "circuit_breaker", "config", "control")
# liza-validate.sh's required fields (`version` too: a file without it is not a Liza board).
_REQUIRED_TOP = ("version", "goal", "tasks", "agents", "sprint", "config")


@dataclass
class Seed:
    """A board read from the seed schema: its entities by store key, ready to be written."""

    entities: dict[Key, Any]
    lines: dict[Key, int]  # where each entity starts in the file (1-based), for later errors

    def board(self) -> Board:
        return Board().with_changes(self.entities)


# -- the document -----------------------------------------------------------------------------------
# What one board file may bring (a 23 MB state.yaml of 100,000 tasks imported, then
# `status` took 38.6 s and `materialize` 93.7 s in 1.8 GB). Far above any board a team works
# (the reference's boards hold tens of tasks), far below what makes every read slow. Counted before
# an entity is decoded; one line, exit 1.
MAX_ITEMS = {"tasks": 20_000, "agents": 1_000, "discovered": 20_000, "handoff": 20_000,
             "human_notes": 20_000, "spec_changes": 20_000, "anomalies": 20_000}
MAX_LIVE_TASKS = 5_000  # not terminal: what `status` and every claim look through
MAX_LOG_ENTRIES = 200_000


def _too_many(what: str, n: int, most: int, at: Where) -> NoReturn:
    at.fail(f"{n:,} {what}, more than an import takes ({most:,})")


def read_state(text: str, name: str = "state.yaml", warnings: list[str] | None = None) -> Seed:
    """Parse and check a seed-schema state.yaml. Raises ValidationError (one line, with the place in
    the file) at the first problem. With `warnings` (import), a broken invariant of an entity or a
    dangling reference of a discovery is appended there instead: the schema's own example breaks
    three, and a board written by the original scripts should come in as it is."""
    doc = yamlload.load(text, name)
    top = Where(name, "", 1)
    if not isinstance(doc, dict):
        top.fail("the document must be a mapping (the schema's state.yaml)")
    for k in doc:
        if k not in TOP_KEYS:
            top.key(doc, k).fail(f"unknown section {k!r} (known: {', '.join(TOP_KEYS)})")
    for k in _REQUIRED_TOP:
        if k not in doc:
            top.fail(f"missing required section {k!r}")
    for k in ("goal", "sprint"):
        if doc.get(k) is None:
            top.fail(f"missing required section {k!r}")
    version = doc.get("version")
    if version != SCHEMA_VERSION:
        top.key(doc, "version").fail(f"schema version {version!r} is not supported (only "
                                     f"{SCHEMA_VERSION})")
    for coll, most in MAX_ITEMS.items():
        items = doc.get(coll)
        if isinstance(items, (list, dict)) and len(items) > most:
            _too_many(coll.replace("_", " "), len(items), most, top.key(doc, coll))
    ents: dict[Key, Any] = {}
    lines: dict[Key, int] = {}

    def put(key: Key, entity: Any, at: Where) -> None:
        if key in ents:
            at.fail(f"duplicate {key[0].rstrip('s')} {key[1]!r}")
        refused = oplimits.problems(entity)
        if refused:  # what an op would refuse to write, an import refuses too
            at.fail(refused[0])
        ents[key] = entity
        lines[key] = at.line or 0

    goal = entity(Goal, doc["goal"], top.key(doc, "goal"))
    put(("goal", ""), goal, top.key(doc, "goal"))
    put(("config", ""), _config(doc, top), top.key(doc, "config"))

    where: dict[str, Where] = {}
    tasks: dict[str, Task] = {}
    for _i, node, at in list_items(doc, "tasks", top):
        t = entity(Task, node, at)
        if t.id in tasks:
            at.fail(f"duplicate task id {t.id!r}")
        tasks[t.id], where[t.id] = t, at
        put(("archive" if t.status in TERMINAL else "tasks", t.id), t, at)
    live = sum(1 for t in tasks.values() if t.status not in TERMINAL)
    if live > MAX_LIVE_TASKS:
        _too_many("live (not terminal) tasks", live, MAX_LIVE_TASKS, top.key(doc, "tasks"))

    agents: dict[str, Agent] = {}
    for aid, node, at in mapping_items(doc, "agents", top):
        check_id(aid, "agent id", at)
        if aid == HUMAN_ACTOR:
            at.fail("'human' is reserved for the person at the keyboard")
        if isinstance(node, dict) and "id" in node:
            at.key(node, "id").fail("an agent's id is its key in `agents`")
        a = entity(Agent, node, at, extra={"id": aid})
        if a.role not in REGISTRABLE_ROLES:
            at.key(node, "role").fail(f"role {a.role.value!r} is not planner, coder or "
                                      "code_reviewer")
        agents[aid], where["agent " + aid] = a, at
        put(("agents", aid), a, at)

    for _i, node, at in list_items(doc, "discovered", top):
        d = entity(Discovery, node, at)
        for fld, v in (("during", d.during), ("converted_to_task", d.converted_to_task)):
            if v is not None and v not in tasks:
                at.key(node, fld).broken(f"task {v!r} does not exist", warnings)
        put(("discovered", d.id), d, at)

    for tid, node, at in mapping_items(doc, "handoff", top):
        ref(tid, tasks, "task", at)
        if isinstance(node, dict) and "task" in node:
            at.key(node, "task").fail("a handoff's task is its key in `handoff`")
        # The handing-off agent may be gone: a handoff is what an agent leaves when it exits.
        h = entity(Handoff, node, at, extra={"task": tid})
        put(("handoff", tid), h, at)

    journals = (("human_notes", HumanNote, "for"), ("spec_changes", SpecChange, None),
                ("anomalies", Anomaly, "task"))
    for coll, cls, task_key in journals:
        for _i, node, at in list_items(doc, coll, top):
            e = entity(cls, node, at)
            if task_key is not None:
                ref(getattr(e, "for_task" if task_key == "for" else "task"), tasks, "task",
                     at.key(node, task_key))
            if isinstance(e, Anomaly):
                if e.type not in ANOMALY_TYPES:
                    at.key(node, "type").fail(f"{e.type!r} is not one of "
                                              f"{', '.join(ANOMALY_TYPES)}")
                for p in anomaly_problems(e):
                    at.broken(p, warnings)
            put((coll, journal_key(e, e.timestamp)), e, at)

    sprint_at = top.key(doc, "sprint")
    sprint = entity(Sprint, doc["sprint"], sprint_at, skip=("metrics",))
    put(("sprint", ""), sprint, sprint_at)
    if sprint.goal_ref != goal.id:
        sprint_at.key(doc["sprint"], "goal_ref").fail(
            f"{sprint.goal_ref!r} is not the goal ({goal.id!r})")
    metrics = doc["sprint"].get("metrics")
    if metrics is not None and not isinstance(metrics, dict):
        sprint_at.key(doc["sprint"], "metrics").fail("expected a mapping")
    scope = doc["sprint"].get("scope")
    timeline = doc["sprint"].get("timeline")
    if not isinstance(timeline, dict) or timeline.get("started") is None:
        sprint_at.fail("sprint.timeline.started is required")
    for part in ("planned", "stretch"):
        for i, tid in enumerate(getattr(sprint.scope, part)):
            node = scope.get(part) if isinstance(scope, dict) else None
            ref(tid, tasks, "task", Where(name, f"sprint.scope.{part}[{i}]",
                                            yamlload.line_of(node, i, sprint_at.line)))
    if doc.get("circuit_breaker") is not None:
        cb = entity(CircuitBreaker, doc["circuit_breaker"], top.key(doc, "circuit_breaker"))
        put(("circuit_breaker", ""), cb, top.key(doc, "circuit_breaker"))

    if doc.get("control") is not None:  # gitliza's extension (see yamlview.state_view)
        put(("control", ""), entity(Control, doc["control"], top.key(doc, "control")),
            top.key(doc, "control"))

    _check_tasks(tasks, agents, where, warnings)
    for aid, a in agents.items():
        at = where["agent " + aid]
        ref(a.current_task, tasks, "task", at.key(doc["agents"][aid], "current_task")
             if "current_task" in doc["agents"][aid] else at.key(doc["agents"][aid], "task"))
        for p in agent_problems(a):
            at.broken(p, warnings)
    return Seed(ents, lines)


def _config(doc: Any, top: Where) -> Config:
    node = doc.get("config")
    if node is None:
        return Config()
    at = top.key(doc, "config")
    cfg: Config = entity(Config, node, at)
    for f in dataclasses.fields(Config):
        v = getattr(cfg, f.name)
        if v is not None and v != f.default:
            try:
                coerce_config(f.name, v)
            except LizaError as e:
                at.key(node, f.name).fail(str(e))
    return cfg


def _check_tasks(tasks: dict[str, Task], agents: dict[str, Agent],
                 where: dict[str, Where], warnings: list[str] | None) -> None:
    active: dict[str, str] = {}
    for t in tasks.values():
        at = where[t.id]
        for dep in t.depends_on:
            ref(dep, tasks, "dependency", at)
        ref(t.supersedes, tasks, "task", at)
        for s in t.superseded_by:
            ref(s, tasks, "successor", at)
        if t.status == S.CLAIMED:  # other holders may have exited since (a blocked coder...)
            ref(t.assigned_to, agents, "agent", at)
        for p in task_problems(t):
            at.broken(p, warnings)
        if t.assigned_to and t.status in (S.CLAIMED, S.READY_FOR_REVIEW, S.REJECTED):
            if t.assigned_to in active:
                at.broken(f"agent {t.assigned_to} is assigned to multiple active tasks "
                          f"({active[t.assigned_to]} and {t.id})", warnings)
            active[t.assigned_to] = t.id
    cycle = find_cycle({t.id: t.depends_on for t in tasks.values()})
    if cycle:
        where[cycle[0]].fail(f"circular dependencies: {' -> '.join(cycle)}")


# -- log.yaml ---------------------------------------------------------------------------------------
# wt-merge.sh also writes drift_commits (merged), failed_sha and test_output (integration_failed).
LOG_KEYS = ("timestamp", "agent", "action", "task", "detail", "drift_commits", "failed_sha",
            "test_output")


def read_log(text: str, name: str = "log.yaml") -> list[dict[str, str]]:
    """The seed's log.yaml: a list of {timestamp, agent, action, [task], detail}. Strict."""
    doc = yamlload.load(text, name)
    top = Where(name, "", 1)
    if doc is None:
        return []
    if not isinstance(doc, list):
        top.fail("log.yaml must be a list of entries")
    if len(doc) > MAX_LOG_ENTRIES:
        _too_many("log entries", len(doc), MAX_LOG_ENTRIES, top)
    out: list[dict[str, str]] = []
    for i, node in enumerate(doc):
        at = top.item(doc, i)
        if not isinstance(node, dict):
            at.fail("expected a mapping")
        entry: dict[str, str] = {}
        for k, v in node.items():
            if k not in LOG_KEYS:
                at.key(node, k).fail(f"unknown key {k!r} (known: {', '.join(LOG_KEYS)})")
            if v is None:
                continue
            entry[str(k)] = scalar(str, v, at.key(node, k), str(k))
        for k in ("timestamp", "agent", "action"):
            if k not in entry:
                at.fail(f"missing required field {k!r}")
        out.append(entry)
    return out
