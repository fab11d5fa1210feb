"""A running coder's worktree (and its own git dir) held to the checkout bounds
(`sandbox_checkout_max_mb`, `sandbox_checkout_max_files`; docs/security.md "Limits"): a thread
of the session measures them now and then, and past either bound ends the run ("reached its
limit"), as the cgroup's limits end a runaway one. The same bounds refuse a tree before it is
checked out (the merge's and the review's checkouts); this is the tree a coder grows by itself,
which no cgroup bounds (a 1 GiB file of zeros is a few KiB of objects, and 1 GiB on disk).

A walk of the tree costs time in proportion to it: the next one waits ten times as long as the
last took, and at least `EVERY` seconds, so that a big project's worktree costs its supervisor a
tenth of a core at most.
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

EVERY = 5.0  # seconds between two walks, at least


@dataclass(frozen=True)
class Size:
    bytes: int
    files: int


def measure(roots: Iterable[Path], max_bytes: int, max_files: int) -> Size:
    """The regular files' sizes (their length: a sparse file counts whole, as its checkout would)
    and the count of entries other than directories, under `roots`, links not followed; the walk
    stops once past either bound."""
    total, files = 0, 0
    todo = [str(r) for r in roots]
    while todo and total <= max_bytes and files <= max_files:
        try:
            it = os.scandir(todo.pop())
        except OSError:
            continue
        with it:
            for e in it:
                try:
                    if e.is_dir(follow_symlinks=False):
                        todo.append(e.path)
                        continue
                    files += 1
                    if e.is_file(follow_symlinks=False):
                        total += e.stat(follow_symlinks=False).st_size
                except OSError:
                    continue
    return Size(total, files)


def over(size: Size, max_mb: int, max_files: int) -> str | None:
    """Which bound `size` passes, in words; None if neither."""
    if size.bytes > max_mb << 20:
        return f"its worktree holds over {max_mb} MB (sandbox_checkout_max_mb)"
    if size.files > max_files:
        return f"its worktree holds over {max_files:,} files (sandbox_checkout_max_files)"
    return None


class Watch:
    """Measures `roots` until closed; calls `hit(why)` once when past a bound."""

    def __init__(self, roots: tuple[Path, ...], max_mb: int, max_files: int,
                 hit: Callable[[str], None]) -> None:
        self.roots, self.max_mb, self.max_files, self.hit = roots, max_mb, max_files, hit
        self.why: str | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="disk-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        wait = EVERY
        while not self._done.wait(wait):
            t = time.monotonic()
            why = over(measure(self.roots, self.max_mb << 20, self.max_files), self.max_mb,
                       self.max_files)
            if why is not None:
                self.why = why
                self.hit(why)
                return
            wait = max(EVERY, 10 * (time.monotonic() - t))

    def close(self) -> None:
        self._done.set()
        self._thread.join(timeout=30)
