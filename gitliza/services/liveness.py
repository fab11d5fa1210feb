"""Renewing an agent's liveness off the audit chain (core/presence/renewals.py, git/liveref.py).

`renew` is what a heartbeat and a supervisor token renewal do now: check against the board (with
the effective leases) that the agent still holds what it renews, exactly as the heartbeat op
did (a coder that lost its task, or whose lease expired, gets LeaseLost: stand down; a superseded
supervisor gets LeaseLost too), then write one renewal on `refs/liza/live/<agent>`: no commit on
refs/liza/state. Two cases still go to the board, because they are protocol, not liveness: an
agent in HANDOFF that beats again goes back to WORKING (the heartbeat op's move), and a token
that already expired is renewed by the `supervise renew` op (a renewal off the chain never
revives an expired lease or token: `effective` ignores it).

With a sync remote, the renewal is pushed (its ref alone, no fetch) when the remote's copy is
older than a third of a lease (sync/renewalpush.py): a working agent pushes about every other
heartbeat, its token renewals riding along, not a fetch and a push per heartbeat and per renewal.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from gitliza.core.quorum import review_lease
from gitliza.core import clock
from gitliza.core.board import Board
from gitliza.core.presence import renewals
from gitliza.core.presence.renewals import Renewal
from gitliza.core.model import Agent, FORMAT_VERSION
from gitliza.core.states import AgentState, TaskState
from gitliza.errors import LeaseLost, NotFound
from gitliza.git import liveref

if TYPE_CHECKING:
    from gitliza.services.api import Liza

A = AgentState
S = TaskState
STAND_DOWN = "stand down: stop work on it and exit (42)"


def renew(liza: Liza, *, task: str | None = None, extend_task: bool = True,
          renew_token: bool = True) -> Renewal:
    """Renew `liza.agent`'s liveness at `liza.now()`: its heartbeat; with `extend_task` the lease
    of the task it holds (`task`, when given, must be that task: else LeaseLost); with
    `renew_token` and a supervisor generation (`liza.gen`), its token. What is not renewed is
    carried over from the effective record, so the newest record always holds all three."""
    from gitliza.core.ops.base import load_all
    agent = liza.agent
    now = liza.now()
    board = liza.board()  # with the effective leases
    if board.format_version is not None and board.format_version < FORMAT_VERSION:
        # A format-1 reader sees no live ref: it would judge this agent's lease by the board
        # alone and take it over. The upgrade commit makes such a reader refuse the board
        # instead (docs/upgrading.md), as the first board write of this gitliza does.
        from gitliza.core.ops.upgrade import Upgrade
        liza.do(Upgrade, source=board.format_version, target=FORMAT_VERSION)
        board = liza.board()
    me = board.agent(agent)
    if me is None:
        raise NotFound(f"{agent!r} is not a registered agent",
                       hint=f"`git liza register {agent} --role ROLE`")
    sup = board.get("supervisors", agent)
    if liza.gen is not None and (sup is None or sup.generation != liza.gen):
        held = f"generation {sup.generation}" if sup is not None else "no supervisor"
        raise LeaseLost(f"{agent}: supervisor generation {liza.gen} was superseded ({held} "
                        "holds the id): stand down")
    if me.status == A.HANDOFF or (liza.gen is not None and sup is not None and (
            sup.expires is None or sup.expires <= now) and renew_token):
        # Protocol, not liveness (the module docstring): the board ops, as before. Only here
        # are the op classes loaded: every op module (~80 dataclasses) is most of a CLI start.
        ops = load_all()
        if me.status == A.HANDOFF:
            liza.do(ops["heartbeat"], task=task, keep_handoff=True)
        if renew_token and liza.gen is not None:
            liza.do(ops["supervise"], mode="renew", gen=liza.gen)
        board = liza.board()
        me = board.agent(agent)
        sup = board.get("supervisors", agent)
        assert me is not None
    try:
        tid, lease = _task_lease(board, me, task, now, extend_task)
    except LeaseLost:
        if task is not None or extend_task:
            raise
        tid, lease = None, None  # a token renewal alone: the task's fate is the keeper's
    token = None  # the token's expiry: renewed by its supervisor, carried over by anyone else
    if sup is not None and sup.expires is not None:
        token = clock.plus(now, int(board.config.lease_duration)) \
            if renew_token and liza.gen is not None else sup.expires
    generation = sup.generation if sup is not None else None
    r = Renewal(agent=agent, heartbeat=now, generation=generation, task=tid,
                lease_expires=lease, supervisor_expires=token)
    liza.store.check_can_sign(board, agent)
    done = liveref.write(liza.repo, agent, lambda _cur: r, liza.store.signer().sign)
    if tid is not None:
        # This clone saw the new mark now, as after a board write (Liza.apply): the wait before
        # anyone here may take the lease over starts at the renewal, not at the next look.
        from gitliza.services import leasewatch
        renewed = renewals.overlay(board, [done]).task(tid)
        if renewed is not None:
            leasewatch.observe_tasks(liza.repo, [renewed], now)
    if liza.sync_remote() is not None:  # a clone that works alone loads no transport
        from gitliza.services.sync.renewalpush import share
        share(liza, done, int(board.config.lease_duration))
    _view(liza)
    return done


def renewal_data(r: Renewal) -> dict[str, object]:
    """What the CLI's `heartbeat --json` and the MCP tool return for a renewal."""
    return {"agent": r.agent, "heartbeat": r.heartbeat, "task": r.task,
            "lease_expires": r.lease_expires, "supervisor_expires": r.supervisor_expires,
            "generation": r.generation, "live_commit": r.commit}


def _view(liza: Liza) -> None:
    """`git config liza.materialize true`: the view's `heartbeat` and `lease_expires` follow the
    renewal as they followed the heartbeat op (a failure is a notice, as after a commit)."""
    from gitliza.services.session import materialize_on
    if not materialize_on(liza.repo):
        return
    from gitliza.services.views.materialize import after_commit
    after_commit(liza, None)


def _task_lease(board: Board, me: Agent, task: str | None, now: str,
                extend: bool) -> tuple[str | None, str | None]:
    """The task `me` holds and the lease this renewal gives it (the heartbeat op's checks)."""
    if task is not None and (me.current_task != task or me.status not in (
            A.WORKING, A.REVIEWING, A.HANDOFF, A.WAITING)):
        raise LeaseLost(f"{me.id} does not hold {task} (it is {me.status}"
                        + (f" on {me.current_task}" if me.current_task else "")
                        + f"): {STAND_DOWN}")
    t = board.task(me.current_task) if me.current_task else None
    seconds = int(board.config.lease_duration)
    if t is not None and t.lease_duration_override is not None:
        seconds = t.lease_duration_override
    if t is not None and me.status in (A.WORKING, A.HANDOFF) and t.status == S.CLAIMED:
        if t.assigned_to != me.id:
            raise LeaseLost(f"{t.id} is claimed by {t.assigned_to}, not {me.id}: {STAND_DOWN}")
        if not (t.lease_expires and t.lease_expires > now):
            raise LeaseLost(f"{me.id}'s lease on {t.id} expired at {t.lease_expires}; cannot "
                            f"heartbeat: {STAND_DOWN}")
        return t.id, clock.plus(now, seconds) if extend else t.lease_expires
    if t is not None and me.status == A.REVIEWING and t.status == S.READY_FOR_REVIEW:
        mine = review_lease(t, me.id)
        if not (mine and mine > now):
            raise LeaseLost(f"{me.id}'s review lease on {t.id} is gone: {STAND_DOWN}")
        return t.id, clock.plus(now, seconds) if extend else mine
    if me.status in (A.WORKING, A.REVIEWING):
        raise LeaseLost(f"{me.id} no longer holds {me.current_task}: {STAND_DOWN}")
    return None, None
