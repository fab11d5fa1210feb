"""Letting go of removed packs: a repository handle frees its object database once packs it may
hold are gone from the disk.

libgit2 keeps every pack it has loaded (its index mapped, its pack file open once an object was
read from it) until the handle's object database is freed. On a miss it rescans objects/pack/ and
loads the packs it finds, but it never drops a pack that was deleted: the pack stays open and
mapped, and its disk space is not freed. gitliza writes one pack per transition and packs.py
merges and removes them (pack count stays under its budget), so a process that lives long (a
supervisor and its heartbeat thread, the MCP server, `watch`, `top`, `events --follow`, a program
on the library API) held one more deleted pack per transition it made or read: a supervisor at
`heartbeat_interval 1` went from 40 to 130 open files in a minute and died of "Too many open
files" after ~1,000 transitions.

`OdbRefresh.check()` runs where a handle starts a read of the board (`Store.tip`): when packs were
removed since its last look it calls `Repository.free()` (libgit2's `git_repository__cleanup`),
which drops the object database, the object cache, the config and the ref database; libgit2 opens
them again, lazily, on the next use, from what is on disk then. pygit2 objects read earlier stay
valid (they hold their own data and the repository, not the database).

Every object directory the handle reads is watched, not only the repository's own `objects/`:
gitliza's own store (`liza-objects/`, git/objects/ownstore.py), where the board's packs are written and
merged, and every alternate the repository lists (a `--reference` clone's, an agent's redirected
directory). A busy team's supervisor otherwise held 90 to 200 deleted packs of the own store.
Two signs that packs were removed, a few system calls:
- the mtime of packs.py's marks directory: a merge marks the packs it copied there, and packs.py
  removes a merged pack together with its mark, so every removal by gitliza (in any process, of
  the own store's packs too: its marks are kept in the same directory) changes that directory,
  even of a pack born and removed between two looks of this handle;
- a pack index seen at the previous look and missing now, in any of the watched pack
  directories: `git gc`, `git repack -d`, a `doctor --fix`, another repository's gitliza merging
  the packs of a store we read as an alternate, or marks of older versions (`<pack>.merged`).
A change within one tick of the file system clock can hide a removal from the first sign until
the next one; the packs held meanwhile are a few, never a growing number.

Not inside a hook's quarantine (GIT_QUARANTINE_PATH, GIT_OBJECT_DIRECTORY): there the handle's
database was given an alternate by hand (gitliza/hooks/repo.py), which a free would lose; hooks
are short-lived anyway. Each handle is used by one thread (the heartbeat thread opens its own),
and `check` runs in that thread, so nothing else uses the database while it is freed.
"""
from __future__ import annotations

import os
from typing import Any

from gitliza.git.objects import ownstore
from gitliza.git.objects import packs


class OdbRefresh:
    """Watches the pack directory of one repository handle; `check` frees its object database
    when packs were removed since the last check."""

    def __init__(self, repo: Any) -> None:
        self.repo = repo
        objects = packs.objects_dir(repo)  # None inside a hook's quarantine: never free there
        self._pack_dirs = [] if objects is None else \
            [os.path.join(d, "pack") for d in object_dirs(objects)]
        self._marks_dir = None if objects is None else \
            os.path.join(os.path.dirname(os.path.abspath(objects)), packs.MARKS_DIR)
        self._marks: int | None = None
        self._seen: list[set[str]] = [set() for _ in self._pack_dirs]
        self.frees = 0  # how many times the database was freed (tests, diagnostics)

    def check(self) -> bool:
        """Free the object database if packs were removed since the last call; whether it did."""
        if not self._pack_dirs or self._marks_dir is None:
            return False
        try:
            marks = os.stat(self._marks_dir).st_mtime_ns
        except OSError:
            marks = 0
        stale = marks != self._marks
        for i, pack_dir in enumerate(self._pack_dirs):
            try:
                names = {n for n in os.listdir(pack_dir) if n.endswith(".idx")}
            except OSError:
                names = set()
            stale = stale or not self._seen[i] <= names
            self._seen[i] = names
        # The first look only records what is there: a handle looks when it starts reading, so it
        # has loaded next to nothing before it.
        stale = stale and self._marks is not None
        self._marks = marks
        if stale:
            self.repo.free()
            self.frees += 1
        return stale


def object_dirs(objects: str) -> list[str]:
    """`objects` and every object directory it reads through: gitliza's own store (listed in
    objects/info/alternates, or about to be), the alternates listed there (recursively, as git
    reads them) and those of GIT_ALTERNATE_OBJECT_DIRECTORIES."""
    out: list[str] = []
    todo = [objects, ownstore.store_of(objects)] + [
        p for p in os.environ.get("GIT_ALTERNATE_OBJECT_DIRECTORIES", "").split(os.pathsep) if p]
    while todo and len(out) < 16:  # git's own limit on alternate nesting is 5: a cycle ends here
        d = os.path.realpath(todo.pop(0))
        if d in out:
            continue
        out.append(d)
        try:
            with open(os.path.join(d, "info", "alternates"), encoding="utf-8") as f:
                lines = [ln.strip() for ln in f]
        except OSError:
            continue
        todo += [os.path.join(d, ln) for ln in lines if ln and not ln.startswith("#")]
    return out


def collect_dropped(*, first: bool = False) -> None:
    """Close the packs that repository handles dropped since the last call still hold.

    A pygit2 handle is a reference cycle (the repository and its `branches`, `references`...), so
    one dropped by its last user is freed by the cycle collector, not at once, and a full
    collection is rare in a process whose long-lived objects number in the tens of thousands:
    meanwhile it keeps every pack it read open and mapped, deleted or not. A loop that opens
    short-lived handles (a claim's worktree, a merge, a sandbox's import) calls this once per
    round. `first`: what exists at start-up is moved out of the collector's sight (`gc.freeze`),
    so that each later call looks at what the loop made since (milliseconds, not the ~100 ms of
    a full collection of everything a supervisor imported)."""
    import gc
    gc.collect()
    if first:
        gc.freeze()
