"""A team that sizes itself (`git liza team --max-coders N --max-reviewers M`, upstream Liza's
ADR-0163): how many supervisors of a role to start, as a pure function of the board.

    waiting(board, now, role)           -> work of the role nobody holds (claimable tasks for
                                           coders, reviewable ones for reviewers)
    busy(board, agents)                 -> those of `agents` working on a task
    to_start(waiting, running, busy, most) -> how many more to start, within `most`

A supervisor is started when claimable work has no idle agent to take it: the work waiting beyond
the running supervisors that are idle (not on a task), up to the cap. Scaling down is the
supervisors' own doing: a pool member exits after `pool_idle_exit` seconds with no work
(POOL_IDLE_EXIT by default), as any supervisor exits after its role's max wait.
"""
from __future__ import annotations

from typing import Iterable

from gitliza.core.board import Board
from gitliza.core.invariants import claimable, reviewable
from gitliza.core.model import Config
from gitliza.core.states import AgentState

POOL_IDLE_EXIT = 120  # seconds a pool member waits for work before it exits, by default


def idle_exit(config: Config) -> int:
    return config.pool_idle_exit or POOL_IDLE_EXIT


def waiting(board: Board, now: str, role: str) -> int:
    """The work of `role` ("coder", "code-reviewer") that no agent holds now."""
    if not board.initialized or board.goal.status != "IN_PROGRESS":
        return 0
    if role == "coder":
        return len(claimable(board, now))
    return len(reviewable(board, now))


def busy(board: Board, agents: Iterable[str]) -> int:
    """How many of `agents` hold work on the board (a task, or a review)."""
    n = 0
    reviewing = {t.reviewing_by for t in board.tasks() if t.reviewing_by}
    for agent in agents:
        a = board.agent(agent)
        if a is not None and (a.status == AgentState.WORKING or a.current_task or
                              agent in reviewing):
            n += 1
    return n


def to_start(waiting_work: int, running: int, busy_agents: int, most: int) -> int:
    """Supervisors to start: one per piece of waiting work beyond the idle running ones, within
    `most` running in all."""
    idle = max(0, running - busy_agents)
    return max(0, min(waiting_work - idle, most - running))
