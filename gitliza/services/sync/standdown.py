"""Standing down from a claim another machine won: a dropped claim's local task worktree and
branch go if they hold no work (never work: a dirty checkout or commits beyond the claimed base
are kept and flagged), and its Dropped entry says so."""
from __future__ import annotations

import dataclasses
from typing import Sequence

from gitliza.core.board import Board
from gitliza.core.ops.base import Op
from gitliza.core.states import TaskState
from gitliza.errors import LizaError
from gitliza.git import checkouts
from gitliza.git.worktrees import tasktrees as worktrees
from gitliza.git.worktrees import listing as worktree_list
from gitliza.git.store import Store
from gitliza.git.tasklocks import task_lock
from gitliza.services.sync.replay import Rebuilt
from gitliza.services.sync.report import Dropped, Replayed

STAND_DOWN_OPS = ("claim", "claim-review")


def stand_down(store: Store, op: Op, board: Board, replayed: Sequence[Replayed]) -> str | None:
    """Clean up after a dropped claim: the local task worktree and branch go if they hold no work.

    Returns what happened ("removed ...", "kept ...") or None when there was nothing on disk.
    Never deletes work: a dirty checkout or commits beyond the claimed base are kept and flagged.
    """
    task_id = getattr(op, "task", None)
    if op.NAME != "claim" or not isinstance(task_id, str):
        return None
    t = board.task(task_id)
    keepers = {r.actor for r in replayed if r.op == "claim" and r.task == task_id}
    if t is not None and t.status == TaskState.CLAIMED and t.assigned_to in keepers:
        # A local agent still holds the task (its own claim replayed): the worktree is its.
        return f"kept: {t.assigned_to} (this clone) holds {task_id}"
    try:
        with task_lock(store.repo, task_id, timeout=0) as got:
            if not got:
                # A gitliza command of this clone is working on the task right now (a claim by
                # another local agent, or the very claim whose auto-sync dropped it: that one
                # undoes its own worktree). Removing under it could destroy its checkout.
                return f"kept: a command of this clone holds {task_id}'s lock; not touched"
            return _remove_if_unused(store, task_id, str(getattr(op, "base_commit", "") or ""))
    except LizaError as e:
        return f"kept: could not remove it ({e})"


def _remove_if_unused(store: Store, task_id: str, base: str) -> str | None:
    """Remove the task's worktree and branch unless they hold work (dirty, or commits beyond
    the claimed base): those are kept and flagged. None: nothing of the task's was on disk."""
    entries = [e for e in worktree_list.list_task_worktrees(store.repo) if e.task_id == task_id]
    branch = worktree_list.list_task_branches(store.repo).get(task_id)
    if not entries and branch is None:
        return None
    for e in entries:
        if e.directory_exists:
            problems = checkouts.clean_sync_problems(e.path)
            if problems:
                return f"kept: {e.path} is dirty ({'; '.join(problems[:3])})"
        if e.head is not None and str(e.head) != base:
            return f"kept: {e.path} has commits beyond the claimed base {base[:12]}"
    if branch is not None and str(branch) != base:
        return f"kept: branch liza/{task_id} has commits beyond the claimed base {base[:12]}"
    worktrees.remove_task_worktree(store.repo, task_id)
    return f"removed .worktrees/{task_id} and branch liza/{task_id}"


def with_stand_down(store: Store, d: Dropped, op: Op | None, rebuilt: Rebuilt,
                     cleanup: bool) -> Dropped:
    """A dropped claim (or claim-review) is a stand-down: its agent must stop working on the task;
    with `cleanup`, the entry also says what became of the local worktree."""
    if d.op not in STAND_DOWN_OPS or op is None:
        return d
    fate = stand_down(store, op, rebuilt.board, rebuilt.replayed) if cleanup else None
    return dataclasses.replace(d, stand_down=True, worktree=fate)
