"""Git-side primitives for task worktrees: where they are, and creating, reusing and removing them.

A task `<id>` owns branch `refs/heads/liza/<id>` and a linked worktree at `<main>/.worktrees/<id>`,
where `<main>` is the main worktree of the repository (even when the caller's `Repository` was
opened from inside some other worktree). No board logic lives here: callers decide *when*; this
module only makes the disk agree, safely. What is on disk is read by listing.py; git's
administration data and the lock every change here takes (`worktree_mutex`) are in
admin.py; whether a checkout is clean is checkouts.py's.
"""
from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import pygit2
from pygit2 import Oid, Repository

from gitliza.core import treerules
from gitliza.errors import GitFailure, NotFound, ValidationError, hint_for
from gitliza.git import reflocks, refdelete, treecheck
from gitliza.git.checkouts import clean_sync_problems, worktree_head
from gitliza.git.repository import common_dir, ensure_excluded, main_repository, ref_oid
from gitliza.git.worktrees.admin import (AdminEntry, admin_entries, drop_admin, rmtree,
                                        worktree_mutex)
from gitliza.git.worktrees.detached import add_detached

WORKTREES_DIR = ".worktrees"
BRANCH_PREFIX = "liza/"


# --------------------------------------------------------------------------- paths


def contained_path(root: Path, rel: str | Path) -> Path:
    """Resolve `rel` against `root`; it must stay equal to or below `root` (symlinks included).

    Stricter than a plain descendant check on purpose: absolute paths and any `..` component are
    refused outright, so a path that only *happens* to land back inside is still an error.
    """
    rel_path = Path(rel)
    if rel_path.is_absolute():
        raise ValidationError(f"path {str(rel)!r} is absolute; expected one relative to {root}")
    if ".." in rel_path.parts:
        raise ValidationError(f"path {str(rel)!r} contains '..'; refusing to leave {root}")
    try:
        base = Path(root).resolve()
        # Non-strict resolve follows the symlinks of every component that exists, so a symlink
        # anywhere on the way that points outside is caught here.
        target = (base / rel_path).resolve()
    except (OSError, RuntimeError, ValueError) as e:
        raise ValidationError(f"path {str(rel)!r} under {root} cannot be resolved: {e}") from e
    if not target.is_relative_to(base):
        raise ValidationError(f"path {str(rel)!r} resolves to {target}, outside {base}")
    return target


def validate_task_id(task_id: str) -> None:
    single = bool(task_id) and Path(task_id).name == task_id and task_id not in (".", "..")
    if not single or "\\" in task_id or "\0" in task_id:
        raise ValidationError(f"task id {task_id!r} is not a single path component")
    if not pygit2.reference_is_valid_name(f"refs/heads/{BRANCH_PREFIX}{task_id}"):
        raise ValidationError(f"task id {task_id!r} is not valid in a branch name")


@dataclass(frozen=True)
class TaskLayout:
    common_dir: Path
    main_root: Path

    @property
    def worktrees_root(self) -> Path:
        """`.worktrees` itself must be a real directory (or absent), not a symlink anywhere."""
        path = contained_path(self.main_root, WORKTREES_DIR)
        if path != self.main_root / WORKTREES_DIR:
            raise ValidationError(f"{self.main_root / WORKTREES_DIR} is a symlink; refusing to use it")
        return path

    def task_path(self, task_id: str) -> Path:
        validate_task_id(task_id)
        root = self.worktrees_root
        path = contained_path(root, task_id)
        if path != root / task_id:
            raise ValidationError(f"{root / task_id} is a symlink; refusing to use it")
        return path


def task_layout(repo: Repository) -> TaskLayout:
    main = main_repository(repo)
    if main.is_bare or main.workdir is None:
        raise ValidationError(f"{main.path} is a bare repository: task worktrees need a main worktree")
    return TaskLayout(common_dir=Path(main.path).resolve(), main_root=Path(main.workdir).resolve())


def task_branch(task_id: str) -> str:
    """Short branch name of a task: `liza/<task_id>`."""
    validate_task_id(task_id)
    return f"{BRANCH_PREFIX}{task_id}"


def _admin_entries_for(lay: TaskLayout, task_id: str, path: Path) -> list[AdminEntry]:
    """Entries that point at the task's directory, plus a broken entry carrying the task's name."""
    return [
        e for e in admin_entries(lay.common_dir)
        if e.checkout == path or (e.checkout is None and e.name == task_id)
    ]


# --------------------------------------------------------------------------- task worktrees


@dataclass(frozen=True)
class TaskWorktree:
    """A task's checkout: `path` (absolute) is `<main>/<rel>`, on `branch` at `head`."""

    task_id: str
    path: Path
    rel: Path
    branch: str
    head: Oid
    created: bool  # False when a clean leftover at the same base was reused

    @property
    def ref(self) -> str:
        return f"refs/heads/{self.branch}"


def add_task_worktree(repo: Repository, task_id: str, base: Oid, *, fresh: bool = False,
                      bounds: tuple[int, int] | None = None) -> TaskWorktree:
    """Create branch `liza/<task_id>` at `base` and check it out at `<main>/.worktrees/<task_id>`.

    Leftovers: a worktree already on that branch, at `base`, and clean is reused (`created=False`;
    it holds no work, so reuse equals recreation and a racing claimer never deletes a winner's
    checkout). A branch at `base` without a worktree is reused too. Admin data whose directory
    vanished, and an empty unregistered directory, are cleaned away. Anything holding work (branch
    elsewhere, dirty checkout, unknown files) is refused with ValidationError, unless `fresh=True`,
    which removes every leftover first (the spec's `wt-create.sh --fresh`).

    A tree whose checkout would write past `bounds` (bytes, files; default: core/treerules.py's)
    is refused (CheckoutTooLarge) before anything is written, leftovers included.
    """
    lay = task_layout(repo)
    path = lay.task_path(task_id)
    main = main_repository(repo)
    require_commit(main, base)
    treecheck.refuse_large(main, base, bounds or treerules.checkout_bounds(None, None), task_id)
    with worktree_mutex(repo):
        ensure_excluded(lay.common_dir, WORKTREES_DIR)
        if fresh:
            _remove_locked(main, lay, task_id, path)
        existing = _reusable_leftover(main, lay, task_id, path, base)
        if existing is not None:
            return existing
        _create_locked(main, lay, task_id, path, base)
    return _task_worktree(lay, task_id, path, created=True)


def remove_task_worktree(repo: Repository, task_id: str) -> None:
    """Remove the task's directory, its worktree admin data and branch `liza/<task_id>`.

    Idempotent: whatever is already gone is skipped. Refuses (GitFailure) only when the branch is
    checked out in some other worktree, since deleting it would orphan that checkout.
    """
    lay = task_layout(repo)
    path = lay.task_path(task_id)
    with worktree_mutex(repo):
        _remove_locked(main_repository(repo), lay, task_id, path)


def _task_worktree(lay: TaskLayout, task_id: str, path: Path, *, created: bool) -> TaskWorktree:
    return TaskWorktree(
        task_id=task_id, path=path, rel=path.relative_to(lay.main_root),
        branch=task_branch(task_id), head=worktree_head(path), created=created,
    )


def require_commit(repo: Repository, oid: Oid) -> pygit2.Commit:
    """The commit `oid`; NotFound when it is missing or not a commit."""
    obj = repo.get(oid)
    if not isinstance(obj, pygit2.Commit):
        raise NotFound(f"{oid} is not a commit in {repo.path}")
    return obj


def _reusable_leftover(
    main: Repository, lay: TaskLayout, task_id: str, path: Path, base: Oid
) -> TaskWorktree | None:
    """Clear garbage, refuse leftovers holding work, return a checkout that can be reused as is."""
    entries = _admin_entries_for(lay, task_id, path)
    for entry in entries:
        if entry.checkout is None or not path.exists():
            drop_admin(entry)
    live = [e for e in entries if e.checkout is not None and path.exists()]
    _check_branch_at_base(main, task_id, base)
    if live:
        _check_live_leftover(main, live[0], task_id, path)
        return _task_worktree(lay, task_id, path, created=False)
    if path.exists():
        _clear_unregistered_dir(path)
    return None


def _check_branch_at_base(main: Repository, task_id: str, base: Oid) -> None:
    ref = main.references.get(f"refs/heads/{task_branch(task_id)}")
    if ref is not None and ref_oid(ref) != base:
        raise ValidationError(
            f"branch {task_branch(task_id)} already exists at {ref_oid(ref)}, not at {base}",
            hint="it may hold work: remove the task worktree first, or add with fresh=True",
        )


def _check_live_leftover(main: Repository, entry: AdminEntry, task_id: str, path: Path) -> None:
    expected_ref = f"refs/heads/{task_branch(task_id)}"
    if entry.head_ref != expected_ref or main.references.get(expected_ref) is None:
        raise ValidationError(
            f"worktree {path} exists but is on {entry.head_ref or 'a detached HEAD'}"
            f"{'' if entry.head_ref != expected_ref else ' (deleted)'}, not on branch {expected_ref}",
            hint="remove the task worktree first, or add with fresh=True",
        )
    problems = clean_sync_problems(path)
    if problems:
        raise ValidationError(
            f"worktree {path} already exists with uncommitted changes: {'; '.join(problems[:5])}",
            hint="remove the task worktree first, or add with fresh=True",
        )


def _clear_unregistered_dir(path: Path) -> None:
    if path.is_dir() and not path.is_symlink() and not any(path.iterdir()):
        path.rmdir()
        return
    raise ValidationError(
        f"{path} exists but is not a registered worktree",
        hint="inspect and delete it, or add with fresh=True",
    )


def _create_locked(main: Repository, lay: TaskLayout, task_id: str, path: Path, base: Oid) -> None:
    name = task_branch(task_id)
    if (lay.common_dir / "worktrees" / task_id).exists():
        raise ValidationError(
            f"worktree name {task_id!r} is taken by a worktree outside {lay.worktrees_root}",
            hint="`git worktree remove` that worktree, or pick another task id",
        )
    lay.worktrees_root.mkdir(exist_ok=True)
    branch = main.branches.local.get(name)
    created_branch = branch is None
    if branch is None:
        commit = require_commit(main, base)
        branch = reflocks.retrying(lambda: main.branches.local.create(name, commit),
                                   f"cannot create branch {name}")
    try:
        main.add_worktree(task_id, str(path), branch)
    except (pygit2.GitError, OSError) as e:
        _undo_failed_add(main, lay, task_id, path, name if created_branch else None)
        raise GitFailure(f"could not create worktree {path} for branch {name}: {e}",
                         hint=hint_for(e)) from e


def _undo_failed_add(
    main: Repository, lay: TaskLayout, task_id: str, path: Path, branch: str | None
) -> None:
    # libgit2 creates `<commondir>/worktrees/<name>` before the checkout directory and leaves it
    # behind when a later step fails; without this, every retry would fail with "exists".
    for entry in _admin_entries_for(lay, task_id, path):
        drop_admin(entry)
    rmtree(path)
    if branch is not None:
        # Best effort: the add's own error says more than a failure to tidy up after it.
        with suppress(GitFailure):
            _delete_branch(main, branch)


def _remove_locked(main: Repository, lay: TaskLayout, task_id: str, path: Path) -> None:
    rmtree(path)
    for entry in _admin_entries_for(lay, task_id, path):
        drop_admin(entry)
    _delete_branch(main, task_branch(task_id))


def _delete_branch(main: Repository, name: str) -> None:
    branch = main.branches.local.get(name)
    if branch is None:
        return
    if branch.is_checked_out():
        raise GitFailure(
            f"cannot delete branch {name}: it is checked out in a worktree",
            hint="it is checked out in another worktree; switch that worktree away first")
    # Through git, never libgit2: libgit2 rewrites packed-refs from a read made before it takes
    # the lock, which undid a concurrent `git pack-refs` (git/refdelete.py).
    refdelete.delete(main, f"refs/heads/{name}", what=f"cannot delete branch {name}")


# --------------------------------------------------------------------------- temporary checkouts


@contextmanager
def temporary_checkout(repo: Repository, commit: Oid,
                       bounds: tuple[int, int] | None = None) -> Iterator[Path]:
    """A throw-away detached worktree of `commit` in the system temp dir, removed on exit.

    Registered as a real worktree (scripts run inside may call git), but outside `.worktrees/`,
    so it never looks like a task. Cleanup runs even when the body raises. A tree past `bounds`
    (default: core/treerules.py's) is refused before anything is written (CheckoutTooLarge).
    """
    main = main_repository(repo)
    require_commit(main, commit)
    treecheck.refuse_large(main, commit, bounds or treerules.checkout_bounds(None, None),
                           "the scratch checkout")
    holder = Path(tempfile.mkdtemp(prefix="liza-checkout-"))
    name = holder.name
    try:
        with worktree_mutex(repo):
            name = add_detached(main, name, holder / "checkout", commit).name
        yield holder / "checkout"
    finally:
        with worktree_mutex(repo):
            for entry in admin_entries(common_dir(repo)):
                if entry.name == name:
                    drop_admin(entry)
        rmtree(holder)
