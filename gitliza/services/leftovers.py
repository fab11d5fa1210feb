"""What `doctor` finds beneath the board: ref lock files a crashed git left on gitliza's refs, and
the files a crashed or interrupted pack writer left in objects/pack/.

Both are judged by age (a live holder keeps a ref lock for milliseconds and writes a pack in
milliseconds), and a lock is named with its owner; `--fix` removes them. The board-level checks
(worktrees, branches, APPROVED-but-merged) are lifecycle.doctor's.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pygit2
from pygit2 import Repository
from pygit2.enums import FileStatus, RepositoryOpenFlag, RepositoryState

from gitliza.git import reflocks
from gitliza.git import treepath
from gitliza.git.objects import ownstore
from gitliza.git.objects import packs
from gitliza.git.repository import common_dir
from gitliza.git.worktrees.tasktrees import BRANCH_PREFIX

if TYPE_CHECKING:
    from gitliza.services.api import Liza


@dataclass
class Problem:
    kind: str  # stale-lock | pack-leftover | stray-worktree | stray-branch | missing-worktree |
    #            approved-merged | dead-supervisor | stale-token | orphaned-worktree
    subject: str  # a task id or a path
    detail: str
    fixable: bool
    fixed: bool = False
    error: str | None = None


def stale_locks(liza: Liza, fix: bool) -> list[Problem]:
    """Lock files of the board's refs (refs/liza/), the attic, the task branches, the integration
    branch and packed-refs, older than any live writer holds one."""
    common = common_dir(liza.repo)
    integration = f"refs/heads/{liza.board().config.integration_branch}"
    out = []
    for lock in reflocks.stale(common, ["refs/liza/", "refs/liza-attic/",
                                        f"refs/heads/{BRANCH_PREFIX}"],
                               [liza.store.ref, integration]):
        p = Problem("stale-lock", str(lock.path), f"{lock.ref} lock is {lock.age:.0f}s old "
                    f"(owner {lock.owner}): a git process crashed holding it", True)
        if fix:
            _remove(p, lock.path)
        out.append(p)
    return out


def pack_leftovers(liza: Liza, fix: bool) -> list[Problem]:
    """Half-written packs and temporary files in objects/pack/ (a crash, a full disk); with `fix`,
    also the merged packs whose grace is over (what a burst of writes leaves until the next)."""
    objects = str(common_dir(liza.repo) / "objects")
    out = []
    # Both stores: gitliza's own (ownstore.py), where it writes now, and objects/, where earlier
    # versions wrote and git's own fetches and repacks leave their temporary files.
    for where in (objects, ownstore.store_of(objects)):
        for path in packs.leftovers(where):
            p = Problem("pack-leftover", path, "left by a writer that crashed or ran out of "
                        "space (`git count-objects -v` calls it garbage)", True)
            if fix:
                _remove(p, Path(path))
            out.append(p)
        if fix:
            try:
                packs.settle(where)
            except OSError:
                pass  # housekeeping only
    return out


def _remove(p: Problem, path: Path) -> None:
    try:
        os.unlink(path)
        p.fixed = True
    except FileNotFoundError:
        p.fixed = True  # gone meanwhile: its holder finished after all
    except OSError as e:
        p.error = f"cannot remove it: {e.strerror}"


_DELETIONS = int(FileStatus.INDEX_DELETED | FileStatus.WT_DELETED)


def cut_short(path: Path) -> bool:
    """Whether the checkout at `path` is one a killed claim left half made: every difference
    from its HEAD is a file missing (the index or the files not written yet) or a file not yet
    in the index that holds exactly HEAD's bytes, so removing it loses nothing. A stale
    index.lock of that kill does not count."""
    try:
        if {p.name for p in path.iterdir()} <= {".git"}:
            return True  # killed before its checkout began (perhaps before its admin data)
        checkout = Repository(str(path), RepositoryOpenFlag.NO_SEARCH)
        status = checkout.status(untracked_files="normal")
    except (pygit2.GitError, KeyError, OSError):
        return False
    if checkout.state() != RepositoryState.NONE:
        return False
    lock = Path(checkout.path) / "index.lock"
    age = reflocks.lock_age(lock)
    if age is not None and age < reflocks.STALE_LOCK_SECONDS:
        return False  # a git command is writing it right now
    try:
        head = checkout.head.peel(pygit2.Commit).tree
    except (pygit2.GitError, KeyError):
        return False
    for file, flags in status.items():
        rest = flags & ~_DELETIONS
        if rest == 0:
            continue
        # Written by the checkout but not yet in the index: the very bytes HEAD has.
        if rest != int(FileStatus.WT_NEW) or not _same_as(head, file, path / file):
            return False
    return True


def _same_as(tree: pygit2.Tree, name: str, file: Path) -> bool:
    try:
        entry = treepath.entry(tree, name)
        return bool(entry.id == pygit2.hashfile(str(file)))
    except (KeyError, OSError, pygit2.GitError):
        return False
