"""`git liza watch`: the human's alarm monitor (tooling.md "Alarm Conditions", liza-watch.sh).

The evaluation is pure (core/reports/alarms.py). This module gathers the facts the board does not
hold, reports what changed, and sleeps: on the board ref and the `.liza/` control files (the shared
RefWatcher, inotify through watchdog), with a timeout that ends at the next time-based threshold
(`alarms.next_deadline`). It never reads the board on a timer.

Output (Alert Output in tooling.md): each report is a line `[time] <icon> <text>` on stderr and
appended to `.liza/alerts.log`; with --json, one JSON object a line on stdout instead of stderr.
A checkpoint stuck for the seed's 2 h (or abandoned, 8 h) writes `.liza/ESCALATION`
(sprint-governance.md), removed when the checkpoint ends. `notify-send`, where it exists, shows
each report on the desktop. With a target set (the board's `escalation_webhook`, or this clone's
`liza.escalationCommand`), each alarm that fires or escalates, and each human event (a goal's end,
a circuit-breaker trip, a checkpoint) goes out too (gitliza/governance/notify.py).
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Callable, TextIO

from gitliza import atomic
from gitliza.core import clock
from gitliza.core.reports import alarms
from gitliza.core.reports import escalations
from gitliza.services.sync import droplog
from gitliza.core.reports.alarms import Alert, Facts, Report
from gitliza.core.board import Board
from gitliza.core.terminal import safe_json, safe_line
from gitliza.errors import LizaError
from gitliza.git.store import Store
from gitliza.git.repository import liza_dir, liza_path

ALERTS_LOG = "alerts.log"
ESCALATION = "ESCALATION"


def _file_since(path: Path, first_line_time: bool) -> str | None:
    """When a control file was made: the timestamp on its first line (the seed's CHECKPOINT file
    format), else its mtime; None when it does not exist."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    if first_line_time:
        try:
            first = path.read_text(errors="replace").split("\n", 1)[0].strip()
            return clock.check_ts(first)
        except (OSError, LizaError):
            pass
    return clock.from_epoch(st.st_mtime)


class Watcher:
    """One watcher over one repository: `tick()` evaluates and reports, `run()` loops."""

    def __init__(self, store: Store, *, json_lines: bool = False, notify: bool | None = None,
                 now: Callable[[], str] | None = None, err: TextIO | None = None,
                 out: TextIO | None = None, send: bool = True, report: bool = True,
                 remote: bool = True) -> None:
        from gitliza.services.api import now_utc
        self.store = store
        self.liza_dir = liza_path(store.repo)
        self.json_lines = json_lines
        self.notify = shutil.which("notify-send") is not None if notify is None else notify
        self.now = now or now_utc
        self.err = err or sys.stderr
        self.out = out or sys.stdout
        self.state: dict[tuple[str, str], Alert] = {}
        self.board = Board()
        self.facts = Facts(now=self.now())
        self.tip: str | None = None
        # report=False: only the webhook hears of the alarms (the watcher `git liza team` runs:
        # the human's own `watch` prints them, once).
        self.report = report
        self._emit_lock = threading.Lock()  # the notifier's thread reports too
        self._events: dict[tuple[str, str], Alert] = {}  # the human events' fire-once state
        self._failing: dict[str, Alert] = {}  # NOTIFY_FAILED alarms by target
        self._refwatch: object | None = None
        self._stop = False
        self.notifier = None
        if send:
            from gitliza.governance.notify import Notifier
            self.notifier = Notifier(store, log=self._log_line, failed=self._notify_failed,
                                     succeeded=self._notify_ok, remote=remote)

    # -- one evaluation -------------------------------------------------------------------------
    def read(self) -> tuple[Board, Facts]:
        now = self.now()
        invalid = None
        last = None
        try:
            board, commit = self.store.board()
            self.tip = str(commit.id) if commit is not None else None
            if commit is None:
                invalid = "no board on refs/liza/state (run `git liza init` or `git liza import`)"
            else:
                last = clock.from_epoch(commit.author.time)
                board.initialized  # noqa: B018 - decode the goal now: a bad blob is reported here
        except LizaError as e:
            board, invalid = Board(), str(e)
        pause = None
        if board.initialized and board.control.paused:
            pause = board.control.paused_at
        pause = pause or _file_since(self.liza_dir / "PAUSE", False)
        checkpoint = _file_since(self.liza_dir / "CHECKPOINT", True)
        return board, Facts(now=now, last_change=last, pause_since=pause,
                            checkpoint_since=checkpoint, invalid=invalid,
                            missing_worktrees=self._missing_worktrees(board))

    def _missing_worktrees(self, board: Board) -> frozenset[str]:
        """CLAIMED tasks' worktrees that are not on disk (liza-validate.sh's check)."""
        root = self.liza_dir.parent
        try:
            claimed = [t.worktree for t in board.tasks()
                       if t.status == "CLAIMED" and t.worktree] if board.initialized else []
        except LizaError:
            return frozenset()
        return frozenset(w for w in claimed if not (root / w).is_dir())

    def tick(self) -> list[Report]:
        self.board, self.facts = self.read()
        try:
            active = alarms.evaluate(self.board, self.facts) + droplog.alerts(self.store.repo)
        except LizaError as e:  # a blob that does not decode shows up as the board is walked
            active = [Alert("INVALID_STATE", "", alarms.Level.CRITICAL, f"INVALID STATE: {e}")]
        self.state, reports = alarms.step(self.state, active, self.facts.now)
        if self.report:
            for r in reports:
                self.emit(r)
            self._escalation(reports)
        if self.notifier is not None:
            self._send(reports)
        return reports

    def _send(self, reports: list[Report]) -> None:
        assert self.notifier is not None
        try:
            news = escalations.human_events(self.board)
        except LizaError:
            news = []
        self._events, more = alarms.step(self._events, news, self.facts.now)
        for r in reports + more:
            self.notifier.submit(self.board, r, self.tip)

    # -- the notifier's reports (its own thread) ------------------------------------------------
    def _log_line(self, text: str) -> None:
        line = safe_line(f"[{self.now()}] {text}")
        with self._emit_lock:
            self._append(line)
            self.err.write(line + "\n")
            self.err.flush()

    def _notify_failed(self, target: str, why: str) -> None:
        if target in self._failing:
            return  # one alarm while the target keeps failing
        alert = escalations.failure_alert(target, why)
        self._failing[target] = alert
        self.emit(Report("fired", alert, self.now()))

    def _notify_ok(self, target: str) -> None:
        alert = self._failing.pop(target, None)
        if alert is not None:
            self.emit(Report("resolved", alert, self.now()))

    def next_timeout(self) -> float | None:
        """Seconds until the next time-based threshold (None: only a change can alter anything)."""
        try:
            nd = alarms.next_deadline(self.board, self.facts)
        except LizaError:
            return None
        if nd is None:
            return None
        # On the watcher's own clock (`now`): the deadline is after it by construction.
        return max(0.0, clock.to_epoch(nd) - clock.to_epoch(self.facts.now)) + 0.05

    # -- reporting ------------------------------------------------------------------------------
    def emit(self, report: Report) -> None:
        with self._emit_lock:
            self._emit(report)

    def _emit(self, report: Report) -> None:
        # Board text (a block reason) in it: escaped for the terminal and for alerts.log, which
        # people read with cat and tail (core/terminal.py). --json stays exact.
        line = safe_line(f"[{report.time}] {report.line()}")
        self._append(line)  # the persistent copy first: whoever sees the alert can find it there
        if self.json_lines:
            self.out.write(safe_json(json.dumps(report.as_json(), ensure_ascii=False)) + "\n")
            self.out.flush()
        else:
            self.err.write(line + "\n")
            self.err.flush()
        if self.notify:
            try:
                subprocess.run(["notify-send", "Liza Alert", safe_line(report.line())], timeout=5,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            except (OSError, subprocess.SubprocessError):
                self.notify = False  # no desktop here after all: stop trying

    def _append(self, line: str) -> None:
        # Never through a link (a committed `.liza/alerts.log -> ~/.bashrc` would have had
        # board text appended to the user's file), never into a tracked `.liza/`.
        try:
            directory = liza_dir(self.store.repo)
            with atomic.open_file(directory / ALERTS_LOG, append=True, mode=0o644) as f:
                f.write((line + "\n").encode("utf-8"))
        except (OSError, LizaError) as e:
            self.err.write(f"gitliza: cannot append to {self.liza_dir / ALERTS_LOG}: {e}\n")

    def _escalation(self, reports: list[Report]) -> None:
        path = self.liza_dir / ESCALATION
        for r in reports:
            if r.alert.kind != "CHECKPOINT":
                continue
            if r.event == "resolved":
                try:
                    path.unlink()
                except FileNotFoundError:
                    pass
            elif r.alert.stage >= 2:
                since = alarms.checkpoint_since(self.board, self.facts) or self.facts.now
                text = alarms.escalation_text(self.board, r.alert, since, self.facts.now)
                atomic.write(liza_dir(self.store.repo), ESCALATION, text.encode())

    # -- the loop ------------------------------------------------------------------------------
    def run(self, *, stop: Callable[[], bool] | None = None) -> None:
        from gitliza.git.refwatch import RefWatcher
        with RefWatcher(self.store.repo.workdir or self.store.repo.path) as w:
            self._refwatch = w
            while not self._stop and (stop is None or not stop()):
                self.tick()
                w.wait(self.next_timeout())

    def stop(self) -> None:
        """End `run` from another thread (the team's watcher at the team's end)."""
        self._stop = True
        w = self._refwatch
        if w is not None:
            w.poke()  # type: ignore[attr-defined]

    def close(self, drain: float = 5.0) -> bool:
        """Give the deliveries in flight `drain` seconds, then stop the notifier: True if all
        went out."""
        if self.notifier is None:
            return True
        done = self.notifier.drain(drain)
        self.notifier.close()
        return done

    @property
    def active(self) -> list[Alert]:
        return list(self.state.values())


