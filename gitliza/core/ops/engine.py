"""`apply(board, op)`: one op against a board, giving the entities it changed and one event.

An op is a small frozen record (ops/base.py) that carries its actor and its time. `apply`
validates it against the board and the transition table and returns the entities it changed plus
one event; it never reads the clock or touches git. Replaying the recorded op on the parent board
must give the same changes, which is what `verify` checks. After the op's own rules, `apply` runs
the rules that follow every op (`completes`: a sprint completes when its planned tasks are
terminal; the sprint's scope is set by ops/sprint.py) and checks the agent moves against the agent
state table. No op module is imported here, so a read command, which imports `apply` through the
store but applies nothing, loads no op.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from gitliza.core import clock, lockscope

from gitliza.core.presence import renewals
from gitliza.core.board import Board, Changes
from gitliza.core.ids import check_id
from gitliza.core.model import SprintStatus
from gitliza.core.ops.base import Ctx, Event, Op, Outcome, replace
from gitliza.core.states import AGENT_TRANSITIONS, HUMAN_ACTOR, TERMINAL
from gitliza.errors import InconsistentState, LeaseLost, NoBoard, ValidationError


def apply(board: Board, op: Op) -> Outcome:
    """Validate `op` against `board` and return what it changes. Raises a LizaError, changing
    nothing, when the op is not a legal transition for this actor at this time."""
    clock.check_ts(op.time, "op time")
    _check_text([getattr(op, f.name) for f in dataclasses.fields(op)], op.NAME)
    if op.actor != HUMAN_ACTOR:
        check_id(op.actor, "agent id")
    if op.NAME != "init" and not board.initialized:
        raise NoBoard()
    if op.gen is not None:
        _check_generation(board, op)
    base = board
    folded = renewals.effective(board, op.live) if op.live else {}
    if folded:
        board = board.with_changes(folded)
    ctx = Ctx(board, op)
    ctx.changes.update(folded)
    op.run(ctx)
    completes(ctx)
    event = Event(op=op.NAME, actor=op.actor, time=op.time, task=ctx.task_id,
                  from_state=ctx.from_state, to_state=ctx.to_state, reason=ctx.reason,
                  summary=ctx.summary or _default_summary(op, ctx))
    changes = {k: v for k, v in ctx.changes.items() if _differs(base, k, v)}
    _check_agent_moves(base, changes)
    after = base.with_changes(changes)
    _check_locks(base, after, changes)
    return Outcome(changes=changes, event=event, board=after, notices=tuple(ctx.notices))


def completes(ctx: Ctx) -> None:
    """After an op: a sprint IN_PROGRESS whose planned tasks (there must be some) are all terminal
    now, and were not all before, is COMPLETED (sprint-governance.md)."""
    sp = ctx.get("sprint")
    if sp is None or sp.status != SprintStatus.IN_PROGRESS or not sp.scope.planned:
        return
    if not any(k[0] in ("tasks", "archive") and k[1] in sp.scope.planned for k in ctx.changes):
        return
    if all((t := ctx.task(tid)) is not None and t.status in TERMINAL for tid in sp.scope.planned):
        ctx.put("sprint", "", replace(sp, status=SprintStatus.COMPLETED,
                                      timeline=replace(sp.timeline, ended=ctx.op.time)))
        ctx.notices.append(f"sprint {sp.id} COMPLETED: its planned tasks are terminal")


def _check_locks(base: Board, board: Board, changes: Changes) -> None:
    """No op may leave two tasks in flight with overlapping lock scopes (core/lockscope.py):
    Claim says so in its own words; this is the rule every op, and replay, meets. The board is
    walked only when this op put a task in flight with a lock scope it did not hold before (a
    heartbeat or a submit of a task already in flight changes no lock)."""
    mine = [t for (coll, key), t in changes.items() if coll == "tasks" and t is not None
            and t.lock_scope and t.status in lockscope.IN_FLIGHT
            and not _held_before(base.get(coll, key), t)]
    if not mine:
        return
    tasks = list(board.tasks())
    for t in mine:
        hit = lockscope.holder(tasks, t.id, t.lock_scope)
        if hit is not None:
            raise ValidationError(f"{t.id}: its lock scope ({hit[2]}) overlaps that of {hit[0]} "
                                  f"({hit[1]}), in flight; it must wait until {hit[0]} is "
                                  "merged or ended")


def _held_before(old: Any, new: Any) -> bool:
    return old is not None and old.status in lockscope.IN_FLIGHT and \
        old.lock_scope == new.lock_scope


def _check_generation(board: Board, op: Op) -> None:
    sup = board.get("supervisors", op.actor)
    if sup is None or sup.generation != op.gen:
        now = f"generation {sup.generation}" if sup is not None else "no supervisor"
        raise LeaseLost(f"{op.actor}: supervisor generation {op.gen} was superseded ({now} "
                        "holds the id): stand down")


def _check_text(value: Any, where: str) -> None:
    """Every string an op carries must be storable as UTF-8 (no lone surrogates, which a
    command line can smuggle in from undecodable bytes)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValidationError(f"{where}: text is not valid UTF-8") from None
        if "\x00" in value:  # git cuts a commit message (and refuses a reflog line) at NUL
            raise ValidationError(f"{where}: text must not contain a NUL character")
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_text(v, f"{where} {k}")
    elif isinstance(value, (list, tuple)):
        for v in value:
            _check_text(v, where)


def _check_agent_moves(board: Board, changes: Changes) -> None:
    """Every agent status change an op makes must be a row of the agent table (states.py)."""
    for (coll, key), new in changes.items():
        if coll != "agents" or new is None:
            continue
        old = board.get(coll, key)
        if old is not None and old.status != new.status and \
                (old.status, new.status) not in AGENT_TRANSITIONS:
            raise InconsistentState(f"agent {key}: {old.status} -> {new.status} is not in the "
                                    "agent state table")


def _differs(board: Board, key: tuple[str, str], value: Any) -> bool:
    return bool(board.get(*key) != value)


def _default_summary(op: Op, ctx: Ctx) -> str:
    parts = [op.NAME]
    if ctx.task_id:
        parts.append(ctx.task_id)
    if ctx.from_state is not None or ctx.to_state is not None:
        parts.append(f"({ctx.from_state or 'new'} -> {ctx.to_state})")
    parts.append(f"by {op.actor}")
    return " ".join(parts)
