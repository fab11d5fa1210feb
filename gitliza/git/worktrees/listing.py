"""What is on disk for the tasks: their worktrees (registered or not, broken or whole) and their
branches, and the checkouts of a branch. Read only: `doctor` compares it with the board, sync
lists the task branches to push, a merge finds the checkouts to bring along.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pygit2 import Oid, Repository

from gitliza.git.repository import common_dir, main_repository, ref_oid
from gitliza.git.worktrees.admin import AdminEntry, admin_entries, parse_head, read_text
from gitliza.git.worktrees.tasktrees import BRANCH_PREFIX, WORKTREES_DIR, task_branch, task_layout


def held_here(repo: Repository, task_id: str) -> bool:
    """Whether this clone is the machine that holds the task: it has something of the task's in
    git (its branch liza/<task>, its worktree's admin entry, or its directory). A claim always
    creates the branch and the worktree where it runs, and sync never creates either for another
    machine's claim (it mirrors task branches into tracking refs only), so a task CLAIMED on the
    board with none of them here is held on another machine: its worktree is not this clone's to
    judge. A bare repository (a server) holds none. Cheap: two stats and one ref lookup."""
    main = main_repository(repo)
    if main.is_bare or main.workdir is None:
        return False
    return ((Path(main.workdir) / WORKTREES_DIR / task_id).exists()
            or (common_dir(repo) / "worktrees" / task_id).exists()
            or repo.references.get(f"refs/heads/{task_branch(task_id)}") is not None)


@dataclass(frozen=True)
class TaskWorktreeEntry:
    """What exists on disk for one task directory, for `doctor` to compare with the board."""

    task_id: str
    path: Path
    admin_name: str | None  # None: the directory exists but git does not know it as a worktree
    head_ref: str | None  # the branch HEAD is on; None when detached or unreadable
    head: Oid | None  # the commit checked out, when known
    directory_exists: bool
    locked: bool

    @property
    def registered(self) -> bool:
        return self.admin_name is not None

    @property
    def prunable(self) -> bool:
        """Admin data whose directory vanished."""
        return self.registered and not self.directory_exists


def list_task_worktrees(repo: Repository) -> list[TaskWorktreeEntry]:
    """Registered worktrees located in `.worktrees/` (even if the directory vanished), and
    directories in `.worktrees/` git does not know, sorted by task id."""
    lay = task_layout(repo)
    root = lay.worktrees_root
    main = main_repository(repo)
    found: dict[Path, TaskWorktreeEntry] = {}
    for entry in admin_entries(lay.common_dir):
        path = entry.checkout or root / entry.name
        if path.parent == root:
            found[path] = _entry_from_admin(main, entry, path)
    if root.is_dir():
        for child in root.iterdir():
            if child not in found and child.is_dir() and not child.is_symlink():
                found[child] = _unregistered_entry(child)
    return sorted(found.values(), key=lambda e: e.task_id)


def _entry_from_admin(main: Repository, entry: AdminEntry, path: Path) -> TaskWorktreeEntry:
    head = entry.head_oid
    if entry.head_ref is not None:
        ref = main.references.get(entry.head_ref)
        head = ref_oid(ref) if ref is not None else None
    return TaskWorktreeEntry(
        task_id=path.name, path=path, admin_name=entry.name, head_ref=entry.head_ref,
        head=head, directory_exists=path.is_dir(), locked=entry.locked,
    )


def _unregistered_entry(path: Path) -> TaskWorktreeEntry:
    return TaskWorktreeEntry(
        task_id=path.name, path=path, admin_name=None, head_ref=None, head=None,
        directory_exists=True, locked=False,
    )


def list_task_branches(repo: Repository) -> dict[str, Oid]:
    """Every `refs/heads/liza/<task_id>` branch: task id -> tip."""
    prefix = f"refs/heads/{BRANCH_PREFIX}"
    return {
        ref.name[len(prefix):]: ref_oid(ref)
        for ref in repo.references.iterator()
        if ref.name.startswith(prefix)
    }


def checkouts_of_branch(repo: Repository, branch: str) -> list[Path]:
    """Existing worktree directories (main or linked) whose HEAD is on `refs/heads/<branch>`."""
    refname = branch if branch.startswith("refs/") else f"refs/heads/{branch}"
    main = main_repository(repo)
    found: list[Path] = []
    if not main.is_bare and main.workdir is not None:
        if parse_head(read_text(Path(main.path) / "HEAD"))[0] == refname:
            found.append(Path(main.workdir).resolve())
    for entry in admin_entries(common_dir(repo)):
        if entry.head_ref == refname and entry.checkout is not None and entry.checkout.is_dir():
            found.append(entry.checkout)
    return found
