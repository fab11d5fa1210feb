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

Two signs that packs were removed, both a system call or two:
- the mtime of packs.py's marks directory: a merge marks the packs it copied there, and packs.py
  removes a merged pack together with its mark, so every removal by gitliza (in any process)
  changes that directory, even of a pack born and removed between two looks of this handle;
- a pack index seen at the previous look and missing now: `git gc`, `git repack -d`, a
  `doctor --fix`, or marks of older versions (`<pack>.merged` in the pack directory).
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

from gitliza.git import packs


class OdbRefresh:
    """Watches the pack directory of one repository handle; `check` frees its object database
    when packs were removed since the last check."""

    def __init__(self, repo: Any) -> None:
        self.repo = repo
        objects = packs.objects_dir(repo)  # None inside a hook's quarantine: never free there
        self._pack_dir = None if objects is None else os.path.join(objects, "pack")
        self._marks_dir = None if objects is None else \
            os.path.join(os.path.dirname(os.path.abspath(objects)), packs.MARKS_DIR)
        self._marks: int | None = None
        self._seen: set[str] = set()
        self.frees = 0  # how many times the database was freed (tests, diagnostics)

    def check(self) -> bool:
        """Free the object database if packs were removed since the last call; whether it did."""
        if self._pack_dir is None or self._marks_dir is None:
            return False
        try:
            marks = os.stat(self._marks_dir).st_mtime_ns
        except OSError:
            marks = 0
        try:
            names = {n for n in os.listdir(self._pack_dir) if n.endswith(".idx")}
        except OSError:
            names = set()
        # The first look only records what is there: a handle looks when it starts reading, so it
        # has loaded next to nothing before it.
        stale = self._marks is not None and (marks != self._marks or not self._seen <= names)
        self._marks, self._seen = marks, names
        if stale:
            self.repo.free()
            self.frees += 1
        return stale
