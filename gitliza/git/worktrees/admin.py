"""Git's worktree administration data, `<common dir>/worktrees/<name>/`, and the lock over it.

Entries are read straight from disk, so broken ones (a crashed or failed add, a checkout whose
directory vanished) show up too, and dropped whole when the caller has judged them garbage.
Every change to them happens under `worktree_mutex`, because concurrent `git worktree add` (git
or libgit2) races on `<common dir>/worktrees/` and fails intermittently.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pygit2 import Oid, Repository

from gitliza.errors import ConcurrencyConflict
from gitliza.git.repository import common_dir

LOCK_FILE = "liza-worktrees.lock"
_LOCK_POLL_SECONDS = 0.05


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


@dataclass(frozen=True)
class AdminEntry:
    """One `<commondir>/worktrees/<name>` directory, read directly so broken ones show up too."""

    name: str
    admin_dir: Path
    checkout: Path | None  # None when the `gitdir` file is missing (a crashed or failed add)
    head_ref: str | None
    head_oid: Oid | None
    locked: bool


def read_text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def parse_head(content: str | None) -> tuple[str | None, Oid | None]:
    if content is None:
        return None, None
    if content.startswith("ref:"):
        return content[4:].strip(), None
    try:
        return None, Oid(hex=content)
    except ValueError:
        return None, None


def admin_entry(admin_dir: Path) -> AdminEntry:
    gitdir = read_text(admin_dir / "gitdir")
    # git may write the path relative to the admin dir (worktree.useRelativePaths); both resolve.
    checkout = (admin_dir / gitdir).resolve().parent if gitdir else None
    head_ref, head_oid = parse_head(read_text(admin_dir / "HEAD"))
    return AdminEntry(
        name=admin_dir.name, admin_dir=admin_dir, checkout=checkout,
        head_ref=head_ref, head_oid=head_oid, locked=(admin_dir / "locked").exists(),
    )


def admin_entries(common: Path) -> list[AdminEntry]:
    base = common / "worktrees"
    if not base.is_dir():
        return []
    return [admin_entry(d) for d in sorted(base.iterdir()) if d.is_dir() and not d.is_symlink()]


def drop_admin(entry: AdminEntry) -> None:
    # Equivalent to `git worktree prune` for one entry, but also for locked or half-written
    # entries, which pygit2's prune() refuses; the caller has already decided it is garbage.
    rmtree(entry.admin_dir)


def rmtree(path: Path) -> None:
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
