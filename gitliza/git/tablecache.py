"""The parsed tables of board blobs, kept between processes for commands that read a whole board.

`git liza status` on a 1,000-task board reads and parses 1,000 blobs; the next `status` (after one
`add`, say) finds all but one of them unchanged, since blobs are immutable and named by their id.
A process keeps decoded entities in memory (gitliza/git/source.py); this keeps the parsed tables in
`<git common dir>/gitliza-tables.cache` (marshal: plain str/int/bool/list/dict, never code) for
the next process.

The file is only a cache: a missing, stale, foreign or corrupt one is ignored (and replaced), and
every table from it still goes through the codec's strict decoding. It is rewritten only when a
process had to parse many blobs it did not hold (so one `status` after each `add` does not rewrite
it each time), with what that process read: it follows the board and stays the board's size.
It is used by read commands only: `verify`, the hooks and every transition read blobs themselves.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from gitliza.atomic import read_marshal, write_marshal
from gitliza.git.repository import common_dir
from gitliza.git.source import Tables
from gitliza.git.store import Store

NAME = "gitliza-tables.cache"
_FORMAT = ("gitliza-tables", 1, sys.implementation.cache_tag)
# Rewritten after a process parsed this many tables the file did not hold, or a 64th of what it
# read, whichever is more. A table parsed costs ~40 us at every later read; the rewrite ~2.4 us per
# table kept, once: at 1,000 tasks, 16 misses (~0.6 ms of each later `status`) pay for it. (It
# was 64 whatever the board's size: a `status` after each of a few dozen transitions parsed up to
# 63 blobs again each time, ~1 ms on average at 1,000 tasks.)
REWRITE_AFTER = 16


def path_for(store: Store) -> Path:
    return common_dir(store.repo) / NAME


def load(path: Path) -> Tables:
    found = read_marshal(str(path))
    if isinstance(found, tuple) and len(found) == 2 and found[0] == _FORMAT \
            and isinstance(found[1], dict):
        return Tables(found[1])
    return Tables()


def save(path: Path, tables: Tables) -> None:
    """Atomically (another reader may be writing it too); nothing if the directory is read-only."""
    shared: dict[str, str] = {}
    write_marshal(str(path), (_FORMAT, {k: _shared(t, shared) for k, t in tables.used.items()}))


def _shared(v: Any, seen: dict[str, str]) -> Any:
    """`v` with equal keys and short strings made one object: marshal writes an object it has
    written before as a reference, so the file is ~40% smaller and loads ~3x faster."""
    if type(v) is dict:
        return {seen.setdefault(k, k): _shared(x, seen) for k, x in v.items()}
    if type(v) is list:
        return [_shared(x, seen) for x in v]
    if type(v) is str and len(v) <= 40:
        return seen.setdefault(v, v)
    return v


@contextmanager
def reading(store: Store) -> Iterator[Store]:
    """`store` reading its blobs' tables through the shared cache while the block runs."""
    path = path_for(store)
    tables = store.tables = load(path)
    try:
        yield store
    finally:
        store.tables = None
        if tables.missed >= max(REWRITE_AFTER, len(tables.used) // 64):
            save(path, tables)
