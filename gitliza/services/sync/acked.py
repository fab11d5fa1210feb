"""Whether the remote has acknowledged a claim: a supervisor starts no agent on a claim, a takeover
or a review lease that is only on its own board (issue 48). A claim's auto-sync that could not
reach the remote, or lost every race, exits 0 with the op "committed locally"; an agent started on
it may work a task (or review one) that a machine on the other side of a cut works too, until the
claim is dropped at the next sync. So before the launch the claim must be on the remote's board:
as this clone last saw it (the tracking ref, which a fetch or an accepted push moves), else after
one sync (engine.py, the same reconciliation every op's auto-sync does: no second copy of it here).

Two kinds of claim start an agent (team/work.py): a coder's `claim` (CLAIMED by it) and a
reviewer's `claim-review` (its review lease on a READY_FOR_REVIEW task, beside others' under a
review quorum). The planner claims nothing; a merge starts no agent.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from gitliza.core.board import Board
from gitliza.core.model import Task
from gitliza.core.quorum import review_lease
from gitliza.core.states import Role, TaskState
from gitliza.errors import LizaError
from gitliza.git.remotes import remote as remotes
from gitliza.git.repository import repo_path
from gitliza.services.sync import engine

if TYPE_CHECKING:
    from gitliza.services.api import Liza


def holds(board: Board, agent: str, task: str, role: Role) -> Task | None:
    """`agent`'s claim of `task` on `board` for `role` (the task), or None when it holds none."""
    t = board.task(task)
    if t is None:
        return None
    if role == Role.CODE_REVIEWER:
        mine = t.status == TaskState.READY_FOR_REVIEW and review_lease(t, agent) is not None
    else:
        mine = t.status == TaskState.CLAIMED and t.assigned_to == agent
    return t if mine else None


def _same_claim(mine: Task, theirs: Task | None, agent: str, role: Role) -> bool:
    """The remote's task is this claim: a coder's on the same base and iteration, a reviewer's of
    the same review commit (a renewal may be newer here: lease expiries are not compared)."""
    if theirs is None:
        return False
    if role == Role.CODE_REVIEWER:
        return (theirs.status == TaskState.READY_FOR_REVIEW
                and review_lease(theirs, agent) is not None
                and theirs.review_commit == mine.review_commit)
    return (theirs.status == TaskState.CLAIMED
            and (theirs.assigned_to, theirs.base_commit, theirs.iteration, theirs.worktree)
            == (mine.assigned_to, mine.base_commit, mine.iteration, mine.worktree))


def seen_on_remote(liza: Liza, remote: remotes.Remote, mine: Task,
                   role: Role = Role.CODER) -> bool:
    """Whether the remote's board, as this clone last fetched or pushed it, holds `mine`."""
    tip = remotes.read_ref(repo_path(liza.repo), remotes.tracking_of(remote, remotes.STATE_REF))
    if tip is None:
        return False
    board = liza.store.board_at(liza.store.commit(tip))
    return _same_claim(mine, board.task(mine.id), liza.agent, role)


def unacknowledged(liza: Liza, task: str, role: Role = Role.CODER) -> str | None:
    """None when `liza.agent`'s claim of `task` (for `role`) may start an agent: the board shares
    with no remote, or the remote's board holds the claim (after one sync if it did not yet).
    Otherwise why not, in a few words: the remote cannot be reached, the sync lost its races, or
    the claim is not this agent's any more (the sync dropped it: another machine got there
    first)."""
    remote = liza.sync_target()
    if remote is None:
        return None
    mine = holds(liza.board(), liza.agent, task, role)
    if mine is None:
        return f"the claim is no longer {liza.agent}'s"
    if seen_on_remote(liza, remote, mine, role):
        return None
    try:
        engine.sync(liza.store, remote)
    except (LizaError, OSError) as e:
        return f"{remote.arg} did not take it: {getattr(e, 'message', e)}"
    mine = holds(liza.board(), liza.agent, task, role)
    if mine is None:
        return f"the sync with {remote.arg} dropped the claim (another machine got there first)"
    if seen_on_remote(liza, remote, mine, role):
        return None
    return f"{remote.arg}'s board does not show it yet"
