"""The supervisor's work-in-progress snapshots (services/wip.py): while a
coder's agent runs, every `wip_snapshot_interval` seconds its worktree (the coder's commits, its
uncommitted and untracked-not-ignored edits) becomes `refs/liza/wip/<task>/<agent>`, pushed to
the remote at once, that ref alone (services/sync/wipshare.py); should that push fail, the
clone's remote follower shares it with its next sync (it syncs when a snapshot of ours is new:
services/sync/follower.py). Unchanged work makes no snapshot.

A sandboxed coder's commits live in its own git directory until the supervisor brings them in
(sandbox/gitview.py): the snapshot is made over its private tip, fetched into gitliza's own store
(not moving the task branch: that stays the supervisor's import), so they survive the machine too.

A thread of its own, not the lease keeper's: `git add` of a big worktree must not delay a renewal.
"""
from __future__ import annotations

import threading
from typing import Callable

import pygit2

from gitliza.core.states import Role
from gitliza.errors import LizaError
from gitliza.sandbox import gitview
from gitliza.services.api import Liza
from gitliza.services import wip
from gitliza.services.locations import task_dir
from gitliza.services.sync import wipshare


class Snapshots:
    def __init__(self, open_liza: Callable[[], Liza], agent: str, task: str,
                 coder: gitview.CoderRepo | None, interval: float,
                 log: Callable[[str], None]) -> None:
        self._open_liza, self.agent, self.task, self.coder = open_liza, agent, task, coder
        self.interval, self._log = interval, log
        self._stop = threading.Event()
        self.made = 0  # snapshots written (tests count them)
        self._failing = False
        self._unshared = False  # the last snapshot's own push failed (said once per streak)
        self._thread = threading.Thread(target=self._run, name="liza-wip-snapshots", daemon=True)

    def start(self) -> Snapshots:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)

    def _run(self) -> None:
        liza = self._open_liza()
        try:
            while not self._stop.wait(self.interval):
                self.take(liza)
        finally:
            liza.repo.free()

    def take(self, liza: Liza) -> pygit2.Oid | None:
        """One snapshot, if the agent still holds the task and anything changed; a failure is said
        once (until one succeeds again), never fatal: the agent works on."""
        try:
            if not wip.holds(liza.board(), self.task, self.agent):
                return None
            path = task_dir(liza.repo, self.task)
            if not (path / ".git").exists():
                return None
            parent = gitview.private_tip(liza.repo, self.coder) if self.coder else None
            made = wip.snapshot(liza.repo, self.task, self.agent, path, parent)
        except (LizaError, OSError, pygit2.GitError) as e:
            if not self._failing:
                self._log(f"cannot snapshot {self.task}'s work in progress: {e}")
            self._failing = True
            return None
        self._failing = False
        self.made += made is not None
        if made is not None:
            self._share(liza, made)
        return made

    def _share(self, liza: Liza, made: pygit2.Oid) -> None:
        """The new snapshot to the remote at once; a failure is said once (until a push
        succeeds again), never fatal: the follower's next sync shares it."""
        try:
            why = wipshare.share(liza, self.task, self.agent, made)
        except (LizaError, OSError, pygit2.GitError) as e:
            why = str(e)
        if why is not None and not self._unshared:
            self._log(f"snapshot of {self.task} kept here, not pushed yet ({why}): the "
                      "follower's next sync shares it")
        self._unshared = why is not None


def start(liza: Liza, open_liza: Callable[[], Liza], agent: str, role: Role, task: str | None,
          coder: gitview.CoderRepo | None, log: Callable[[str], None]) -> Snapshots | None:
    """The snapshots of a coder's session on `task` (none for another role)."""
    if role != Role.CODER or task is None:
        return None
    interval = float(liza.board().config.wip_snapshot_interval)
    return Snapshots(open_liza, agent, task, coder, interval, log).start()
