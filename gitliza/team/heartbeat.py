"""The lease keeper: a background thread that runs while the agent works.

Every `interval` seconds it calls `beat`: one renewal off the audit chain (services/liveness.py,
on refs/liza/live/<agent>) that extends the task lease (for a reviewer, the review lease) and,
when due, the supervisor token; no commit on refs/liza/state. Between beats it sleeps on the board ref
(RefWatcher), and on every change calls `check`, which reads the board: a takeover, an abandon or
an op dropped by sync is seen at once, not at the next beat. Either returning a reason means the
agent lost its work: `on_lost(reason)` is called once (the supervisor stops the agent) and the
thread ends. `lease_keeper` builds the thread for a supervisor's agent: what it beats and checks.

The keeper renews only for a live supervisor: the supervisor's main loop feeds a `Watchdog` while it
waits for its agent, and once the stamp is older than half a lease the keeper stops renewing (the
task lease and the token), saying so once. A wedged supervisor (one was seen hung in a
futex wait) then loses its lease and its token the way a dead one does, and the watcher raises its
SUPERVISOR SILENT alarm (core/reports/alarms.py); should the loop move again, renewing resumes.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable

from gitliza.core.agents import wake
from gitliza.core.model import Config
from gitliza.core.states import Role
from gitliza.core.agents.wake import Hold
from gitliza.errors import LeaseLost, LizaError
from gitliza.git.refwatch import RefWatcher
from gitliza.services.api import Liza
from gitliza.services.sync import follower
from gitliza.team.generation import Generation, StandDown

Probe = Callable[[], "str | None"]


MAX_FAILURES = 3  # heartbeats failing in a row (not refused: failing) before the agent is stopped


def stuck_after(cfg: Config) -> float:
    """Seconds without a watchdog stamp after which the supervisor's loop counts as stuck."""
    return max(1.0, cfg.lease_duration / 2)


def watchdog_tick(cfg: Config) -> float:
    """How often a waiting main loop stamps the watchdog: well inside `stuck_after`, so that a
    loaded machine's late wake-up is not taken for a stuck loop."""
    return max(0.25, min(float(cfg.heartbeat_interval), stuck_after(cfg) / 4))


class Watchdog:
    """The main loop's proof of life: `feed` it while it makes progress (or waits as it
    should); `age` is how long ago it last did."""

    def __init__(self) -> None:
        self.stamp = time.monotonic()

    def feed(self) -> None:
        self.stamp = time.monotonic()  # one float store: safe from any thread, no lock

    def age(self) -> float:
        return time.monotonic() - self.stamp


class HeartbeatThread:
    def __init__(self, repo_path: Path | str, interval: float, beat: Probe, check: Probe,
                 on_lost: Callable[[str], None], *, beat_now: bool = False,
                 on_exit: Callable[[], None] | None = None) -> None:
        self.interval = interval
        self._on_exit = on_exit
        self._beat_now = beat_now
        self._beat, self._check, self._on_lost = beat, check, on_lost
        self._stop = threading.Event()
        self._watcher = RefWatcher(repo_path, control_files=False)
        self._thread = threading.Thread(target=self._run, name="liza-heartbeat", daemon=True)
        self.beats = 0
        self.lost: str | None = None

    def start(self) -> HeartbeatThread:
        self._watcher.start()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._watcher.poke()
        self._thread.join(timeout=30)
        self._watcher.close()

    def _run(self) -> None:
        try:
            self._beats()
        finally:
            if self._on_exit is not None:
                self._on_exit()

    def _beats(self) -> None:
        next_beat = time.monotonic() + (0.0 if self._beat_now else self.interval)
        failures = 0
        while not self._stop.is_set():
            left = next_beat - time.monotonic()
            try:
                if left <= 0:
                    why = self._beat()
                    self.beats += 1
                    next_beat = time.monotonic() + self.interval
                elif self._watcher.wait(left):
                    why = None if self._stop.is_set() else self._check()
                else:
                    continue
                failures = 0
            except Exception as e:  # noqa: BLE001 - a dead heartbeat thread would let the
                # lease expire while the agent keeps working on a task someone else then claims:
                # retry on the next interval, and give the task up after repeated failures.
                failures += 1
                next_beat = time.monotonic() + self.interval
                why = None if failures < MAX_FAILURES else (
                    f"heartbeat failed {failures} times in a row: {type(e).__name__}: {e}")
            if why is not None and not self._stop.is_set():
                self.lost = why
                self._on_lost(why)
                return


def lease_keeper(liza: Liza, open_liza: Callable[[], Liza], token: Generation, role: Role,
                 task: str | None, on_lost: Callable[[str], None], log: Callable[[str], None], *,
                 beat_now: bool = False, wake_on_abort: bool = False,
                 watchdog: Watchdog | None = None) -> HeartbeatThread:
    """The lease keeper of `token.agent` working on `task` (a planner holds no task lease): it
    beats the task's lease while the agent still holds it and renews the supervisor token, as long
    as `watchdog` (the main loop's stamp) is younger than half a lease; it reports the work lost
    when another supervisor took the id over, when the agent lost its task (or review lease), and
    with `wake_on_abort` on an ABORT. Not started yet."""
    hb_liza = open_liza()  # its own repository handle: pygit2 objects stay per thread
    hb_liza.gen = token.gen
    agent = token.agent
    task = task if role != Role.PLANNER else None
    cfg = liza.board().config
    limit = stuck_after(cfg)
    silent = [False]  # whether the stuck loop was reported (once per episode)

    def alive() -> bool:
        if watchdog is None or watchdog.age() <= limit:
            if silent[0]:
                log("the supervisor's loop moves again: renewing its leases")
                silent[0] = False
            return True
        if not silent[0]:
            log(f"the supervisor's loop shows no progress for {watchdog.age():.0f}s: no longer "
                f"renewing its leases or token (they expire as a dead supervisor's do)")
            silent[0] = True
        return False

    def check() -> str | None:
        board = hb_liza.board()
        if token.superseded(board):
            return "another supervisor took over this agent id"
        if wake_on_abort and wake.hold(board) == Hold.ABORT:
            return "ABORT"
        if task is not None:  # partitioned: another machine may take the task over soon
            cut = follower.hold(hb_liza, board, f"stopping the agent on {task} before another "
                                                "machine may take it over")
            if cut is not None:
                return cut
        return wake.lost_reason(board, agent, task, role) if task else None

    def beat() -> str | None:
        if not alive():
            return None
        try:
            why = check()
            held = why is None and task is not None and \
                wake.still_holds(hb_liza.board(), agent, task, role)
            token.renew_if_due(hb_liza, task=task if held else None)
            return why
        except (LeaseLost, StandDown) as e:
            return str(e)
        except LizaError as e:  # a conflict or a git hiccup: try again at the next beat
            log(f"heartbeat: {e}")
            return None

    interval = float(cfg.heartbeat_interval)
    # The thread's handle is dropped with the thread, but a pygit2 handle is a reference cycle:
    # only the cycle collector would close the packs it read, one more set per agent session.
    return HeartbeatThread(liza.repo.path, interval, beat, check, on_lost, beat_now=beat_now,
                           on_exit=hb_liza.repo.free)
