"""What a task's tree may not hold, and how large a tree may be before it is checked out (pure:
the git layer reads the names and sizes, gitliza/git/treecheck.py).

`.liza/` is gitliza's own directory in the main worktree (the materialized board, PAUSE, ABORT,
the agents' logs and prompts). A task tree holding a top-level `.liza` entry would, once merged,
be checked out into it: every supervisor would then refuse a tracked `.liza/` and the team would
stop (or a `.liza/PAUSE` would pause it). So no task tree may hold one, as git refuses `.git`:
compared the way a case-insensitive file system (and Windows, which drops trailing dots and
spaces) would see the name, since that is where it would land.

A tree's checkout writes every blob: a few MiB of objects (a sparse 1 GiB file of zeros, 20,000
empty files) become a GiB on the host's disk. Its size is bounded before any checkout.
"""
from __future__ import annotations

from typing import Iterable

LIZA_ENTRY = ".liza"
# Defaults of the human's keys `sandbox_checkout_max_mb` / `sandbox_checkout_max_files`: well past
# any real project's tree, far below what fills a disk.
CHECKOUT_MAX_MB = 2048
CHECKOUT_MAX_FILES = 200_000


def is_liza_name(name: str) -> bool:
    """Whether a top-level entry `name` would be (or land on) `.liza`."""
    return name.rstrip(". ").casefold() == LIZA_ENTRY


def liza_entry(top_names: Iterable[str]) -> str | None:
    """The first top-level entry of a tree that is gitliza's `.liza` (None: there is none)."""
    for name in top_names:
        if is_liza_name(name):
            return name
    return None


def liza_entry_line(what: str, commit: str, name: str) -> str:
    """The one line that refuses a tree holding `name` (a `.liza` entry)."""
    return (f"{what}: {commit[:12]} holds {name!r}: no task tree may hold a .liza entry "
            "(gitliza's own directory in the main worktree, as git refuses .git)")


def checkout_bounds(max_mb: int | None, max_files: int | None) -> tuple[int, int]:
    """(bytes, files) a checkout may write: the human's config, else the defaults."""
    return ((max_mb or CHECKOUT_MAX_MB) << 20, max_files or CHECKOUT_MAX_FILES)


def checkout_problem(what: str, commit: str, size: int, files: int,
                     bounds: tuple[int, int]) -> str | None:
    """One line when a tree of `size` bytes in `files` files is past `bounds` (None: within).
    `size` and `files` may be counts that stopped early, once past a bound (the walk does)."""
    max_bytes, max_files = bounds
    if files > max_files:
        return (f"{what}: {commit[:12]}'s tree holds more than {max_files:,} files: not checked "
                "out (config sandbox_checkout_max_files)")
    if size > max_bytes:
        return (f"{what}: {commit[:12]}'s tree holds more than {max_bytes >> 20:,} MB: not "
                "checked out (config sandbox_checkout_max_mb)")
    return None
