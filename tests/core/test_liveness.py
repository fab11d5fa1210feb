"""The effective lease (core/presence/renewals.py): the rules a renewal off the audit chain must pass to
count, each attacked with the renewal a rogue or stale writer would make; the op that carries
renewals replays to the same board."""
from __future__ import annotations

import dataclasses
import itertools

import pytest

from gitliza.core import clock
from gitliza.core.board import Board, MemorySource
from gitliza.core.presence.renewals import (Renewal, effective, lease_of, overlay, push_due,
                                    relevant)
from gitliza.core.model import Agent, Config, Goal, Supervisor, Task
from gitliza.core.ops.base import load_all, op_from_record
from gitliza.core.ops.engine import apply
from gitliza.core.states import AgentState, Role, TaskState
from gitliza.errors import IllegalTransition

T0 = "2030-01-01T00:00:00Z"


def at(seconds: int) -> str:
    return clock.plus(T0, seconds)


def board(generation: int | None = 3, status: TaskState = TaskState.CLAIMED) -> Board:
    t = Task(id="t1", description="d", status=status, priority=1, created=T0,
             assigned_to="c1" if status == TaskState.CLAIMED else None,
             reviewing_by="c1" if status == TaskState.READY_FOR_REVIEW else None,
             lease_expires=at(300) if status == TaskState.CLAIMED else None,
             review_lease_expires=at(300) if status == TaskState.READY_FOR_REVIEW else None,
             worktree=".worktrees/t1", base_commit="a" * 40, spec_ref="s", done_when="w",
             scope="x", review_commit="b" * 40 if status == TaskState.READY_FOR_REVIEW else None)
    role = Role.CODER if status == TaskState.CLAIMED else Role.CODE_REVIEWER
    a = Agent(id="c1", role=role,
              status=AgentState.WORKING if status == TaskState.CLAIMED else AgentState.REVIEWING,
              current_task="t1", lease_expires=at(300), heartbeat=T0)
    e: dict[tuple[str, str], object] = {
        ("goal", ""): Goal(id="g", description="g", created=T0), ("config", ""): Config(),
        ("tasks", "t1"): t, ("agents", "c1"): a,
        ("agents", "c2"): Agent(id="c2", role=Role.CODER)}
    if generation is not None:
        e[("supervisors", "c1")] = Supervisor(agent="c1", generation=generation, started=T0,
                                              expires=at(300))
    return Board(MemorySource(e))


def renewal(beat: int, lease: int | None = None, gen: int | None = 3, task: str | None = "t1",
            token: int | None = None) -> Renewal:
    return Renewal(agent="c1", heartbeat=at(beat), generation=gen, task=task,
                   lease_expires=None if lease is None else at(lease),
                   supervisor_expires=None if token is None else at(token))


def lease(b: Board) -> str | None:
    t = b.task("t1")
    assert t is not None
    return t.lease_expires or t.review_lease_expires


def test_a_renewal_extends_the_task_the_agent_and_the_token() -> None:
    b = overlay(board(), [renewal(200, 500, token=500)])
    assert lease(b) == at(500)
    a = b.agent("c1")
    assert a is not None and a.lease_expires == at(500) and a.heartbeat == at(200)
    assert b.get("supervisors", "c1").expires == at(500)
    rb = overlay(board(status=TaskState.READY_FOR_REVIEW), [renewal(200, 500)])
    assert lease(rb) == at(500)


def test_stale_foreign_forged_and_late_renewals_change_nothing() -> None:
    b = board()
    for r in (renewal(200, 500, gen=2),        # a superseded supervisor
              renewal(200, 500, gen=None),     # no supervisor, while generation 3 holds c1
              renewal(200, 500, task="t9"),    # a task the agent does not hold
              renewal(200, 200 + 301),         # more than a lease after its heartbeat
              renewal(200, 250),               # earlier than the lease the board has
              Renewal(agent="c1", heartbeat="yesterday", generation=3, task="t1",
                      lease_expires=at(500)),  # a malformed time
              Renewal(agent="nobody", heartbeat=at(200), generation=3, task="t1",
                      lease_expires=at(500))):
        assert lease(overlay(b, [r])) == at(300), r
    # The lease moved to another coder: c1's renewal does not extend c2's claim.
    t = b.task("t1")
    assert t is not None
    taken = b.with_changes({("tasks", "t1"): dataclasses.replace(t, assigned_to="c2")})
    assert lease(overlay(taken, [renewal(200, 500)])) == at(300)
    # An ended token is never revived.
    ended = b.with_changes({("supervisors", "c1"): Supervisor(agent="c1", generation=3,
                                                              started=T0, expires=None)})
    assert overlay(ended, [renewal(200, 500, token=500)]).get("supervisors", "c1").expires \
        is None


def test_the_order_of_renewals_does_not_matter() -> None:
    rs = [renewal(100, 400), renewal(200, 500), renewal(250, 540, token=540), renewal(50, 350)]
    results = {tuple(sorted((k, repr(v)) for k, v in effective(board(), list(p)).items()))
               for p in itertools.permutations(rs)}
    assert len(results) == 1
    assert lease(overlay(board(), rs)) == at(540)


def test_an_op_carrying_renewals_replays_to_the_same_board() -> None:
    ops = load_all()
    b = board()
    r = renewal(250, 550)
    # c2 claims t1 at 560: past the renewed lease. Without the renewal the board alone says the
    # lease ended at 300; with it the claim at 400 is refused.
    live = relevant(b, "c2", ["t1"], [r])
    assert live == (r,)
    claim = ops["claim"]
    early = claim(actor="c2", time=at(400), task="t1", worktree=".worktrees/t1",
                  base_commit="a" * 40, live=live)
    with pytest.raises(IllegalTransition, match="already claimed by c1"):
        apply(b, early)
    late = claim(actor="c2", time=at(560), task="t1", worktree=".worktrees/t1",
                 base_commit="a" * 40, live=live)
    replayed = op_from_record("claim", late.actor, late.time, late.args())
    first, second = apply(b, late), apply(b, replayed)
    assert replayed == late and first.changes == second.changes
    t = first.board.task("t1")
    assert t is not None and t.assigned_to == "c2"
    a = first.board.agent("c1")
    assert a is not None and a.heartbeat == at(250)  # the renewal judged, recorded


def test_push_due_is_a_third_of_a_lease() -> None:
    assert push_due(None, at(0), 300)
    shared = renewal(0, 300)
    assert not push_due(shared, at(99), 300)
    assert push_due(shared, at(100), 300)


def test_lease_of_is_the_mark_an_observer_judges() -> None:
    assert lease_of(board(), [], "t1") == ("c1", at(300))
    assert lease_of(board(), [renewal(200, 500)], "t1") == ("c1", at(500))
    assert lease_of(board(status=TaskState.READY_FOR_REVIEW), [renewal(100, 400)], "t1") == \
        ("c1", at(400))
    assert lease_of(board(), [], "nope") == (None, None)
