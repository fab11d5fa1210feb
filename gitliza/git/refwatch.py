"""Block until the board changes: the one primitive every waiter uses (no polling).

    from gitliza.git.refwatch import RefWatcher

    with RefWatcher(repo_path) as w:        # start watching BEFORE reading the board
        while not condition(liza.board()):
            if not w.wait(timeout=30):     # True: something changed; False: timed out
                break                      # (time-based conditions: pass the time left)
        print(w.tip(), w.flags())          # current refs/liza/state oid, {"PAUSE", ...}

What it watches (inotify through watchdog; nothing is read on a timer):
- the board ref as a loose file, `<common dir>/refs/liza/state` (git and libgit2 write
  `state.lock` and rename it over `state`, which arrives as a move event),
- `<common dir>/packed-refs` (a `git pack-refs` or a ref update that only rewrote the packed copy),
- `<main worktree>/.liza/` for the control files PAUSE, ABORT and CHECKPOINT, which the reference
  protocol uses on one machine (the board ops `pause`/`abort`/`checkpoint` reach every machine).

`wait` returns as soon as any of them changed since the previous `wait` (or since the watcher
started), so the usual check-then-wait loop loses no wake-up: a change between the check and the
wait leaves the flag set and the wait returns at once. Spurious wake-ups are possible (a ref
rewritten with the same oid, an unrelated file in `.liza/`); callers re-check their condition.
Watching a linked worktree's repository watches the shared common dir, so every worktree of one
repository sees the same changes.
"""
from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from types import TracebackType
from typing import Any, Callable

import pygit2
from watchdog.events import FileSystemEventHandler

from gitliza.git import longlived
from gitliza.git.repository import common_dir, open_repository
from gitliza.git.store import STATE_REF
from gitliza.git.repository import LIZA_DIR, main_worktree

CONTROL_FILES = ("PAUSE", "ABORT", "CHECKPOINT")


class RefWatcher:
    """Watches one repository's board ref (and `.liza/` control files) for changes."""

    def __init__(self, repo_path: str | os.PathLike[str] = ".", ref: str = STATE_REF, *,
                 control_files: bool = True) -> None:
        # A process that watches the refs lives long: it is the one pygit2's lookups would fill
        # with every name they were given, and libgit2's pack windows with every page it read
        # (longlived.py). A one-shot command does not pay for it.
        longlived.install()
        self._repo = open_repository(repo_path)
        self.ref = ref
        self.common = common_dir(self._repo)
        self.ref_file = self.common / ref
        self.packed = self.common / "packed-refs"
        root = main_worktree(self._repo)
        self.liza_dir: Path | None = root / LIZA_DIR if root is not None and control_files \
            else None
        self._changed = threading.Event()
        self._observer: Any = None
        self.wakeups = 0  # changes seen (for benchmarks and diagnostics)

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> RefWatcher:
        if self._observer is not None:
            return self
        from watchdog.observers import Observer
        _quiet_watchdog()
        obs = Observer()
        handler = _Handler(self._relevant, self._signal)
        # The ref's directory may not exist yet (no board): watch its nearest existing parent
        # recursively, which sees the directory and the ref being created.
        ref_dir = self.ref_file.parent
        while not ref_dir.exists() and ref_dir != self.common:
            ref_dir = ref_dir.parent
        obs.schedule(handler, str(ref_dir), recursive=ref_dir != self.ref_file.parent)
        if ref_dir != self.common:
            obs.schedule(handler, str(self.common), recursive=False)  # packed-refs
        if self.liza_dir is not None:
            self.liza_dir.mkdir(exist_ok=True)  # excluded from git (info/exclude)
            obs.schedule(handler, str(self.liza_dir), recursive=False)
        obs.daemon = True
        obs.start()
        self._observer = obs
        return self

    def close(self) -> None:
        obs, self._observer = self._observer, None
        if obs is not None:
            obs.stop()
            obs.join(timeout=5)

    def __enter__(self) -> RefWatcher:
        return self.start()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    # -- waiting --------------------------------------------------------------------------------
    def wait(self, timeout: float | None = None) -> bool:
        """Block until the board ref or a control file changed since the last call, or until
        `timeout` seconds passed (None: no limit). True when something changed."""
        if self._observer is None:
            self.start()
        if timeout is not None and timeout <= 0:
            hit = self._changed.is_set()
        else:
            hit = self._changed.wait(timeout)
        if hit:
            self._changed.clear()
        return hit

    def poke(self) -> None:
        """Wake a waiter from another thread (a signal handler, a supervisor stopping)."""
        self._signal()

    # -- reading --------------------------------------------------------------------------------
    def tip(self) -> str | None:
        """The board ref's current oid (hex), read afresh, or None when there is no board."""
        try:
            ref = self._repo.references.get(self.ref)
        except (pygit2.GitError, ValueError):
            return None
        return str(ref.resolve().target) if ref is not None else None

    def flags(self) -> frozenset[str]:
        """Which of the control files PAUSE, ABORT, CHECKPOINT exist in `.liza/` now."""
        if self.liza_dir is None:
            return frozenset()
        return frozenset(n for n in CONTROL_FILES if (self.liza_dir / n).exists())

    # -- events ---------------------------------------------------------------------------------
    def _signal(self) -> None:
        self.wakeups += 1
        self._changed.set()

    def _relevant(self, path: str) -> bool:
        p = Path(path)
        if p == self.ref_file or p == self.packed:
            return True
        return self.liza_dir is not None and p.parent == self.liza_dir and \
            p.name in CONTROL_FILES


def _quiet_watchdog() -> None:
    """watchdog logs an error when its inotify thread is stopped while events are still queued
    (a normal shutdown race). With no logging configured, Python's last-resort handler would
    print it as a stray stderr line next to our one-line errors; a NullHandler keeps it out
    while leaving it visible to an application that configures logging."""
    log = logging.getLogger("watchdog")
    if not log.handlers:
        log.addHandler(logging.NullHandler())


class _Handler(FileSystemEventHandler):
    def __init__(self, relevant: Callable[[str], bool], signal: Callable[[], None]) -> None:
        super().__init__()
        self._relevant = relevant
        self._signal = signal

    def on_any_event(self, event: Any) -> None:
        if getattr(event, "event_type", "") in ("opened", "closed_no_write"):
            return  # reads (our own tip() lookups) are not changes
        for path in (getattr(event, "src_path", None), getattr(event, "dest_path", None)):
            if path and self._relevant(os.fsdecode(path)):
                self._signal()
                return
