"""The lease keeper: a background thread that runs while the agent works.

Every `interval` seconds it calls `beat` (the heartbeat op for the task lease and, for a reviewer,
the review lease; the supervisor token renewal). Between beats it sleeps on the board ref
(RefWatcher), and on every change calls `check`, which reads the board: a takeover, an abandon or
an op dropped by sync is seen at once, not at the next beat. Either returning a reason means the
agent lost its work: `on_lost(reason)` is called once (the supervisor stops the agent) and the
thread ends.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable

from gitliza.git.refwatch import RefWatcher

Probe = Callable[[], "str | None"]


MAX_FAILURES = 3  # heartbeats failing in a row (not refused: failing) before the agent is stopped


class HeartbeatThread:
    def __init__(self, repo_path: Path | str, interval: float, beat: Probe, check: Probe,
                 on_lost: Callable[[str], None], *, beat_now: bool = False) -> None:
        self.interval = interval
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
