"""Git-side primitives for task worktrees: create, reuse, remove, inspect.

A task `<id>` owns branch `refs/heads/liza/<id>` and a linked worktree at `<main>/.worktrees/<id>`,
where `<main>` is the main worktree of the repository (even when the caller's `Repository` was
opened from inside some other worktree). No board logic lives here: callers decide *when*; this
module only makes the disk agree, safely, and tells what is on disk.

Every mutation of worktree administration data happens under `worktree_mutex`, because concurrent
`git worktree add` (git or libgit2) races on `<commondir>/worktrees/` and fails intermittently.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import pygit2
from pygit2 import Oid, Repository
from pygit2.enums import FileStatus, RepositoryOpenFlag, RepositoryState, SubmoduleStatus

from gitliza.errors import ConcurrencyConflict, GitFailure, NotFound, ValidationError, hint_for
from gitliza.git import reflocks
from gitliza.git.repository import common_dir

WORKTREES_DIR = ".worktrees"
BRANCH_PREFIX = "liza/"
LOCK_FILE = "liza-worktrees.lock"
_TEMP_BRANCH_PREFIX = "refs/heads/liza-tmp/"
_LOCK_POLL_SECONDS = 0.05


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


def _validate_task_id(task_id: str) -> None:
    single = bool(task_id) and Path(task_id).name == task_id and task_id not in (".", "..")
    if not single or "\\" in task_id or "\0" in task_id:
        raise ValidationError(f"task id {task_id!r} is not a single path component")
    if not pygit2.reference_is_valid_name(f"refs/heads/{BRANCH_PREFIX}{task_id}"):
        raise ValidationError(f"task id {task_id!r} is not valid in a branch name")


@dataclass(frozen=True)
class _Layout:
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
        _validate_task_id(task_id)
        root = self.worktrees_root
        path = contained_path(root, task_id)
        if path != root / task_id:
            raise ValidationError(f"{root / task_id} is a symlink; refusing to use it")
        return path


def ref_oid(ref: pygit2.Reference) -> Oid:
    """The commit a (possibly symbolic) reference ends at."""
    target = ref.resolve().target
    if not isinstance(target, Oid):
        raise GitFailure(f"reference {ref.name} does not resolve to an object id")
    return target


def _main_repo(repo: Repository) -> Repository:
    return Repository(str(common_dir(repo)))


# The human-facing files (views, reports, PAUSE/ABORT/CHECKPOINT), in the main worktree.
LIZA_DIR = ".liza"


def liza_path(repo: Repository) -> Path:
    """`<main worktree>/.liza` (`<git dir>/.liza` for a bare repository); not created here."""
    return (main_worktree(repo) or Path(repo.path)) / LIZA_DIR


def main_worktree(repo: Repository) -> Path | None:
    """The main worktree's directory (task worktree paths on the board are relative to it), or
    None for a bare repository."""
    main = _main_repo(repo)
    return None if main.is_bare or main.workdir is None else Path(main.workdir).resolve()


def _layout(repo: Repository) -> _Layout:
    main = _main_repo(repo)
    if main.is_bare or main.workdir is None:
        raise ValidationError(f"{main.path} is a bare repository: task worktrees need a main worktree")
    return _Layout(common_dir=Path(main.path).resolve(), main_root=Path(main.workdir).resolve())


def held_here(repo: Repository, task_id: str) -> bool:
    """Whether this clone is the machine that holds the task: it has something of the task's in
    git (its branch liza/<task>, its worktree's admin entry, or its directory). A claim always
    creates the branch and the worktree where it runs, and sync never creates either for another
    machine's claim (it mirrors task branches into tracking refs only), so a task CLAIMED on the
    board with none of them here is held on another machine: its worktree is not this clone's to
    judge. A bare repository (a server) holds none. Cheap: two stats and one ref lookup."""
    main = _main_repo(repo)
    if main.is_bare or main.workdir is None:
        return False
    return ((Path(main.workdir) / WORKTREES_DIR / task_id).exists()
            or (common_dir(repo) / "worktrees" / task_id).exists()
            or repo.references.get(f"refs/heads/{task_branch(task_id)}") is not None)


def task_branch(task_id: str) -> str:
    """Short branch name of a task: `liza/<task_id>`."""
    _validate_task_id(task_id)
    return f"{BRANCH_PREFIX}{task_id}"


# --------------------------------------------------------------------------- mutex


@contextmanager
def worktree_mutex(repo: Repository, *, timeout: float | None = None) -> Iterator[None]:
    """Serialise worktree mutations of one repository across processes and threads.

    flock on `<commondir>/liza-worktrees.lock`: the kernel drops the lock when the holder dies, so it
    can never go stale. The file is never deleted (deleting it would let two processes lock two
    different inodes). Not re-entrant: a second acquisition in the same thread deadlocks (or times
    out). `timeout=None` waits forever; otherwise ConcurrencyConflict once it has elapsed.
    """
    lock_path = common_dir(repo) / LOCK_FILE
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        _acquire(fd, lock_path, timeout)
        yield
    finally:
        os.close(fd)  # closing the only descriptor releases the flock


def _acquire(fd: int, lock_path: Path, timeout: float | None) -> None:
    if timeout is None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise ConcurrencyConflict(
                    f"worktree lock {lock_path} is held by another process",
                    hint="retry when the other worktree operation has finished",
                ) from None
            time.sleep(_LOCK_POLL_SECONDS)


# --------------------------------------------------------------------------- admin data on disk


@dataclass(frozen=True)
class _AdminEntry:
    """One `<commondir>/worktrees/<name>` directory, read directly so broken ones show up too."""

    name: str
    admin_dir: Path
    checkout: Path | None  # None when the `gitdir` file is missing (a crashed or failed add)
    head_ref: str | None
    head_oid: Oid | None
    locked: bool


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _parse_head(content: str | None) -> tuple[str | None, Oid | None]:
    if content is None:
        return None, None
    if content.startswith("ref:"):
        return content[4:].strip(), None
    try:
        return None, Oid(hex=content)
    except ValueError:
        return None, None


def _admin_entry(admin_dir: Path) -> _AdminEntry:
    gitdir = _read_text(admin_dir / "gitdir")
    # git may write the path relative to the admin dir (worktree.useRelativePaths); both resolve.
    checkout = (admin_dir / gitdir).resolve().parent if gitdir else None
    head_ref, head_oid = _parse_head(_read_text(admin_dir / "HEAD"))
    return _AdminEntry(
        name=admin_dir.name, admin_dir=admin_dir, checkout=checkout,
        head_ref=head_ref, head_oid=head_oid, locked=(admin_dir / "locked").exists(),
    )


def _admin_entries(common: Path) -> list[_AdminEntry]:
    base = common / "worktrees"
    if not base.is_dir():
        return []
    return [_admin_entry(d) for d in sorted(base.iterdir()) if d.is_dir() and not d.is_symlink()]


def _admin_entries_for(lay: _Layout, task_id: str, path: Path) -> list[_AdminEntry]:
    """Entries that point at the task's directory, plus a broken entry carrying the task's name."""
    return [
        e for e in _admin_entries(lay.common_dir)
        if e.checkout == path or (e.checkout is None and e.name == task_id)
    ]


def _drop_admin(entry: _AdminEntry) -> None:
    # Equivalent to `git worktree prune` for one entry, but also for locked or half-written
    # entries, which pygit2's prune() refuses; the caller has already decided it is garbage.
    _rmtree(entry.admin_dir)


def _rmtree(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
        return
    if path.exists():
        shutil.rmtree(path, onerror=_make_writable_and_retry)


def _make_writable_and_retry(func: Callable[..., object], target: str, _exc: object) -> None:
    # Read-only files (git pack files, for one) make rmtree fail; a missing file is already gone.
    try:
        os.chmod(os.path.dirname(target) or ".", stat.S_IRWXU)
        if not os.path.islink(target):
            os.chmod(target, stat.S_IRWXU)
        func(target)
    except FileNotFoundError:
        pass


# --------------------------------------------------------------------------- opening checkouts


def _open_checkout(path: Path | str) -> Repository:
    """Open exactly the worktree at `path`: NO_SEARCH so a stray directory below the main worktree
    is never silently taken for the main repository."""
    try:
        checkout = Repository(str(path), RepositoryOpenFlag.NO_SEARCH)
    except pygit2.GitError as e:
        raise GitFailure(f"{path} is not a git worktree: {e}") from e
    if checkout.is_bare:
        raise ValidationError(f"{path} is a bare repository, not a worktree")
    return checkout


def worktree_head(path: Path | str) -> Oid:
    """The commit checked out in the worktree at `path`."""
    checkout = _open_checkout(path)
    if checkout.head_is_unborn:
        raise GitFailure(f"worktree {path} has no commit checked out (unborn HEAD)")
    return ref_oid(checkout.head)


# --------------------------------------------------------------------------- clean sync


_INDEX_WORDS = {
    FileStatus.INDEX_NEW: "staged new file",
    FileStatus.INDEX_MODIFIED: "staged modification",
    FileStatus.INDEX_DELETED: "staged deletion",
    FileStatus.INDEX_RENAMED: "staged rename",
    FileStatus.INDEX_TYPECHANGE: "staged type change",
}
_WORKDIR_WORDS = {
    FileStatus.WT_NEW: "untracked",
    FileStatus.WT_MODIFIED: "modified",
    FileStatus.WT_DELETED: "deleted",
    FileStatus.WT_RENAMED: "renamed",
    FileStatus.WT_TYPECHANGE: "type changed",
    FileStatus.WT_UNREADABLE: "unreadable",
    FileStatus.CONFLICTED: "unresolved merge conflict",
}
_SUBMODULE_WORDS = {
    SubmoduleStatus.INDEX_ADDED: "staged addition",
    SubmoduleStatus.INDEX_DELETED: "staged deletion",
    SubmoduleStatus.INDEX_MODIFIED: "staged commit change",
    SubmoduleStatus.WD_ADDED: "added but not staged",
    SubmoduleStatus.WD_DELETED: "deleted",
    SubmoduleStatus.WD_MODIFIED: "checked-out commit differs from the recorded one",
    SubmoduleStatus.WD_INDEX_MODIFIED: "staged changes inside",
    SubmoduleStatus.WD_WD_MODIFIED: "uncommitted changes inside",
    SubmoduleStatus.WD_UNTRACKED: "untracked files inside",
}


def clean_sync_problems(path: Path | str, *, untracked: bool = True) -> list[str]:
    """Why the worktree at `path` violates the Clean Sync Invariant; [] means clean.

    Counts what `git status --porcelain` shows: modified, staged, conflicted and untracked (not
    ignored) files, dirty or out-of-sync submodules, plus an operation in progress (merge,
    rebase..., or a git command holding the index lock). `untracked=False` leaves untracked files out (a fast-forward of a checkout
    tolerates them, like git does). One human-readable line per problem.
    """
    checkout = _open_checkout(path)
    problems = _state_problems(checkout)
    submodules = set(checkout.listall_submodules())
    mode = "normal" if untracked else "no"
    for file, flags in sorted(checkout.status(untracked_files=mode).items()):
        if file in submodules:
            problems.append(_describe_submodule(checkout, file, flags))
        else:
            problems.append(_describe_file(file, flags))
    return problems


def _state_problems(checkout: Repository) -> list[str]:
    problems = []
    if (Path(checkout.path) / "index.lock").exists():
        # A git command is writing the index right now: whatever status says is about to change.
        problems.append("the index is locked by a running git command (index.lock)")
    state = checkout.state()
    if state != RepositoryState.NONE:
        name = RepositoryState(state).name or str(state)
        problems.append(f"a {name.lower().replace('_', ' ')} operation is in progress")
    return problems


def _words(flags: int, table: dict[FileStatus, str] | dict[SubmoduleStatus, str]) -> list[str]:
    return [word for flag, word in table.items() if flags & flag]


def _describe_file(file: str, flags: int) -> str:
    words = _words(flags, _INDEX_WORDS) + _words(flags, _WORKDIR_WORDS)
    return f"{file}: {', '.join(words) or f'status {flags:#x}'}"


def _describe_submodule(checkout: Repository, file: str, flags: int) -> str:
    try:
        sub_flags = int(checkout.submodules.status(checkout.submodules[file].name))
    except (pygit2.GitError, KeyError, ValueError):
        return f"submodule {_describe_file(file, flags)}"
    words = _words(sub_flags, _SUBMODULE_WORDS)
    return f"submodule {file}: {', '.join(words)}" if words else f"submodule {_describe_file(file, flags)}"


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


def add_task_worktree(repo: Repository, task_id: str, base: Oid, *, fresh: bool = False) -> TaskWorktree:
    """Create branch `liza/<task_id>` at `base` and check it out at `<main>/.worktrees/<task_id>`.

    Leftovers: a worktree already on that branch, at `base`, and clean is reused (`created=False`;
    it holds no work, so reuse equals recreation and a racing claimer never deletes a winner's
    checkout). A branch at `base` without a worktree is reused too. Admin data whose directory
    vanished, and an empty unregistered directory, are cleaned away. Anything holding work (branch
    elsewhere, dirty checkout, unknown files) is refused with ValidationError, unless `fresh=True`,
    which removes every leftover first (the spec's `wt-create.sh --fresh`).
    """
    lay = _layout(repo)
    path = lay.task_path(task_id)
    main = _main_repo(repo)
    require_commit(main, base)
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
    lay = _layout(repo)
    path = lay.task_path(task_id)
    with worktree_mutex(repo):
        _remove_locked(_main_repo(repo), lay, task_id, path)


def _task_worktree(lay: _Layout, task_id: str, path: Path, *, created: bool) -> TaskWorktree:
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


def ensure_excluded(common: Path, directory: str) -> bool:
    """Add `/<directory>/` to `<common-dir>/info/exclude` once, so that what gitliza keeps in the
    main worktree (`.worktrees/`, `.liza/`) stays out of every `git status` without touching a
    tracked .gitignore. Returns whether the line was added."""
    line = f"/{directory}/"
    exclude = common / "info" / "exclude"
    existing = _read_text(exclude) or ""
    accepted = {line, line.rstrip("/"), directory, f"{directory}/"}
    if accepted & {ln.strip() for ln in existing.splitlines()}:
        return False
    exclude.parent.mkdir(parents=True, exist_ok=True)
    with exclude.open("a") as f:
        f.write(("\n" if existing and not existing.endswith("\n") else "") + line + "\n")
    return True


def _reusable_leftover(
    main: Repository, lay: _Layout, task_id: str, path: Path, base: Oid
) -> TaskWorktree | None:
    """Clear garbage, refuse leftovers holding work, return a checkout that can be reused as is."""
    entries = _admin_entries_for(lay, task_id, path)
    for entry in entries:
        if entry.checkout is None or not path.exists():
            _drop_admin(entry)
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


def _check_live_leftover(main: Repository, entry: _AdminEntry, task_id: str, path: Path) -> None:
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


def _create_locked(main: Repository, lay: _Layout, task_id: str, path: Path, base: Oid) -> None:
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
    main: Repository, lay: _Layout, task_id: str, path: Path, branch: str | None
) -> None:
    # libgit2 creates `<commondir>/worktrees/<name>` before the checkout directory and leaves it
    # behind when a later step fails; without this, every retry would fail with "exists".
    for entry in _admin_entries_for(lay, task_id, path):
        _drop_admin(entry)
    _rmtree(path)
    if branch is not None:
        # Best effort: the add's own error says more than a failure to tidy up after it.
        with suppress(GitFailure):
            _delete_branch(main, branch)


def _remove_locked(main: Repository, lay: _Layout, task_id: str, path: Path) -> None:
    _rmtree(path)
    for entry in _admin_entries_for(lay, task_id, path):
        _drop_admin(entry)
    _delete_branch(main, task_branch(task_id))


def _delete_branch(main: Repository, name: str) -> None:
    if main.branches.local.get(name) is None:
        return
    def delete() -> None:
        branch = main.branches.local.get(name)
        if branch is not None:
            branch.delete()
        if main.references.get(f"refs/heads/{name}") is not None:
            # libgit2 1.9: a delete retried after failing on packed-refs.lock reports success
            # and leaves the packed ref; still there means the lock is still held.
            raise OSError(f"failed to lock file '{Path(main.path) / 'packed-refs.lock'}' for "
                          "writing")

    try:
        # Deleting takes packed-refs.lock too, which `git pack-refs` and `git gc --auto` hold.
        reflocks.retrying(delete, f"cannot delete branch {name}")
    except pygit2.GitError as e:
        raise GitFailure(
            f"cannot delete branch {name}: {e}",
            hint="it is checked out in another worktree; switch that worktree away first",
        ) from e


# --------------------------------------------------------------------------- temporary checkouts


@contextmanager
def temporary_checkout(repo: Repository, commit: Oid) -> Iterator[Path]:
    """A throw-away detached worktree of `commit` in the system temp dir, removed on exit.

    Registered as a real worktree (scripts run inside may call git), but outside `.worktrees/`,
    so it never looks like a task. Cleanup runs even when the body raises.
    """
    main = _main_repo(repo)
    require_commit(main, commit)
    holder = Path(tempfile.mkdtemp(prefix="liza-checkout-"))
    name = holder.name
    try:
        with worktree_mutex(repo):
            _add_detached(main, name, holder / "checkout", commit)
        yield holder / "checkout"
    finally:
        with worktree_mutex(repo):
            for entry in _admin_entries(common_dir(repo)):
                if entry.name == name:
                    _drop_admin(entry)
        _rmtree(holder)


def _add_detached(main: Repository, name: str, path: Path, commit: Oid) -> None:
    # libgit2 can only add a worktree on a branch: check out a scratch branch, detach, drop it.
    scratch = main.references.create(f"{_TEMP_BRANCH_PREFIX}{name}", commit, force=True)
    try:
        main.add_worktree(name, str(path), scratch)
        _open_checkout(path).set_head(commit)
    except (pygit2.GitError, OSError) as e:
        raise GitFailure(f"could not create a temporary checkout of {commit}: {e}") from e
    finally:
        scratch.delete()


# --------------------------------------------------------------------------- inspection


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
    lay = _layout(repo)
    root = lay.worktrees_root
    main = _main_repo(repo)
    found: dict[Path, TaskWorktreeEntry] = {}
    for entry in _admin_entries(lay.common_dir):
        path = entry.checkout or root / entry.name
        if path.parent == root:
            found[path] = _entry_from_admin(main, entry, path)
    if root.is_dir():
        for child in root.iterdir():
            if child not in found and child.is_dir() and not child.is_symlink():
                found[child] = _unregistered_entry(child)
    return sorted(found.values(), key=lambda e: e.task_id)


def _entry_from_admin(main: Repository, entry: _AdminEntry, path: Path) -> TaskWorktreeEntry:
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
    main = _main_repo(repo)
    found: list[Path] = []
    if not main.is_bare and main.workdir is not None:
        if _parse_head(_read_text(Path(main.path) / "HEAD"))[0] == refname:
            found.append(Path(main.workdir).resolve())
    for entry in _admin_entries(common_dir(repo)):
        if entry.head_ref == refname and entry.checkout is not None and entry.checkout.is_dir():
            found.append(entry.checkout)
    return found
