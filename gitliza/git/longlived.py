"""What a process that lives long (a supervisor, `git liza web`, `events --follow`, `watch`, the
MCP server: every process that watches refs) sets up once, and a one-shot command does not pay
for.

- glibc's allocator, set for a long life (allocator.py): a busy supervisor's heap grew by ~40 KB
  a task of free memory glibc kept, and the web board's likewise (its Python objects flat, its
  anonymous memory +7 MB in 28 minutes of a busy team). Set before the process starts threads
  where it can (the supervisor's loop, `git liza web`, the MCP server): an arena a thread took
  before stays.
- pygit2's lookups keep every reference name and tree path they are given: wrapped
  (reflookup.py, treepath.py).
- libgit2's pack windows. By default libgit2 maps a pack in windows of 1 GB and unmaps none until
  8 GB are mapped: a process that reads the board's history (the web board's columns of ended
  tasks, `log` through the MCP server, `verify`) keeps every page it ever read of every pack
  resident, for the life of the pack, and the packs grow with the history. In a busy team the web
  board's and the MCP server's resident pack pages grew 8 and 7 MB within 400 tasks, and on.
  Windows of WINDOW bytes, at most MAPPED bytes mapped: past it libgit2 unmaps the
  least recently used windows no read is using. What a reader reads again soon stays mapped;
  the cost is a mapping now and then (a window is one mmap call).
- libgit2's object cache. Every commit and tree of 4 KB or less that a process reads stays in it,
  up to 256 MB by default: ~1-3 KB per board commit read, so a process that walks the board's
  history (`log` through the MCP server, the web board's ended tasks, `events` from the start)
  keeps the whole history it ever read (10,000 board commits: ~11 MB, tests/git/test_longlived.py).
  Bounded at CACHE bytes: what is read again soon (the tip's trees) stays; past the bound libgit2
  lets entries go. (What a busy team's `watch` and web board still grow by, ~20 KB per merged
  task, is the board itself: its usage and archive records, one per run and per task.)
"""
from __future__ import annotations

# A window is one mmap call: 1 MB windows cost a reader of the whole board (~30 MB of packs at the
# 500th task of a busy team) some 30 calls a read, and keep what a supervisor reads (the live
# tasks, its writes' trees) in a few. 8 MB: a sixth of a supervisor's RSS, where 32 MB would let
# the web board's resident pack pages double its own memory before libgit2 unmapped any.
WINDOW = 1 << 20  # bytes of a pack mapped at once
MAPPED = 8 << 20  # bytes of packs mapped at most (libgit2 may pass it while windows are in use)
# A board commit and its trees are ~3 KB in the cache: 4 MB holds a thousand or more of them, far
# more than a loop reads again (the tip, the commits since its last look).
CACHE = 4 << 20  # bytes of libgit2's object cache

_done = False


def install() -> None:
    """Idempotent; call before the process opens its long-lived repository handles."""
    global _done
    if _done:
        return
    import pygit2

    from gitliza.git import allocator, reflookup
    allocator.set_for_long_life()
    reflookup.install()
    pygit2.settings.mwindow_size = WINDOW
    pygit2.settings.mwindow_mapped_limit = MAPPED
    pygit2.settings.cache_max_size(CACHE)
    _done = True
