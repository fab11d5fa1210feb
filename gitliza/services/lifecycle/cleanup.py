"""Worktree clean-up once the board lets a task's worktree go (release, merge, and the releasing
ops abandon, rescope, unblock): the worktree and branch are removed, unmerged commits kept in the
attic, a dirty checkout kept with a warning."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pygit2
from pygit2 import Oid, Repository

from gitliza.core.model import Task
from gitliza.core.states import TERMINAL
from gitliza.errors import LizaError
from gitliza.git.checkouts import clean_sync_problems
from gitliza.git.store import Committed
from gitliza.git.tasklocks import task_lock
from gitliza.git.worktrees.listing import held_here
from gitliza.git.worktrees.tasktrees import remove_task_worktree, task_branch
from gitliza.services.attic import kept_line, save
from gitliza.services.lifecycle.common import warn
from gitliza.services.lifecycle.integration import integration_tip
from gitliza.services.locations import task_dir

if TYPE_CHECKING:
    from gitliza.services.api import Liza


def holds_worktree(t: Task | None) -> bool:
    """Whether the board says this task's worktree must exist (it names one and is live)."""
    return t is not None and t.worktree is not None and t.status not in TERMINAL


def drop_worktree(liza: Liza, task: str) -> tuple[str, ...]:
    """Remove the task's worktree and branch unless the board (re-read: the caller holds the task
    lock) still holds them, or the checkout is dirty (kept; the warning is among the notes
    returned, for the caller to print)."""
    repo: Repository = liza.repo
    if holds_worktree(liza.board().task(task)) or not _has_git_side(repo, task):
        return ()
    path = task_dir(repo, task)
    # release, abandon, rescope, unblock and merge let the branch go; commits on it that the
    # integration branch does not contain (work given back, follow-ups made after the review)
    # and uncommitted work are kept in the attic first (attic.save), rather than left dangling
    # for gc.
    try:
        merged_into: Oid | None = integration_tip(repo, liza.board().config.integration_branch)
    except LizaError:
        merged_into = None
    problems: list[str] = []
    if (path / ".git").exists():
        try:
            problems = clean_sync_problems(path)
        except LizaError as e:
            problems = [str(e)]
    try:
        kept = save(repo, task, path, merged_into, f"{task}'s worktree goes")
    except (LizaError, pygit2.GitError) as e:
        kept = []
        problems = problems or [f"cannot keep its work in the attic: {e}"]
    if problems:
        # Never forced away: a dirty checkout stays where it is, its state in the attic too.
        msg = (f"kept {path}: it has uncommitted changes ({'; '.join(problems[:3])})"
               + (f"; {kept_line(kept)}" if kept else "")
               + f"; remove it with `git worktree remove --force {path}` and `git branch -D "
               f"{task_branch(task)}` once you have saved what you need")
        return (msg,)  # the caller tells it, once (a warning here too printed it twice)
    notes: tuple[str, ...] = ()
    if kept:
        notes = (f"kept the unmerged commits of {task_branch(task)} as {', '.join(kept)}",)
    try:
        remove_task_worktree(repo, task)
    except LizaError as e:
        # The transition is recorded: what is left on disk is doctor's to finish, not an error.
        notes += (f"{task}'s worktree or branch is left behind ({e.message}); "
                  "`git liza doctor --fix` removes it",)
    return notes


def _has_git_side(repo: Repository, task: str) -> bool:
    """Whether anything of the task exists in git (cheap; a bare repository has no worktrees)."""
    return held_here(repo, task)


def cleanup_after(liza: Liza, committed: Committed) -> list[str]:
    """After abandon/rescope/unblock (transitions.do_op calls this): a task the board no longer gives a
    worktree loses it and its branch, unless the checkout is dirty (kept, warned)."""
    tid = committed.outcome.event.task
    if tid is None or not _has_git_side(liza.repo, tid):
        return []
    with task_lock(liza.repo, tid):
        notes = list(drop_worktree(liza, tid))
    for n in notes:  # the op's caller prints only the transition: the warning is said here
        warn(n)
    return notes


def keep_state(liza: Liza, task: str, why: str, locked: bool = False,
               branch_stays: bool = True) -> list[str]:
    """The attic before a teardown that leaves the worktree where it is (the human's release, a
    reassignment, a stand-down, a supervisor's stop, an agent's crash): its uncommitted work and
    the branch's commits the integration branch lacks. The notes naming what was kept.
    `locked`: the caller holds the task lock already; `branch_stays=False`: the branch's
    commits the integration branch lacks are kept too (a returning machine: team/leftovers.py)."""
    repo: Repository = liza.repo
    path = task_dir(repo, task)
    if not _has_git_side(repo, task):
        return []
    try:
        merged_into: Oid | None = integration_tip(repo, liza.board().config.integration_branch)
    except LizaError:
        merged_into = None
    if locked:
        kept = save(repo, task, path, merged_into, why, branch_stays=branch_stays)
    else:
        with task_lock(repo, task):
            kept = save(repo, task, path, merged_into, why, branch_stays=branch_stays)
    return [f"{task}: {kept_line(kept)}"] if kept else []
