"""Op records and the machinery every op shares.

An op is a small frozen record (its name is the CLI command's word) that carries its actor and its
time; `run(ctx)` is its rule. Here: the `Op` base and the registry of op classes (`OPS`,
`register_op`, `load_all`, `op_from_record` for replay), `Ctx` (the board as the op changes it,
the transition table check, the event being built), what applying an op gives (`Event`,
`Outcome`) and the small helpers op modules share, so that an op module imports no other op
module. `apply` (ops/engine.py) runs an op.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from gitliza.core.encoding import codec
from gitliza.core.board import Board, Changes
from gitliza.core.ids import check_id
from gitliza.core.presence.renewals import Renewal
from gitliza.core.model import Agent, GoalStatus, HistoryEntry, Task
from gitliza.core.states import (BOARD_OPS, FORBIDDEN, HUMAN_ACTOR, TERMINAL, AgentState, Role,
                                 TaskState, Transition, lookup, roles_for, sources_of)
from gitliza.errors import (IllegalTransition, LizaError, NotFound, PermissionDenied,
                            ValidationError)

_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


@dataclass(frozen=True, slots=True)
class Event:
    """The append-only transition event (orchestrator-state-machine.md "Event Requirements")."""

    op: str
    actor: str
    time: str
    task: str | None = None
    from_state: TaskState | None = None
    to_state: TaskState | None = None
    reason: str | None = None
    summary: str = ""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What applying an op gives: the entity changes, the event, and the board after."""

    changes: Changes
    event: Event
    board: Board
    notices: tuple[str, ...] = ()  # things the caller must tell the user (e.g. "stand down")


@dataclass(frozen=True, kw_only=True)
class Op:
    NAME: ClassVar[str] = ""
    actor: str
    time: str
    # The supervisor generation the writer runs under (`git liza agent`, see ops/control.py);
    # None for everyone else. A superseded generation's ops are refused (LeaseLost).
    gen: int | None = None
    # The renewals off the chain (refs/liza/live/*, core/presence/renewals.py) the writer judged leases by:
    # `apply` lays them over the board first, so replay needs nothing but the op. Empty (and left
    # out of the record) for ops written before liveness left the chain.
    live: tuple[Renewal, ...] = ()

    def args(self) -> dict[str, Any]:
        """The op's parameters (everything but actor and time) as plain JSON-able data."""
        data = codec.encode(self)
        data.pop("actor", None)
        data.pop("time", None)
        return data

    def run(self, ctx: Ctx) -> None:  # pragma: no cover - every op overrides it
        raise NotImplementedError


OPS: dict[str, type[Op]] = {}


def op_modules() -> list[str]:
    """Every module of this package (found on disk, not listed: a new op module is one file):
    those that define ops register them with @register_op when imported."""
    import importlib
    import pkgutil
    package = importlib.import_module(__package__ or "gitliza.core.ops")
    return [f"{package.__name__}.{m.name}" for m in pkgutil.iter_modules(package.__path__)]


def load_all() -> dict[str, type[Op]]:
    """Import every op module (each registers its ops) and return the registry."""
    import importlib
    for name in op_modules():
        importlib.import_module(name)
    return OPS


def register_op(cls: type[Op]) -> type[Op]:
    assert cls.NAME and cls.NAME not in OPS, cls
    OPS[cls.NAME] = cls
    return cls


def op_from_record(name: str, actor: str, time: str, args: dict[str, Any]) -> Op:
    """Rebuild an op from what a commit recorded (its trailers). Strict: forged args are refused."""
    cls = OPS.get(name) or load_all().get(name)
    if cls is None:
        raise ValidationError(f"unknown op {name!r}")
    if not isinstance(args, dict) or "actor" in args or "time" in args:
        raise ValidationError(f"op {name}: malformed arguments")
    try:
        return codec.decode(cls, {**args, "actor": actor, "time": time}, f"op {name}")
    except LizaError as e:
        raise ValidationError(str(e)) from e


class Ctx:
    """What an op's `run` works with: the board as it changes, the event being built."""

    def __init__(self, board: Board, op: Op) -> None:
        self.op = op
        self.board = board
        self.changes: Changes = {}
        self.notices: list[str] = []
        self.task_id: str | None = None
        self.from_state: TaskState | None = None
        self.to_state: TaskState | None = None
        self.reason: str | None = None
        self.summary: str = ""

    # -- reading ---------------------------------------------------------------------------------
    def get(self, coll: str, key: str = "") -> Any | None:
        k = (coll, key)
        return self.changes[k] if k in self.changes else self.board.get(coll, key)

    def task(self, task_id: str) -> Task | None:
        t = self.get("tasks", task_id)
        return t if t is not None else self.get("archive", task_id)

    def require_task(self, task_id: str) -> Task:
        check_id(task_id, "task id")
        t = self.task(task_id)
        if t is None:
            raise NotFound(f"no task {task_id!r}", hint="`git liza status` lists the tasks")
        return t

    def agent(self, agent_id: str) -> Agent | None:
        a: Agent | None = self.get("agents", agent_id)
        return a

    def role(self) -> Role:
        actor = self.op.actor
        if actor == HUMAN_ACTOR:
            return Role.HUMAN
        a = self.agent(actor)
        if a is None:
            raise PermissionDenied(
                f"{actor!r} is not a registered agent",
                hint=f"`git liza register {actor} --role ROLE`, or set --agent / LIZA_AGENT_ID")
        return a.role

    def allowed(self, rule: str | None = None, what: str | None = None, *,
                hint: str | None = None) -> Role:
        """The actor's role, checked against the table of the ops that move no task
        (states.BOARD_OPS, row `rule`: by default this op's name); `what` names the act in the
        refusal. A task's transition is checked against its own row by `transition`."""
        name = rule or self.op.NAME
        roles = BOARD_OPS[name]
        role = self.role()
        if role not in roles:
            raise PermissionDenied(
                f"{what or name} is not allowed for {self.op.actor} (role {role.value}); "
                f"allowed: {', '.join(sorted(r.value for r in roles))}", hint=hint)
        return role

    def require_agent(self) -> Agent:
        a = self.agent(self.op.actor)
        if a is None:
            self.role()  # raises the helpful error
            raise PermissionDenied(f"{self.op.actor!r} is a human, not an agent: this op needs one")
        return a

    # -- writing ---------------------------------------------------------------------------------
    def put(self, coll: str, key: str, entity: Any) -> None:
        self.changes[(coll, key)] = entity

    def put_task(self, task: Task) -> None:
        # Terminal tasks live under archive/ so the live tree stays small (DESIGN.md section 1).
        live = task.status not in TERMINAL
        self.changes[("tasks" if live else "archive", task.id)] = task
        self.changes[("archive" if live else "tasks", task.id)] = None

    def put_agent(self, agent: Agent) -> None:
        self.changes[("agents", agent.id)] = agent

    def history(self, task: Task, event: str, **kw: str | None) -> tuple[HistoryEntry, ...]:
        return task.history + (HistoryEntry(time=self.op.time, event=event, **kw),)

    def transition(self, task: Task | None, target: TaskState, task_id: str | None = None,
                   reason: str | None = None, as_op: str | None = None) -> Transition:
        """Check the table for (op, current state, target) and the actor's role; record the event.
        `as_op`: the table row's op when this op does another's transition (add-tasks: add)."""
        source = task.status if task is not None else None
        tid = task.id if task is not None else task_id
        name = as_op or self.op.NAME
        tr = lookup(name, source, target)
        if tr is None:
            raise IllegalTransition(_why_illegal(name, tid, source, target))
        role = self.role()
        roles = roles_for(tr, task is not None and task.awaiting_human)
        if role not in roles:
            allowed = ", ".join(sorted(r.value for r in roles))
            waits = " (AWAITING HUMAN: the question is the human's to answer)" \
                if roles != tr.roles else ""
            raise PermissionDenied(
                f"{name} {tid} ({source} -> {target}) is not allowed for "
                f"{self.op.actor} (role {role.value}){waits}; allowed: {allowed}")
        self.task_id, self.from_state, self.to_state = tid, source, target
        if reason is not None:
            self.reason = reason
        return tr


def _why_illegal(op: str, tid: str | None, source: TaskState | None, target: TaskState) -> str:
    if source in TERMINAL:
        return f"{op} {tid}: task is {source}, a terminal state"
    named = FORBIDDEN.get((source, target)) if source is not None else None
    if named:
        return f"{op} {tid}: {source} -> {target} is forbidden ({named})"
    starts = ", ".join(str(s) for s in sources_of(op) if s is not None) or "nowhere"
    return f"{op} {tid}: task is {source}; {op} applies to {starts}"


# -- helpers shared by ops (here, so that an op module imports no other) ------------------------
def require_goal_open(ctx: Ctx) -> None:
    """New work (adding a task, claiming one) belongs to a goal in progress."""
    g = ctx.board.goal
    if g.status != GoalStatus.IN_PROGRESS:
        raise ValidationError(f"goal {g.id} is {g.status.value}: no new work on it",
                              hint="`git liza init GOAL` starts the next goal on this board")


def free_agent(ctx: Ctx, task: Task, agent_id: str | None) -> None:
    """An agent whose current task was taken from it goes back to IDLE."""
    if agent_id is None:
        return
    a = ctx.agent(agent_id)
    if a is not None and a.current_task == task.id:
        ctx.put_agent(replace(a, status=AgentState.IDLE, current_task=None, lease_expires=None))


# -- small validators shared by ops ---------------------------------------------------------------
def need_text(value: str | None, what: str, max_len: int = 4000) -> str:
    if value is None or not value.strip():
        raise ValidationError(f"{what} must not be empty")
    if len(value) > max_len:
        raise ValidationError(f"{what} is longer than {max_len} characters")
    return value


def check_sha(value: str | None, what: str) -> str:
    if value is None or not _SHA.match(value):
        raise ValidationError(f"{what} {value!r} is not a full hex commit id")
    return value


def replace(entity: Any, **kw: Any) -> Any:
    return dataclasses.replace(entity, **kw)
