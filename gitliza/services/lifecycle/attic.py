"""The attic, `refs/liza-attic/<task>/<oid>`: where commits and uncommitted work that a branch or
worktree about to go holds, and the integration branch lacks, are kept, so that nothing is lost."""
from __future__ import annotations

from pathlib import Path

import pygit2
from pygit2 import Oid, Repository

from gitliza.core.ops.work import worktree_path
from gitliza.errors import ValidationError
from gitliza.git.reflocks import retrying
from gitliza.git.checkouts import clean_sync_problems
from gitliza.git.repository import ref_oid
from gitliza.git.worktrees import task_branch
from gitliza.services import leftovers

ATTIC = "refs/liza-attic"


def keep_leftovers(repo: Repository, task: str, path: Path, base: Oid) -> None:
    """Nothing is lost when a claim starts afresh over an earlier coder's leftovers (a takeover
    after a crash, a task unblocked with its dirty worktree kept): commits of `liza/<task>` that
    the new base lacks, and uncommitted changes (snapshotted as a commit on top of the leftover
    HEAD, untracked files included), are kept under refs/liza-attic/<task>/<oid> before the
    worktree and branch are replaced. The attic is outside refs/liza/, which sync and the server
    hook own; `git log refs/liza-attic/<task>/<oid>` shows what was kept."""
    keep: list[Oid] = []
    if path.is_dir() and not (path / ".git").exists() and any(path.iterdir()):
        # Not a worktree gitliza made: someone's files. Refuse rather than delete them.
        raise ValidationError(f"{worktree_path(task)} holds files that are not a gitliza "
                              "worktree; a fresh claim would delete them",
                              hint=f"move them out of {path}, then claim again")
    if path.is_dir() and (path / ".git").exists() and not leftovers.cut_short(path) \
            and clean_sync_problems(path):
        wt = pygit2.Repository(str(path))
        index = wt.index
        index.add_all()  # respects .gitignore: ignored files are not work
        tree = index.write_tree()
        parents = [] if wt.head_is_unborn else [wt.head.target]
        sig = pygit2.Signature("gitliza", "gitliza@liza.invalid")
        keep.append(wt.create_commit(None, sig, sig, f"gitliza: uncommitted work left in "
                                     f"{worktree_path(task)}, kept before a fresh claim",
                                     tree, parents))
    keep += unmerged_branch_tip(repo, task, base)
    for oid in keep:
        to_attic(repo, task, oid)


def unmerged_branch_tip(repo: Repository, task: str, contained_in: Oid | None) -> list[Oid]:
    """The tip of `liza/<task>` if it has commits that `contained_in` lacks, else nothing."""
    branch = repo.references.get(f"refs/heads/{task_branch(task)}")
    if branch is None:
        return []
    tip = ref_oid(branch)
    if contained_in is not None and (tip == contained_in or repo.descendant_of(contained_in, tip)):
        return []
    return [tip]


def to_attic(repo: Repository, task: str, oid: Oid) -> None:
    name = f"{ATTIC}/{task}/{oid}"
    if repo.references.get(name) is None:
        retrying(lambda: repo.references.create(name, oid), f"cannot keep {name}")
