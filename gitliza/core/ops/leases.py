"""Who holds a task, and until when: lease lengths and liveness, whether an agent still holds its
current task, and the holder check that tells a coder who lost its task to stand down. Shared by
the coder ops (work.py) and the reviewer ops (review.py)."""
from __future__ import annotations

from gitliza.core.model import Agent, Task
from gitliza.core.ops.base import Ctx, replace
from gitliza.core.states import AgentState, TaskState
from gitliza.errors import LeaseLost

S = TaskState
A = AgentState
STAND_DOWN = "stand down: stop work on it and exit (42)"


def lease_seconds(ctx: Ctx, task: Task | None) -> int:
    """The lease length for work on `task`: its override, else the board's config."""
    if task is not None and task.lease_duration_override is not None:
        return task.lease_duration_override
    return int(ctx.board.config.lease_duration)


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
        return t.status == S.READY_FOR_REVIEW and t.reviewing_by == me.id and \
            lease_live(t.review_lease_expires, ctx.op.time)
    return me.status in (A.WAITING, A.HANDOFF)


def drop_stale_review(ctx: Ctx, me: Agent) -> None:
    """A reviewer starting over lets go of its expired review lease, so the task is reviewable."""
    t = ctx.task(me.current_task) if me.current_task else None
    if me.status == A.REVIEWING and t is not None and t.reviewing_by == me.id:
        ctx.put_task(replace(t, reviewing_by=None, review_lease_expires=None))


def holder_check(ctx: Ctx, t: Task, what: str) -> Agent:
    """The actor must be the coder holding `t` with a live lease; otherwise it must stand down."""
    me = ctx.require_agent()
    if t.status == S.CLAIMED and t.assigned_to != me.id:
        raise LeaseLost(f"{t.id} is claimed by {t.assigned_to}, not {me.id}: {STAND_DOWN}")
    if t.status == S.CLAIMED and not lease_live(t.lease_expires, ctx.op.time):
        raise LeaseLost(f"{me.id}'s lease on {t.id} expired at {t.lease_expires}; cannot {what}: "
                        f"{STAND_DOWN}")
    return me
