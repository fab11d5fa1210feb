"""git's ref lock files (`<ref>.lock`, `packed-refs.lock`): waiting them out, naming them, and
finding the ones a crashed writer left.

git and libgit2 take `<ref>.lock` to create, move or delete a ref, and `packed-refs.lock` to
delete one (its packed copy goes too) or to pack refs (`git pack-refs`, `git gc --auto`). A live
holder keeps a lock for milliseconds; a process killed inside its ref update leaves the file, and
every later update of that ref then fails until someone removes it. So:

- `retrying(fn, ...)` runs a ref update, waiting out a lock held by someone else for up to
  LOCK_WAIT_SECONDS, then raises RefLocked (exit 2) naming the lock, its age, and the fix;
- `stale(common, refs)` lists the lock files of gitliza's refs older than STALE_LOCK_SECONDS,
  with their owner, for `doctor` (which removes them with `--fix`).
"""
from __future__ import annotations

import os
import pwd
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, TypeVar

from gitliza.errors import ConcurrencyConflict

T = TypeVar("T")

# A real ref update holds its lock for microseconds; `git pack-refs` holds packed-refs.lock for
# as long as it takes to write the file (milliseconds for thousands of refs). A lock older than
# this is a crashed writer's.
STALE_LOCK_SECONDS = 5.0
# How long an update waits for a lock someone holds before giving up (and saying which lock).
LOCK_WAIT_SECONDS = 2.0
_DELAYS = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2)

_LOCKED = re.compile(r"failed to lock file '([^']+\.lock)'|'([^']+\.lock)': File exists"
                     r"|Unable to create '([^']+\.lock)'")


class RefLocked(ConcurrencyConflict):
    """A ref update found the ref's lock file held on every attempt. Nothing was changed."""

    code = "REF_LOCKED"

    def __init__(self, what: str, lock: Path) -> None:
        age = lock_age(lock)
        if age is None:
            text, hint = f"{what}: {lock} was held on every attempt", "retry"
        elif age >= STALE_LOCK_SECONDS:
            text = (f"{what}: {lock} is {age:.0f}s old, left by a writer that crashed "
                    f"(owner {owner(lock)})")
            hint = f"`git liza doctor --fix` removes it (or remove {lock})"
        else:
            text = f"{what}: {lock} is held by another git process"
            hint = "retry in a moment; if it stays, `git liza doctor --fix` removes it"
        super().__init__(text, hint=hint)
        self.lock = lock


def locked_path(e: BaseException) -> Path | None:
    """The lock file a libgit2 or git error names when the failure is a held lock, else None.
    A lock that could not be *created* (permission denied, read-only file system) is not a held
    lock: that error says so itself (errors.unexpected names the cause)."""
    text = str(e)
    if "Permission denied" in text or "Read-only file system" in text:
        return None
    m = _LOCKED.search(text)
    if m is None:
        return None
    return Path(next(g for g in m.groups() if g))


def retrying(fn: Callable[[], T], what: str, *, wait: float = LOCK_WAIT_SECONDS,
             sleep: Callable[[float], None] = time.sleep) -> T:
    """`fn()`, again while it fails on a held ref lock, for up to `wait` seconds; then RefLocked.
    A lock found stale (older than any live writer holds one) is not waited for."""
    deadline = time.monotonic() + wait
    attempt = 0
    while True:
        try:
            return fn()
        except Exception as e:  # pygit2 raises GitError or OSError for a held lock
            lock = locked_path(e)
            if lock is None:
                raise
            age = lock_age(lock)
            if time.monotonic() >= deadline or (age is not None and age >= STALE_LOCK_SECONDS):
                raise RefLocked(what, lock) from None
        sleep(_DELAYS[min(attempt, len(_DELAYS) - 1)])
        attempt += 1


def lock_age(lock: Path) -> float | None:
    try:
        return max(0.0, time.time() - lock.stat().st_mtime)
    except OSError:
        return None


def owner(lock: Path) -> str:
    try:
        uid = lock.stat().st_uid
    except OSError:
        return "?"
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


@dataclass(frozen=True)
class StaleLock:
    path: Path
    ref: str  # what it locks: a ref name, or "packed-refs"
    age: float
    owner: str


def stale(common: Path, prefixes: Iterable[str], refs: Iterable[str] = (),
          min_age: float = STALE_LOCK_SECONDS) -> list[StaleLock]:
    """Lock files at least `min_age` old of: `packed-refs`, each ref in `refs`, and every ref
    under each of `prefixes` (e.g. "refs/heads/liza/", "refs/liza/")."""
    now = time.time()
    found: list[Path] = [common / "packed-refs.lock"] + [common / f"{r}.lock" for r in refs]
    for prefix in prefixes:
        top = common / prefix
        for root, _dirs, files in os.walk(top):
            found += [Path(root) / f for f in files if f.endswith(".lock")]
    out: list[StaleLock] = []
    seen: set[Path] = set()
    for path in found:
        if path in seen:
            continue
        seen.add(path)
        try:
            st = path.stat()
        except OSError:
            continue
        age = now - st.st_mtime
        if age < min_age:
            continue
        ref = path.relative_to(common).as_posix()[: -len(".lock")]
        out.append(StaleLock(path, ref, age, owner(path)))
    return out
