"""Whether an agent's supervisor is running, as its readers tell it (status, top, the web board,
doctor): from the supervisor's token on the board with the renewals of refs/liza/live/<agent>
laid over it (core/presence/renewals.py `overlay`), never from the task's lease alone. A stopped
supervisor (`supervise end` recorded: its token's `expires` is None) leaves its agent's task held
until the lease runs out; the reader says so, when the lease ends, and what resumes it (as
systemd's "inactive (dead)" does for a unit).

Pure: the board and the time in, plain values out.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from gitliza.core import clock
from gitliza.core.board import Board
from gitliza.core.model import Agent, Supervisor
from gitliza.core.states import Role, TaskState


class SupState(StrEnum):
    LIVE = "live"  # its token runs (renewed on the board or on the live ref)
    STOPPED = "stopped"  # `supervise end` recorded: it exited
    EXPIRED = "expired"  # its token ran out unrenewed: killed, or its machine is gone
    NONE = "none"  # no supervisor ever ran this agent (registered by hand)


@dataclass(frozen=True, slots=True)
class Supervision:
    agent: str
    state: SupState
    generation: int | None = None
    task: str | None = None  # the task the agent holds on the board, if any
    lease_expires: str | None = None  # that task's (effective) lease
    review: bool = False  # the lease is a review lease (no `release` for it)

    @property
    def running(self) -> bool:
        return self.state == SupState.LIVE

    def line(self, now: str) -> str | None:
        """What a reader prints for a held task whose supervisor is not running (None when it
        runs, or the agent holds nothing): 'mul: held by coder-1, supervisor stopped, lease ends
        in 4m; `git liza team` resumes it, or `git liza release mul`'."""
        if self.running or self.task is None or self.state == SupState.NONE:
            return None
        what = {SupState.STOPPED: "supervisor stopped",
                SupState.EXPIRED: "supervisor gone (its token expired unrenewed)"}[self.state]
        if self.lease_expires is None or self.lease_expires <= now:
            lease = "lease ended" + (f" {ago(self.lease_expires, now)} ago"
                                     if self.lease_expires else "")
            return f"{self.task}: held by {self.agent}, {what}, {lease}: another agent may " \
                   f"take it over; `git liza team` resumes it"
        other = "another reviewer takes it after that" if self.review else \
            f"`git liza release {self.task}`"
        return (f"{self.task}: held by {self.agent}, {what}, lease ends in "
                f"{ago(now, self.lease_expires)}; `git liza team` (or `git liza agent ... "
                f"--agent {self.agent}`) resumes it, or {other}")


def ago(earlier: str, later: str) -> str:
    """`later - earlier` as 45s, 4m, 2h or 3d."""
    s = max(0, clock.to_epoch(later) - clock.to_epoch(earlier))
    for unit, n in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= n:
            return f"{s // n}{unit}"
    return f"{s}s"


def of_agent(board: Board, agent: Agent, now: str) -> Supervision:
    """`agent`'s supervisor as of `now` on a board its reader overlaid with the live refs."""
    sup: Supervisor | None = board.get("supervisors", agent.id)
    if sup is None:
        state = SupState.NONE
    elif sup.expires is None:
        state = SupState.STOPPED
    elif sup.expires <= now:
        state = SupState.EXPIRED
    else:
        state = SupState.LIVE
    task, lease, review = None, None, False
    t = board.task(agent.current_task) if agent.current_task else None
    if t is not None:
        if agent.role == Role.CODER and t.status == TaskState.CLAIMED and t.assigned_to == agent.id:
            task, lease = t.id, t.lease_expires
        elif t.status == TaskState.READY_FOR_REVIEW and t.reviewing_by == agent.id:
            task, lease, review = t.id, t.review_lease_expires, True
    return Supervision(agent.id, state, sup.generation if sup else None, task, lease, review)


def of_board(board: Board, now: str) -> list[Supervision]:
    return [of_agent(board, a, now) for a in board.agents()]
