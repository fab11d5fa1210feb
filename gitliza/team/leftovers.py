"""What a coder's earlier session left when its supervisor starts again.

A coder's id that still holds a task when its supervisor starts: an earlier session ended without
its supervisor's own teardown (killed, crashed). What it left in the task's worktree (uncommitted
and untracked work, unmerged commits) goes to the attic before the new supervisor resumes,
relaunches or rebuilds anything; the line names the ref. A clean worktree on a merged tip keeps
nothing, and work already on the board (its branch and worktree as they were) is said to be
resumed, not kept.
"""
from __future__ import annotations

from typing import Callable

import pygit2

from gitliza.errors import LizaError
from gitliza.services.api import Liza
from gitliza.services.lifecycle.cleanup import keep_state

WHY = "the restart of its supervisor"


def keep(liza: Liza, agent: str, log: Callable[[str], None]) -> None:
    """Keep what `agent`'s dead session left of the task it still holds (if any), and say so."""
    board = liza.board()
    me = board.agent(agent)
    t = board.task(me.current_task) if me is not None and me.current_task else None
    if t is None or t.assigned_to != agent:
        return
    try:
        notes = keep_state(liza, t.id, WHY)
        for note in notes:
            log(f"{note} (a dead session's leftovers, kept before {WHY})")
        if not notes:  # its branch and worktree stay: the work is resumed, not lost
            log(f"{t.id}: resumed ({t.status}; its branch and worktree as they were)")
    except (LizaError, OSError, pygit2.GitError) as e:
        log(f"{t.id}: cannot keep the dead session's leftovers in the attic: {e}")
