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
"""
from __future__ import annotations

import dataclasses
import hashlib
import typing
from dataclasses import dataclass
from enum import Enum
from typing import Any, Iterator

from gitliza.core import clock, oplimits
from gitliza.core.board import Board, Key, journal_key
from gitliza.core.ids import check_id
from gitliza.core.invariants import agent_problems, anomaly_problems, find_cycle, task_problems
from gitliza.core.model import (ANOMALY_TYPES, SCHEMA_VERSION, Agent, Anomaly, CircuitBreaker,
                                Config, Control, Discovery, Goal, Handoff, HumanNote, SpecChange,
                                Sprint, Task)
from gitliza.core.states import HUMAN_ACTOR, REGISTRABLE_ROLES, TERMINAL, TaskState

S = TaskState
from gitliza.errors import LizaError, ValidationError
from gitliza.interop import yamlload

TOP_KEYS = ("version", "goal", "tasks", "agents", "discovered", "handoff", "human_notes",
            "spec_changes", "anomalies", "sprint", "circuit_breaker", "config", "control")
# liza-validate.sh's required fields (`version` too: a file without it is not a Liza board).
_REQUIRED_TOP = ("version", "goal", "tasks", "agents", "sprint", "config")

# Fields whose value is an ISO timestamp.
_TIMESTAMPS = frozenset({"created", "lease_expires", "review_lease_expires", "heartbeat",
                         "registered", "timestamp", "time", "started", "deadline",
                         "checkpoint_at", "ended", "last_check", "resolved_at", "paused_at",
                         "aborted_at", "resumed_at"})
# YAML key -> field, per class (the spec's `for` is a Python keyword).
_RENAMES: dict[type, dict[str, str]] = {HumanNote: {"for": "for_task"},
                                        Agent: {"task": "current_task"}}
_IDS = {(Task, "id"): "task id", (Agent, "id"): "agent id", (Goal, "id"): "goal id",
        (Sprint, "id"): "sprint id", (Discovery, "id"): "discovery id"}


@dataclass
class Seed:
    """A board read from the seed schema: its entities by store key, ready to be written."""

    entities: dict[Key, Any]
    lines: dict[Key, int]  # where each entity starts in the file (1-based), for later errors

    def board(self) -> Board:
        return Board().with_changes(self.entities)


class _Where:
    """A place in the document: a dotted path and a line number."""

    def __init__(self, name: str, path: str, line: int | None) -> None:
        self.name, self.path, self.line = name, path, line

    def fail(self, msg: str) -> typing.NoReturn:
        raise ValidationError(self.message(msg))

    def message(self, msg: str) -> str:
        at = f"{self.name}:{self.line}" if self.line is not None else self.name
        where = f" {self.path}:" if self.path else ""
        return f"{at}:{where} {msg}"

    def broken(self, msg: str, warnings: list[str] | None) -> None:
        """A broken invariant: refused, or with `warnings` (import) one warning more."""
        if warnings is None:
            self.fail(msg)
        warnings.append(self.message(msg))

    def key(self, node: Any, k: str) -> _Where:
        return _Where(self.name, f"{self.path}.{k}" if self.path else k,
                      yamlload.line_of(node, k, self.line))

    def item(self, node: Any, i: int) -> _Where:
        return _Where(self.name, f"{self.path}[{i}]", yamlload.line_of(node, i, self.line))



# -- values ---------------------------------------------------------------------------------------
def _scalar(tp: Any, v: Any, at: _Where, field: str) -> Any:
    if isinstance(tp, type) and issubclass(tp, Enum):
        try:
            return tp(v)
        except ValueError:
            allowed = ", ".join(str(m.value) for m in tp)
            at.fail(f"{v!r} is not one of {allowed}")
    if tp is bool:
        if type(v) is not bool:
            at.fail(f"expected true or false, got {v!r}")
        return v
    if tp is int:
        if not isinstance(v, int) or isinstance(v, bool):
            at.fail(f"expected an integer, got {v!r}")
        return int(v)
    if tp is str:
        if isinstance(v, int) and not isinstance(v, bool):
            v = getattr(v, "raw", str(v))  # an all-digit short commit id, as written
        if not isinstance(v, str):
            at.fail(f"expected text, got {type(v).__name__} {v!r}")
        v = str(v)  # drop ruamel's scalar-string subclasses
        if field in _TIMESTAMPS:
            try:
                clock.check_ts(v)
            except LizaError:
                at.fail(f"{v!r} is not an ISO 8601 UTC timestamp (YYYY-MM-DDTHH:MM:SSZ)")
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            at.fail("text is not valid UTF-8")
        return v
    at.fail(f"unsupported value {v!r}")


def _value(tp: Any, v: Any, at: _Where, field: str) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType")):
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return _value(inner[0], v, at, field)
        if not isinstance(v, (str, int, bool)) or v is None:  # an anomaly detail value
            at.fail(f"expected text, a number or true/false, got {v!r}")
        return str(v) if isinstance(v, str) else v
    if origin is tuple:
        item = args[0]
        if typing.get_origin(item) is tuple:  # an ordered mapping (Anomaly.details)
            if not isinstance(v, dict):
                at.fail("expected a mapping")
            return tuple((str(k), _detail(x, at.key(v, str(k)))) for k, x in v.items())
        if not isinstance(v, list):
            at.fail("expected a list")
        return tuple(_value(item, x, at.item(v, i), field) for i, x in enumerate(v))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _entity(tp, v, at)
    return _scalar(tp, v, at, field)


def _detail(v: Any, at: _Where) -> str | int | bool:
    if isinstance(v, bool):
        return bool(v)
    if isinstance(v, int):
        return int(v)
    if isinstance(v, str):
        return str(v)
    at.fail(f"an anomaly detail must be text, a number or true/false, got {v!r}")


_HINTS: dict[type, dict[str, Any]] = {}


def _entity(cls: type, node: Any, at: _Where, extra: dict[str, Any] | None = None,
            skip: tuple[str, ...] = ()) -> Any:
    """A dataclass from a YAML mapping: null means unset, unknown keys are refused."""
    if not isinstance(node, dict):
        at.fail(f"expected a mapping, got {type(node).__name__}")
    hints = _HINTS.get(cls) or _HINTS.setdefault(cls, typing.get_type_hints(cls))
    fields = {f.name: f for f in dataclasses.fields(cls)}
    renames = _RENAMES.get(cls, {})
    kwargs: dict[str, Any] = dict(extra or {})
    for k, v in node.items():
        if not isinstance(k, str):
            at.fail(f"key {k!r} is not text")
        if k in skip:
            continue
        name = renames.get(k, k)
        f = fields.get(name)
        if f is None or name in (extra or {}):
            at.key(node, k).fail(f"unknown key {k!r} (known: {', '.join(_keys(cls))})")
        if v is None:
            continue
        if name in kwargs and k != name:
            at.key(node, k).fail(f"{k!r} repeats {name!r}")
        kwargs[name] = _value(hints[name], v, at.key(node, k), name)
        what = _IDS.get((cls, name))
        if what:
            _check_id(kwargs[name], what, at.key(node, k))
    for name, f in fields.items():
        if name not in kwargs and f.default is dataclasses.MISSING and \
                f.default_factory is dataclasses.MISSING:
            at.fail(f"missing required field {_key_of(cls, name)!r}")
    return cls(**kwargs)


def _keys(cls: type) -> list[str]:
    return [_key_of(cls, f.name) for f in dataclasses.fields(cls)]


def _key_of(cls: type, name: str) -> str:
    for k, n in _RENAMES.get(cls, {}).items():
        if n == name and k != "task":
            return k
    return name


def _check_id(value: str, what: str, at: _Where) -> None:
    try:
        check_id(value, what)
    except LizaError as e:
        at.fail(str(e))


def _ref(value: str | None, known: typing.Container[str], what: str, at: _Where) -> None:
    if value is not None and value not in known:
        at.fail(f"{what} {value!r} does not exist")


def _list(doc: Any, key: str, at: _Where) -> Iterator[tuple[int, Any, _Where]]:
    node = doc.get(key)
    if node is None:
        return
    if not isinstance(node, list):
        at.key(doc, key).fail("expected a list")
    here = at.key(doc, key)
    for i, item in enumerate(node):
        yield i, item, here.item(node, i)


def _mapping(doc: Any, key: str, at: _Where) -> Iterator[tuple[str, Any, _Where]]:
    node = doc.get(key)
    if node is None:
        return
    if not isinstance(node, dict):
        at.key(doc, key).fail("expected a mapping")
    here = at.key(doc, key)
    for k, item in node.items():
        yield str(k), item, here.key(node, k)


# -- the document -----------------------------------------------------------------------------------
def read_state(text: str, name: str = "state.yaml", warnings: list[str] | None = None) -> Seed:
    """Parse and check a seed-schema state.yaml. Raises ValidationError (one line, with the place in
    the file) at the first problem. With `warnings` (import), a broken invariant of an entity or a
    dangling reference of a discovery is appended there instead: the schema's own example breaks
    three, and a board written by the original scripts should come in as it is."""
    doc = yamlload.load(text, name)
    top = _Where(name, "", 1)
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
    ents: dict[Key, Any] = {}
    lines: dict[Key, int] = {}

    def put(key: Key, entity: Any, at: _Where) -> None:
        if key in ents:
            at.fail(f"duplicate {key[0].rstrip('s')} {key[1]!r}")
        refused = oplimits.problems(entity)
        if refused:  # what an op would refuse to write, an import refuses too
            at.fail(refused[0])
        ents[key] = entity
        lines[key] = at.line or 0

    goal = _entity(Goal, doc["goal"], top.key(doc, "goal"))
    put(("goal", ""), goal, top.key(doc, "goal"))
    put(("config", ""), _config(doc, top), top.key(doc, "config"))

    where: dict[str, _Where] = {}
    tasks: dict[str, Task] = {}
    for _i, node, at in _list(doc, "tasks", top):
        t = _entity(Task, node, at)
        if t.id in tasks:
            at.fail(f"duplicate task id {t.id!r}")
        tasks[t.id], where[t.id] = t, at
        put(("archive" if t.status in TERMINAL else "tasks", t.id), t, at)

    agents: dict[str, Agent] = {}
    for aid, node, at in _mapping(doc, "agents", top):
        _check_id(aid, "agent id", at)
        if aid == HUMAN_ACTOR:
            at.fail("'human' is reserved for the person at the keyboard")
        if isinstance(node, dict) and "id" in node:
            at.key(node, "id").fail("an agent's id is its key in `agents`")
        a = _entity(Agent, node, at, extra={"id": aid})
        if a.role not in REGISTRABLE_ROLES:
            at.key(node, "role").fail(f"role {a.role.value!r} is not planner, coder or "
                                      "code_reviewer")
        agents[aid], where["agent " + aid] = a, at
        put(("agents", aid), a, at)

    for _i, node, at in _list(doc, "discovered", top):
        d = _entity(Discovery, node, at)
        for fld, v in (("during", d.during), ("converted_to_task", d.converted_to_task)):
            if v is not None and v not in tasks:
                at.key(node, fld).broken(f"task {v!r} does not exist", warnings)
        put(("discovered", d.id), d, at)

    for tid, node, at in _mapping(doc, "handoff", top):
        _ref(tid, tasks, "task", at)
        if isinstance(node, dict) and "task" in node:
            at.key(node, "task").fail("a handoff's task is its key in `handoff`")
        # The handing-off agent may be gone: a handoff is what an agent leaves when it exits.
        h = _entity(Handoff, node, at, extra={"task": tid})
        put(("handoff", tid), h, at)

    journals = (("human_notes", HumanNote, "for"), ("spec_changes", SpecChange, None),
                ("anomalies", Anomaly, "task"))
    for coll, cls, task_key in journals:
        for _i, node, at in _list(doc, coll, top):
            e = _entity(cls, node, at)
            if task_key is not None:
                _ref(getattr(e, "for_task" if task_key == "for" else "task"), tasks, "task",
                     at.key(node, task_key))
            if isinstance(e, Anomaly):
                if e.type not in ANOMALY_TYPES:
                    at.key(node, "type").fail(f"{e.type!r} is not one of "
                                              f"{', '.join(ANOMALY_TYPES)}")
                for p in anomaly_problems(e):
                    at.broken(p, warnings)
            put((coll, journal_key(e, e.timestamp)), e, at)

    sprint_at = top.key(doc, "sprint")
    sprint = _entity(Sprint, doc["sprint"], sprint_at, skip=("metrics",))
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
            _ref(tid, tasks, "task", _Where(name, f"sprint.scope.{part}[{i}]",
                                            yamlload.line_of(node, i, sprint_at.line)))
    if doc.get("circuit_breaker") is not None:
        cb = _entity(CircuitBreaker, doc["circuit_breaker"], top.key(doc, "circuit_breaker"))
        put(("circuit_breaker", ""), cb, top.key(doc, "circuit_breaker"))

    if doc.get("control") is not None:  # gitliza's extension (see yamlview.state_view)
        put(("control", ""), _entity(Control, doc["control"], top.key(doc, "control")),
            top.key(doc, "control"))

    _check_tasks(tasks, agents, where, warnings)
    for aid, a in agents.items():
        at = where["agent " + aid]
        _ref(a.current_task, tasks, "task", at.key(doc["agents"][aid], "current_task")
             if "current_task" in doc["agents"][aid] else at.key(doc["agents"][aid], "task"))
        for p in agent_problems(a):
            at.broken(p, warnings)
    return Seed(ents, lines)


def _config(doc: Any, top: _Where) -> Config:
    from gitliza.core.ops.planning import coerce_config
    node = doc.get("config")
    if node is None:
        return Config()
    at = top.key(doc, "config")
    cfg: Config = _entity(Config, node, at)
    for f in dataclasses.fields(Config):
        v = getattr(cfg, f.name)
        if v is not None and v != f.default:
            try:
                coerce_config(f.name, v)
            except LizaError as e:
                at.key(node, f.name).fail(str(e))
    return cfg


def _check_tasks(tasks: dict[str, Task], agents: dict[str, Agent],
                 where: dict[str, _Where], warnings: list[str] | None) -> None:
    active: dict[str, str] = {}
    for t in tasks.values():
        at = where[t.id]
        for dep in t.depends_on:
            _ref(dep, tasks, "dependency", at)
        _ref(t.supersedes, tasks, "task", at)
        for s in t.superseded_by:
            _ref(s, tasks, "successor", at)
        if t.status == S.CLAIMED:  # other holders may have exited since (a blocked coder...)
            _ref(t.assigned_to, agents, "agent", at)
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
    top = _Where(name, "", 1)
    if doc is None:
        return []
    if not isinstance(doc, list):
        top.fail("log.yaml must be a list of entries")
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
            entry[str(k)] = _scalar(str, v, at.key(node, k), str(k))
        for k in ("timestamp", "agent", "action"):
            if k not in entry:
                at.fail(f"missing required field {k!r}")
        out.append(entry)
    return out


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()
