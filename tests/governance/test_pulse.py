"""`git liza watch` says what the human would otherwise wonder about (issue 49): a heartbeat line
at start and at most every 5 minutes, and each goal's start and end at once; `--quiet` leaves
both out. A real `watch` process over a real board."""
from __future__ import annotations

import os
import queue
import signal
import time
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gitliza.core import clock
from gitliza.core.board import Board
from gitliza.governance.pulse import Pulse
from gitliza.services.api import Liza
from tests.services.test_lifecycle import claimed, commit_file, ok, setup_board


class Watch:
    def __init__(self, repo: Path, *args: str) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("LIZA_AGENT_ID", "LIZA_NOW")}
        self.proc = subprocess.Popen([sys.executable, "-m", "gitliza", "watch", *args], cwd=repo,
                                     env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.put(line.rstrip("\n"))

    def expect(self, text: str) -> str:
        while True:
            line = self.lines.get(timeout=90)
            self.seen.append(line)
            if text in line:
                return line

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=60)


def merge_t1(repo: Path) -> None:
    wt = Path(claimed(repo, "t1", "c1")["worktree"])
    commit_file(wt, "a.txt", "a\n")
    ok(repo, "submit", "t1", agent="c1")
    ok(repo, "claim-review", "t1", agent="r1")
    ok(repo, "verdict", "t1", "approve", agent="r1")
    ok(repo, "merge", "t1")


@pytest.mark.timeout(300)
def test_watch_says_the_goals_transitions_and_beats(repo: Path) -> None:
    setup_board(repo, tasks=("t1",))
    w = Watch(repo)
    try:
        beat = w.expect("watching: goal")
        assert "1 live task(s): 1 UNCLAIMED; no alarms" in beat
        # Times have second resolution: a task added and merged within the second of its goal's
        # `init` cannot be told from an earlier goal's (queries.of_current_goal); a fast run
        # counted "0 task(s) merged". The merge comes in a later second, as a real one does.
        started = time.time()
        while int(time.time()) <= int(started):
            time.sleep(0.05)
        merge_t1(repo)
        ok(repo, "complete-goal", agent="p1")
        done = w.expect("GOAL ")
        assert "COMPLETED: Goal completed: 1 task(s) merged" in done, done
        ok(repo, "init", "the next goal")
        assert "started: the next goal" in w.expect("GOAL ")
    finally:
        w.stop()


@pytest.mark.timeout(300)
def test_watch_quiet_prints_alarms_only(repo: Path) -> None:
    setup_board(repo, tasks=("t1",))
    w = Watch(repo, "--quiet")
    try:
        claimed(repo, "t1", "c1")
        ok(repo, "block", "t1", "--reason", "stuck", "--question", "how?", agent="c1")
        w.expect("BLOCKED: t1")
    finally:
        w.stop()
    assert not [x for x in w.seen if "watching:" in x or "GOAL " in x], w.seen


def test_the_heartbeat_comes_at_most_every_five_minutes(repo: Path) -> None:
    setup_board(repo, tasks=())
    board: Board = Liza.open(repo).board()
    p = Pulse()
    t0 = clock.from_epoch(1_800_000_000)
    assert len(p.lines(board, t0, 0)) == 1  # at start
    assert p.lines(board, clock.plus(t0, 299), 0) == []
    p.spoke(clock.plus(t0, 200))  # an alarm was printed: the next beat counts from it
    assert p.lines(board, clock.plus(t0, 301), 0) == []
    assert p.due(clock.plus(t0, 301)) == 199
    assert p.lines(board, clock.plus(t0, 500), 2)[0].endswith("2 alarm(s) active")
