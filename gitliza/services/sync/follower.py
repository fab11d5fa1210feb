"""The remote follower: every long-lived process that acts on the board (a supervisor,
`team`, `watch`, `web`) learns of the remote's changes within seconds, with no cron.

Every `follow_interval` seconds (board config, default 5; each wait drawn from 0.75-1.25 of it, so
that machines started together do not ask the remote in step) ONE thread per clone asks the remote
for its refs under refs/liza/ (`git ls-remote`: one request, no objects) and compares them with the
clone's tracking refs; only when something moved (a board op, a live ref's renewal), or when the
local board holds ops the remote lacks (an auto-sync that lost every race, a partition), does it
run a sync (engine.sync: fetch, replay, push). The sync moves the local board ref, which wakes every
supervisor of the clone (they wait on it, git/refwatch.py): an idle machine claims the task
another machine added a few seconds later.

One follower per clone, however many processes run there: each process runs a candidate thread,
and the one that holds an exclusive `flock` on `<git common dir>/liza/follower.lock` follows; the
others try again every interval, so when the follower's process ends (even killed) another takes
over within an interval. (A lease file would need clocks and a takeover rule; the kernel drops a
dead holder's lock by itself.)

Every check is recorded in `<git common dir>/liza/remote-contact.json` (when the remote last
answered, and since when it has not): `cut_off` reads it, so that every supervisor of the clone
stops claiming while the clone cannot reach its remote (docs/multi-machine.md "Partitions").
"""
from __future__ import annotations

import json
import os
import random
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from gitliza import atomic
from gitliza.git.repository import common_dir, open_repository, repo_path
from gitliza.errors import ConcurrencyConflict, LizaError

CONTACT = "remote-contact.json"
LOCK = "follower.lock"
JITTER = 0.25  # each wait is interval * (1 +- JITTER)
TIMEOUT = 20.0  # seconds for one ls-remote or sync of the follower: a hung remote is "no answer"


@dataclass(frozen=True)
class Contact:
    """What the follower last learnt of the remote, on this machine's clock (epoch seconds)."""

    remote: str
    checked: float  # the last check, answered or not
    ok: float | None  # the last check the remote answered (None: none since the follower began)
    since: float  # the start of the current episode: of answers when ok, of silence when not
    error: str | None = None  # why the last check failed

    def silent_for(self, now: float) -> float:
        """Seconds the remote has not answered (0 while it answers)."""
        if self.error is None:
            return 0.0
        return max(0.0, now - (self.ok if self.ok is not None else self.since))


def _dir(repo: Any) -> Path:
    return common_dir(repo) / "liza"


def read_contact(repo: Any) -> Contact | None:
    """The clone's contact record, or None (no follower ran here, or it is unreadable)."""
    try:
        raw = json.loads((_dir(repo) / CONTACT).read_text())
        return Contact(str(raw["remote"]), float(raw["checked"]),
                       None if raw.get("ok") is None else float(raw["ok"]), float(raw["since"]),
                       None if raw.get("error") is None else str(raw["error"]))
    except (OSError, ValueError, TypeError, KeyError):
        return None


def _write_contact(repo: Any, c: Contact) -> None:
    d = _dir(repo)
    try:
        d.mkdir(parents=True, exist_ok=True)
        atomic.write(d, CONTACT, json.dumps(c.__dict__, sort_keys=True).encode())
    except OSError:
        pass  # a read-only clone: its supervisors judge no partition (as before the follower)


def cut_off(repo: Any, remote: str, lease: int, interval: int, now: float,
            doing: str = "not claiming or taking over until it answers") -> str | None:
    """Why this clone must not claim or take over now, or None: its remote has not answered for
    more than half a lease (and two follow intervals). Half: a machine on the far side of the
    cut can take over a task of ours only after the whole lease plus its grace from the last
    renewal we shared, and a renewal is shared every third of a lease; stopping at half a lease
    keeps this clone from claiming what another machine may be claiming meanwhile."""
    c = read_contact(repo)
    if c is None or c.remote != remote or c.error is None:
        return None
    silent = c.silent_for(now)
    limit = max(lease / 2, 2 * interval)
    if silent <= limit:
        return None
    return (f"cut off from {remote} for {silent:.0f}s (more than {limit:.0f}s, half the "
            f"{lease}s lease): {doing} ({c.error})")


def moved(remote_refs: dict[str, str], tracking: dict[str, str], local_state: str | None,
          state_ref: str) -> bool:
    """Whether a sync is worth making: the remote's refs/liza/* differ from what this clone last
    fetched, or the local board is not the one last fetched (ops of ours the remote lacks)."""
    return remote_refs != tracking or local_state != tracking.get(state_ref)


def check(store: Any, rem: Any, *, timeout: float = TIMEOUT) -> Any:
    """One check: ls-remote, and a sync only when something moved. The SyncReport, or None when
    nothing had moved; raises what the transport or the sync raise."""
    from gitliza.git.remotes.remote import STATE_REF, read_ref, tracking_of
    from gitliza.git.remotes.direct import refs_under
    from gitliza.git.remotes.lsremote import board_refs
    from gitliza.services.sync import engine
    path = repo_path(store.repo)
    theirs = board_refs(path, rem, timeout=timeout)
    prefix = tracking_of(rem, STATE_REF)[: -len("state")]  # refs/remotes/<ns>/liza/
    tracking = {"refs/liza/" + name[len(prefix):]: oid
                for name, oid in refs_under(store.repo, prefix).items()}
    from gitliza.services import wip
    if not moved(theirs, tracking, read_ref(path, STATE_REF), STATE_REF) and all(
            tracking.get(n) == o for n, o in wip.mine(store.repo).items()):
        return None  # (a snapshot of ours the remote lacks is worth a sync: wiprefs.py)
    from gitliza.git.remotes.pushresults import PushRejected
    try:
        return engine.sync(store, rem, timeout=timeout)
    except (ConcurrencyConflict, PushRejected) as e:
        raise Busy(str(e)) from e


class Busy(Exception):
    """The remote answered the check, and the sync that followed did not finish for a reason of
    the remote's that is no silence: every round lost the race to other machines' pushes, or its
    hook refused. A busy remote is not a cut one: this clone's supervisors go on claiming and
    working (a fleet on a loaded machine loses races for minutes; stopping every agent then
    would be the partition rule firing without a partition)."""


class RemoteFollower:
    """A candidate follower thread for one process (`start_for` builds it): it follows while it
    holds the clone's follower lock, and tries to take it every interval otherwise."""

    def __init__(self, open_store: Callable[[], Any], remote: str,
                 log: Callable[[str], None]) -> None:
        self._open_store = open_store
        self.remote = remote
        self._log = log
        self._stop = threading.Event()
        self._lock_fd: int | None = None
        self._drop_offset: int | None = None
        self.tries = 0  # attempts at the lock while not leading
        self.checks = 0  # checks made while leading (tests and benchmarks count them)
        self.syncs = 0
        self._busy = False  # the last check's sync lost every race (said once per streak)
        self._thread = threading.Thread(target=self._run, name="liza-remote-follower",
                                        daemon=True)

    @property
    def leading(self) -> bool:
        return self._lock_fd is not None

    def start(self) -> RemoteFollower:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(TIMEOUT + 10)

    def _run(self) -> None:
        from gitliza.services.sync import droplog
        store = self._open_store()
        self._drop_offset = droplog.size(store.repo)  # older drops were said when they happened
        try:
            self._follow(store)
        finally:
            if self._lock_fd is not None:
                os.close(self._lock_fd)  # closing drops the flock: another candidate leads
                self._lock_fd = None
            free = getattr(store.repo, "free", None)
            if free is not None:
                free()

    def _follow(self, store: Any) -> None:
        from gitliza.git.remotes import remote as remotes
        interval = 5.0
        failing = False
        while not self._stop.is_set():
            try:
                interval = float(store.board()[0].config.follow_interval)
            except Exception:  # noqa: BLE001 - a board being rewritten: keep the last interval
                pass
            if self._lock_fd is None:
                self.tries += 1
                self._lock_fd = try_lock(_dir(store.repo))
            if self._lock_fd is not None:
                rem = remotes.resolve(repo_path(store.repo), self.remote)
                failing = self._check(store, rem, failing)
                self._drops(store.repo)
            self._stop.wait(interval * random.uniform(1 - JITTER, 1 + JITTER))

    def _check(self, store: Any, rem: Any, failing: bool) -> bool:
        """One check, its contact record and its lines; whether it failed."""
        now = time.time()
        before = read_contact(store.repo)
        last_ok = before.ok if before is not None and before.remote == self.remote else None
        self.checks += 1
        try:
            report = check(store, rem)
        except Busy as e:
            since = before.since if before is not None and before.error is None and \
                before.remote == self.remote else now
            _write_contact(store.repo, Contact(self.remote, now, now, since))
            if failing:
                self._log(f"follower: {self.remote} answers again")
            if not self._busy:
                self._log(f"follower: {self.remote} answers, but the sync did not finish: {e} "
                          "(the next check syncs again)")
            self._busy = True
            return False
        except (LizaError, OSError) as e:
            since = before.since if before is not None and before.error is not None and \
                before.remote == self.remote else now
            _write_contact(store.repo, Contact(self.remote, now, last_ok, since, str(e)))
            if not failing:
                self._log(f"follower: cannot reach {self.remote}: {e} (asking again every "
                          f"interval)")
            return True
        since = before.since if before is not None and before.error is None and \
            before.remote == self.remote else now
        _write_contact(store.repo, Contact(self.remote, now, now, since))
        if failing:
            self._log(f"follower: {self.remote} answers again")
        self._busy = False
        if report is not None:
            self.syncs += 1
            self._say(report)
        return False

    def _drops(self, repo: Any) -> None:
        """Every sync's drops recorded since this follower last looked (droplog.py), whichever
        process ran the sync (an agent's auto-sync too): one line each, with the rescue ref."""
        from gitliza.services.sync import droplog
        entries, self._drop_offset = droplog.read(repo, self._drop_offset or 0)
        for e in droplog.current(entries):
            self._log(f"follower: DROPPED OPS: {droplog.describe(e)}")

    def _say(self, report: Any) -> None:
        """What a sync of the follower did that the team must hear: each op of this clone it
        dropped, with the reason, and the sync's notices (the summary with the rescue ref comes
        from the drop record, `_drops`)."""
        for d in report.dropped:
            self._log(f"follower: {d.describe()}")
        for n in report.notices:
            self._log(f"follower: {n}")


def try_lock(d: Path, name: str = LOCK) -> int | None:
    """The clone's lock `name` in `d` (the follower's; the forge bridge's too), or None when
    another process (or thread) holds it."""
    import fcntl
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd = os.open(d / name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def start_for(liza: Any, log: Callable[[str], None]) -> RemoteFollower | None:
    """A started candidate follower for the clone of `liza` (a Liza), or None when it shares with
    no remote (no `liza.remote`, or `--no-sync`)."""
    remote = liza.sync_remote()
    if remote is None:
        return None
    from gitliza.git.store import Store
    path = liza.repo.path

    def open_store() -> Any:
        return Store(open_repository(path))  # its own handle: pygit2 objects stay per thread
    return RemoteFollower(open_store, remote, log).start()


def hold(liza: Any, board: Any, doing: str | None = None) -> str | None:
    """Why a supervisor of `liza`'s clone must not claim now (`cut_off`), or None; `doing`: what
    it does instead, when not the claim's wait (the lease keeper stops a working agent)."""
    remote = liza.sync_remote()
    if remote is None:
        return None
    cfg = board.config
    return cut_off(liza.repo, remote, cfg.lease_duration, cfg.follow_interval, time.time(),
                   *(() if doing is None else (doing,)))
