"""`doctor`: compare the board with the disk and, with `fix`, repair what is safe (stale locks and
pack leftovers, worktrees and branches no task explains, a missing worktree, an APPROVED task
whose merge is already in the integration branch), and the supervisors (dead ones, stale
tokens, the work they left held: services/lifecycle/supervisors.py). Each task is judged under
its lock. Before all that, the objects: a board or branch naming missing objects, and an
integration branch that diverged from the team's (gitliza/services/integrity.py), which only
`repair` and `sync` fix."""
from __future__ import annotations

import time

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from pygit2 import Oid, Repository

from gitliza.core.ids import check_id
from gitliza.core.ops.review import Merge
from gitliza.core.states import TaskState
from gitliza.errors import LizaError, ValidationError
from gitliza.git.tasklocks import task_lock
from gitliza.git.checkouts import clean_sync_problems
from gitliza.git.repository import ref_oid, repo_path
from gitliza.git.worktrees.listing import (TaskWorktreeEntry, held_here, list_task_branches,
                                       list_task_worktrees)
from gitliza.git.worktrees.tasktrees import add_task_worktree, remove_task_worktree, task_branch
from gitliza.git.remotes import remote as remotes
from gitliza.git.remotes.remote import branch_tracking_ref
from gitliza.services import attic, integrity, leftovers
from gitliza.services.leftovers import Problem
from gitliza.services.attic import ATTIC, Entry, save
from gitliza.services.lifecycle.cleanup import drop_worktree, holds_worktree
from gitliza.services.lifecycle.common import checkout_bounds, warn
from gitliza.services.lifecycle.supervisors import attempt, examine as examine_supervisors
from gitliza.git.repository import contains
from gitliza.services.lifecycle.integration import first_parent_introducing
from gitliza.services.locations import task_dir

if TYPE_CHECKING:
    from gitliza.services.api import Liza

S = TaskState


@dataclass
class DoctorReport:
    problems: list[Problem]
    busy: list[str]  # tasks skipped because a claim/merge holds their lock right now
    # Live tasks held on another machine (git/worktrees/listing.py `held_here`): not judged, said so.
    elsewhere: list[str] = field(default_factory=list)

    @property
    def remaining(self) -> list[Problem]:
        return [p for p in self.problems if not p.fixed]


def doctor(liza: Liza, fix: bool = False) -> DoctorReport:
    """Compare the board with the disk; with `fix`, repair what is safe:
    - stale ref lock files (a crashed git) and the files a crashed pack writer left are removed
      (gitliza/services/leftovers.py);
    - worktrees and `liza/*` branches the board does not explain are removed when they hold no
      work (clean, and the branch tip is already in the integration branch);
    - a worktree the board needs but that is missing is recreated from the task branch;
    - an APPROVED task whose review_commit is already in the integration branch (a merge whose
      board write failed) is recorded MERGED.
    Every task is examined under its lock with a fresh board, so a claim in flight is never
    mistaken for a leftover."""
    repo: Repository = liza.repo
    report = DoctorReport([], [])
    # Objects git's maintenance (or a lost disk) took from under the refs: nothing else can be
    # judged on a board that cannot be read (gitliza/services/integrity.py).
    remote = remotes.configured(repo)
    missing = integrity.missing_objects(repo, remote)
    report.problems += missing
    if any(p.subject == liza.store.ref for p in missing):
        report.problems += leftovers.pack_leftovers(liza, fix)
        return report
    report.problems += leftovers.stale_locks(liza, fix) + leftovers.pack_leftovers(liza, fix)
    report.problems += examine_supervisors(liza, fix)
    board = liza.board()
    report.problems += _expired_attic(liza, board.config.attic_keep, fix)
    branch = board.config.integration_branch
    report.problems += integrity.diverged_integration(
        repo, branch, remote, None if remote is None else branch_tracking_ref(
            remotes.resolve(repo_path(repo), remote), branch))
    # Listed once (listing reads every admin entry); each task is then judged under its lock
    # against a fresh board, which is what matters: a claim that finished since the listing has
    # committed CLAIMED, and paths are re-checked on disk.
    entries: dict[str, list[TaskWorktreeEntry]] = {}
    for e in list_task_worktrees(repo):
        entries.setdefault(e.task_id, []).append(e)
    branches = list_task_branches(repo)
    ids = set(entries) | set(branches)
    ids |= {t.id for t in board.tasks() if holds_worktree(t) or t.status == S.APPROVED}
    for tid in sorted(ids):
        if not _lockable_id(tid):
            report.problems.append(Problem("stray-worktree", tid, "not a valid task id: remove "
                                           "it by hand", False))
            continue
        with task_lock(repo, tid, timeout=0) as got:
            if not got:
                report.busy.append(tid)
                continue
            report.problems += _examine(liza, tid, fix, entries.get(tid, []),
                                        branches.get(tid), report.elsewhere)
    return report


def _expired_attic(liza: Liza, keep_days: int, fix: bool) -> list[Problem]:
    """Attic entries kept more than `config.attic_keep` days ago (by this machine's clock): one
    problem, fixed by dropping them (never a younger one)."""
    now = time.time()
    old = [e for e in attic.entries(liza.repo) if attic.expired(e.when, keep_days, now)]
    if not old:
        return []
    gone = attic.prune(liza.repo, keep_days, now) if fix else []
    return [Problem("attic-expired", ATTIC, f"{len(old)} attic entr{'y' if len(old) == 1 else 'ies'}"
                    f" kept more than {keep_days} days ago (config attic_keep)", True,
                    fixed=fix and len(gone) == len(old))]


def _lockable_id(tid: str) -> bool:
    try:
        check_id(tid, "task id")
    except ValidationError:
        return False
    return True


def _examine(liza: Liza, tid: str, fix: bool, entries: list[TaskWorktreeEntry],
             branch_tip: Oid | None, elsewhere: list[str] | None = None) -> list[Problem]:
    repo: Repository = liza.repo
    board = liza.board()  # fresh, under the task lock
    t = board.task(tid)
    branch = board.config.integration_branch
    tip = repo.references.get(f"refs/heads/{branch}")
    integ = ref_oid(tip) if tip is not None else None
    path = task_dir(repo, tid)
    out: list[Problem] = []
    if t is not None and t.status == S.APPROVED and t.review_commit and integ is not None \
            and contains(repo, integ, Oid(hex=t.review_commit)):
        p = Problem("approved-merged", tid, f"{branch} already contains review_commit "
                    f"{t.review_commit[:12]} but the board says APPROVED", True)
        out.append(p)
        if fix:
            attempt(p, lambda: _record_merged(liza, tid, integ, Oid(hex=t.review_commit or "")))
        return out
    if holds_worktree(t):
        assert t is not None
        if not entries and branch_tip is None and not held_here(repo, tid):
            # Claimed on another machine: its worktree is there (the branch, the admin entry and
            # the directory are all missing here, which a claim made here never leaves).
            (elsewhere if elsewhere is not None else []).append(f"{tid}: {t.status} by {t.assigned_to or t.reviewing_by}, "
                                    "held on another machine (no branch or worktree of it in "
                                    "this clone); its worktree is not judged here")
            return out
        if not (path / ".git").exists():
            p = Problem("missing-worktree", tid, f"{t.status} task's worktree {path} is missing",
                        True)
            out.append(p)
            if fix:
                start = branch_tip or Oid(hex=t.review_commit or t.base_commit or str(integ))
                attempt(p, lambda: add_task_worktree(repo, tid, start,
                                                     bounds=checkout_bounds(board)))
        return out
    if entries:
        what = "a directory git does not know" if not entries[0].registered else (
            "admin data whose directory is gone" if entries[0].prunable else "a worktree")
        safe, why = _disposable(repo, path, branch_tip, integ, tid if t else "")
        p = Problem("stray-worktree", tid, f"{path}: {what} that no task holds ({why})", safe)
        out.append(p)
        if fix and safe:
            attempt(p, lambda: _keep_and_remove(repo, tid, branch_tip, integ))
    elif branch_tip is not None:
        safe, why = _disposable(repo, None, branch_tip, integ, tid if t else "")
        p = Problem("stray-branch", tid, f"branch {task_branch(tid)} that no task holds ({why})",
                    safe)
        out.append(p)
        if fix and safe:
            attempt(p, lambda: _keep_and_remove(repo, tid, branch_tip, integ))
    return out


def _keep_and_remove(repo: Repository, tid: str, branch_tip: Oid | None,
                     integ: Oid | None) -> None:
    """Remove a leftover `_disposable` allowed, its commits outside integration in the attic."""
    save(repo, tid, task_dir(repo, tid), integ, "doctor --fix removed it")
    remove_task_worktree(repo, tid)



def _disposable(repo: Repository, path: Path | None, branch_tip: Oid | None,
                integ: Oid | None, task: str = "") -> tuple[bool, str]:
    """Whether removing a leftover loses nothing: clean checkout, no commit outside integration."""
    if path is not None and (path / ".git").exists() and not leftovers.cut_short(path):
        try:
            problems = clean_sync_problems(path)
        except LizaError as e:
            problems = [str(e)]
        if problems:
            shown = "; ".join(problems[:3])
            kept = _kept_as(repo, path, task)
            if kept is not None:  # a restart (team/leftovers.py) or a teardown kept it whole
                # Still never removed by --fix: the person may be working in it.
                return False, (f"uncommitted changes: {shown}; kept whole as {kept.ref} "
                               f"({kept.subject}): `git liza attic {task} --restore "
                               f"{kept.oid[:12]}` brings it back anywhere; remove this "
                               "checkout by hand once it is not needed here")
            return False, f"uncommitted changes: {shown}; inspect and remove it by hand"
    if branch_tip is not None and (integ is None or not contains(repo, integ, branch_tip)):
        if task:
            # A task of the board that no longer holds its branch (released, abandoned: a kill
            # came between the recorded transition and the clean-up): what those ops do with
            # such commits, keep them in the attic, then the branch goes.
            return True, (f"branch tip {str(branch_tip)[:12]} has commits outside the "
                          f"integration branch: kept as {ATTIC}/{task}/{branch_tip}")
        return False, (f"branch tip {str(branch_tip)[:12]} has commits outside the integration "
                       "branch; inspect and delete it by hand")
    return True, "holds no work"


def _kept_as(repo: Repository, path: Path, task: str) -> Entry | None:
    """The attic entry of `task` that holds the worktree's files exactly as they are now (its
    commits and uncommitted edits), or None."""
    if not task:
        return None
    try:
        tree, _parent = attic.worktree_tree(repo, path)
    except LizaError:
        return None
    for e in attic.entries(repo, task):
        c = repo.get(e.oid)
        if c is not None and str(getattr(c, "tree_id", "")) == tree:
            return e
    return None


def _record_merged(liza: Liza, task: str, integ: Oid, review: Oid) -> None:
    """Finish a merge whose board write failed: MERGED with the integration commit that brought
    review_commit in (the oldest first-parent ancestor of the tip that still contains it)."""
    repo: Repository = liza.repo
    merge_commit = first_parent_introducing(repo, integ, review)
    liza.apply(lambda _b, now: Merge(actor=liza.agent, time=now, task=task, result="merged",
                                     merge_commit=str(merge_commit)))
    for note in drop_worktree(liza, task):
        warn(note)
