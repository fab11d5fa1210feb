"""Who holds a task, and until when: lease lengths and liveness, whether an agent still holds its
current task, and the holder check that tells a coder who lost its task to stand down. Shared by
the coder ops (work.py) and the reviewer ops (review.py)."""
from __future__ import annotations

from gitliza.core.quorum import review_lease, with_review_lease
from gitliza.core.presence import leasemarks
from gitliza.core.board import Board
from gitliza.core.model import Agent, Task
from gitliza.core.ops.base import Ctx, replace
from gitliza.core.states import AgentState, TaskState
from gitliza.errors import AlreadyHeld, IllegalTransition, LeaseLost

S = TaskState
A = AgentState
STAND_DOWN = "stand down: stop work on it and exit (42)"


def lease_seconds(ctx: Ctx, task: Task | None) -> int:
    """The lease length for work on `task`: its override, else the board's config."""
    return lease_seconds_of(ctx.board, task)


def lease_seconds_of(board: Board, task: Task | None) -> int:
    if task is not None and task.lease_duration_override is not None:
        return task.lease_duration_override
    return int(board.config.lease_duration)


def lease_live(expires: str | None, now: str) -> bool:
    return expires is not None and expires > now


def holds_live(ctx: Ctx, me: Agent) -> bool:
    """Whether `me` still holds its current task with a live lease. An agent whose lease expired
    (or was taken over) is WORKING/REVIEWING on the board until it acts again; it must be able to
    start over rather than be stuck behind a hold it no longer has."""
    t = ctx.task(me.current_task) if me.current_task else None
    if t is None:
        return False
    if me.status == A.WORKING:
        return t.status == S.CLAIMED and t.assigned_to == me.id and \
            lease_live(t.lease_expires, ctx.op.time)
    if me.status == A.REVIEWING:
        return t.status == S.READY_FOR_REVIEW and \
            lease_live(review_lease(t, me.id), ctx.op.time)
    return me.status in (A.WAITING, A.HANDOFF)


def drop_stale_review(ctx: Ctx, me: Agent) -> None:
    """A reviewer starting over lets go of its expired review lease, so the task is reviewable."""
    t = ctx.task(me.current_task) if me.current_task else None
    if me.status == A.REVIEWING and t is not None and review_lease(t, me.id) is not None:
        ctx.put_task(with_review_lease(t, me.id, None))


def holder_check(ctx: Ctx, t: Task, what: str) -> Agent:
    """The actor must be the coder holding `t` with a live lease; otherwise it must stand down."""
    me = ctx.require_agent()
    if t.status == S.CLAIMED and t.assigned_to != me.id:
        raise LeaseLost(f"{t.id} is claimed by {t.assigned_to}, not {me.id}: {STAND_DOWN}")
    if t.status == S.CLAIMED and not lease_live(t.lease_expires, ctx.op.time):
        raise LeaseLost(f"{me.id}'s lease on {t.id} expired at {t.lease_expires}; cannot {what}: "
                        f"{STAND_DOWN}")
    return me


def judge_takeover(ctx: Ctx, t: Task, kind: str, takeover: str | None) -> bool:
    """Whether the op's own takeover record decides if it may replace the lease of `kind` on `t`
    held by someone else (True: it may, else this raises), or the op predates takeover records
    (False: the caller applies format 1's rule, op time against the recorded expiry).

    `takeover` is what the writer judged on its own clock (core/presence/leasemarks.py): NOBODY (it saw no
    one else's lease, so neither a replay of it nor a late write ever takes one over) or the
    evidence that the holder's lease expired for it, checked against the lease the board holds."""
    if takeover is None:
        return False
    current = leasemarks.lease_of(t, kind)
    if takeover == leasemarks.NOBODY:
        if current is None:
            return True
        what = "claimed" if kind == leasemarks.CLAIM else "being reviewed"
        raise AlreadyHeld(f"{t.id} is already {what} by {current.agent} (lease until "
                          f"{current.mark}); this op judged no one's lease, so it takes over none",
                          task=t.id, holder=current.agent)
    leasemarks.check_takeover(current, leasemarks.Evidence.decode(takeover), lease_seconds(ctx, t),
                              ctx.op.time)
    return True
