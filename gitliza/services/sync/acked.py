"""Whether the remote has acknowledged a coder's claim: a supervisor starts no agent on a claim (or
a takeover) that is only on its own board (issue 48). A claim's auto-sync that could not reach the
remote, or lost every race, exits 0 with the op "committed locally"; an agent started on it may
work a task that a machine on the other side of a cut is working too, until the claim is dropped
at the next sync. So before the launch the claim must be on the remote's board: as this clone
last saw it (the tracking ref, which a fetch or an accepted push moves), else after one sync
(engine.py, the same reconciliation every op's auto-sync does: no second copy of it here).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from gitliza.core.model import Task
from gitliza.core.states import TaskState
from gitliza.errors import LizaError
from gitliza.git import remotes
from gitliza.git.repository import repo_path
from gitliza.services.sync import engine

if TYPE_CHECKING:
    from gitliza.services.api import Liza


def _same_claim(mine: Task, theirs: Task | None) -> bool:
    """The remote's task is this claim: CLAIMED by the same coder, on the same base and
    iteration (a renewal may be newer here: the lease's expiry is not compared)."""
    return (theirs is not None and theirs.status == TaskState.CLAIMED
            and (theirs.assigned_to, theirs.base_commit, theirs.iteration, theirs.worktree)
            == (mine.assigned_to, mine.base_commit, mine.iteration, mine.worktree))


def seen_on_remote(liza: Liza, remote: remotes.Remote, mine: Task) -> bool:
    """Whether the remote's board, as this clone last fetched or pushed it, holds `mine`."""
    tip = remotes.read_ref(repo_path(liza.repo), remotes.tracking_of(remote, remotes.STATE_REF))
    if tip is None:
        return False
    board = liza.store.board_at(liza.store.commit(tip))
    return _same_claim(mine, board.task(mine.id))


def unacknowledged(liza: Liza, task: str) -> str | None:
    """None when `liza.agent`'s claim of `task` may start an agent: the board shares with no
    remote, or the remote's board holds the claim (after one sync if it did not yet). Otherwise
    why not, in a few words: the remote cannot be reached, the sync lost its races, or the claim
    is not this coder's any more (the sync dropped it: another machine got there first)."""
    remote = liza.sync_target()
    if remote is None:
        return None
    mine = liza.board().task(task)
    if mine is None or mine.status != TaskState.CLAIMED or mine.assigned_to != liza.agent:
        return "the claim is no longer this coder's"
    if seen_on_remote(liza, remote, mine):
        return None
    try:
        engine.sync(liza.store, remote)
    except (LizaError, OSError) as e:
        return f"{remote.arg} did not take it: {getattr(e, 'message', e)}"
    mine = liza.board().task(task)
    if mine is None or mine.status != TaskState.CLAIMED or mine.assigned_to != liza.agent:
        return f"the sync with {remote.arg} dropped the claim (another machine got there first)"
    if seen_on_remote(liza, remote, mine):
        return None
    return f"{remote.arg}'s board does not show it yet"
