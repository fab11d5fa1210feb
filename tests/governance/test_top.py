"""`git liza top`: frames rendered to a fixed-width console (tasks by status with agents and lease
countdowns, agents and heartbeats, alarms, the last transitions), and the live view in a real
terminal (tmux) redrawing when a task moves."""
from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Callable, Iterator

import pytest

from gitliza.services.lifecycle.claim import claim
from gitliza.governance import top
from gitliza.services.api import Liza
from gitliza.core import clock
from tests.access.mcp_client import setup_board

T0 = "2031-05-01T12:00:00Z"


@pytest.fixture
def board(repo: Path) -> Path:
    setup_board(repo, ("t1", "t2"))
    return repo


def test_a_frame_shows_tasks_agents_countdowns_alarms_and_transitions(board: Path) -> None:
    coder = Liza.open(board, "c1", now=lambda: T0)
    claim(coder, "t1")
    snap = top.snapshot(coder, alarm_source=None)
    text = top.frame_text(snap, clock.plus(T0, 65), width=110)
    lines = text.splitlines()
    row = next(line for line in lines if " t1 " in line)
    assert "CLAIMED" in row and "c1" in row and "3m55s" in row  # 300 s lease, 65 s later
    assert "UNCLAIMED" in next(line for line in lines if " t2 " in line)
    agent = next(line for line in lines if " c1 " in line and "coder" in line)
    assert "WORKING" in agent and "1m05s ago" in agent and "3m55s" in agent
    assert "alarms: not available" in text
    assert "claim t1 (UNCLAIMED -> CLAIMED) by c1" in text  # the newest transition
    assert all(len(line) <= 110 for line in lines)
    # Rows follow the state machine's order: UNCLAIMED before CLAIMED.
    assert text.index(" t2 ") < text.index(" t1 ")
    expired = top.frame_text(snap, clock.plus(T0, 400), width=110)
    assert "expired 1m40s" in next(line for line in expired.splitlines() if " t1 " in line)


def test_the_header_shows_a_pause(board: Path) -> None:
    from gitliza.core.ops.control import Pause
    liza = Liza.open(board, "p1")
    assert "PAUSED" not in top.frame_text(top.snapshot(liza, None), liza.now())
    liza.do(Pause, reason="lunch")
    assert "PAUSED by p1" in top.frame_text(top.snapshot(liza, None), liza.now())


def test_alarms_from_a_source_and_none(board: Path) -> None:
    liza = Liza.open(board, "p1")
    seen: list[str] = []

    def source(lz: Liza, now: str) -> list[tuple[str, str]]:
        seen.append(now)
        return [("critical", "LEASE EXPIRED: c1 on t1"), ("warning", "t2 approaching limit")]
    text = top.frame_text(top.snapshot(liza, source), liza.now())
    assert "CRITICAL LEASE EXPIRED: c1 on t1" in text and "WARNING  t2 approaching" in text
    assert len(seen) == 1  # one evaluation per frame
    quiet = top.frame_text(top.snapshot(liza, lambda *a: []), liza.now())
    assert "alarms: none" in quiet


def test_top_once_prints_one_frame(board: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "gitliza", "top", "--once", "--width", "90"],
                       cwd=board, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "gitliza top" in r.stdout and "t1" in r.stdout and "last transitions" in r.stdout
    assert max(len(x) for x in r.stdout.splitlines()) <= 90


def test_no_board_says_so(repo: Path) -> None:
    liza = Liza.open(repo)
    assert "no board here" in top.frame_text(top.snapshot(liza, None), liza.now())


# -- in a real terminal ---------------------------------------------------------------------------
class Tmux:
    def __init__(self) -> None:
        self.socket = f"liza-{uuid.uuid4().hex[:8]}"

    def run(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True,
                              text=True, check=True, timeout=30).stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "top")

    def wait_for(self, ok: Callable[[str], bool]) -> str:
        """Re-read the screen until `ok`; the deadline only stops a hung view from hanging the
        suite (no speed is asserted)."""
        deadline = time.monotonic() + 60
        while True:
            screen = self.screen()
            if ok(screen) or time.monotonic() > deadline:
                return screen
            time.sleep(0.1)


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (apt-get install tmux): no real terminal to test in")
    t = Tmux()
    yield t
    subprocess.run(["tmux", "-L", t.socket, "kill-server"], capture_output=True)


def _row(screen: str, task: str) -> str:
    return next((line for line in screen.splitlines() if f" {task} " in line), "")


def _lease(row: str) -> str:
    """The last cell of a table row (the lease countdown), whatever the border characters."""
    cells = [c.strip() for c in row.replace("\u2502", "|").split("|")]
    return [c for c in cells if c][-1] if any(cells) else ""


@pytest.mark.slow
def test_live_view_in_tmux_redraws_when_a_task_moves(board: Path, tmux: Tmux) -> None:
    cmd = f"cd {shlex.quote(str(board))} && exec {shlex.quote(sys.executable)} -m gitliza top"
    tmux.run("new-session", "-d", "-s", "top", "-x", "120", "-y", "45", cmd)
    screen = tmux.wait_for(lambda s: "UNCLAIMED" in _row(s, "t1"))
    assert "UNCLAIMED" in _row(screen, "t1"), screen
    claim(Liza.open(board, "c1"), "t1")
    # The whole frame: a capture can land while rich is still writing it (the table drawn, the
    # log below it not yet), which on a loaded machine is a real window.
    screen = tmux.wait_for(lambda s: " CLAIMED" in _row(s, "t1")
                           and "claim t1 (UNCLAIMED -> CLAIMED) by c1" in s)
    row = _row(screen, "t1")
    assert " CLAIMED" in row and "c1" in row, screen
    assert "claim t1 (UNCLAIMED -> CLAIMED) by c1" in screen
    # The countdown ticks (the one-second timer) without any board change.
    first = _lease(row)
    assert first.endswith("s") and first[0].isdigit(), row  # e.g. 4m59s
    screen = tmux.wait_for(lambda s: _lease(_row(s, "t1")) not in (first, ""))
    assert _lease(_row(screen, "t1")) not in (first, ""), screen


def test_the_watchers_alarms(board: Path) -> None:
    claim(Liza.open(board, "c1", now=lambda: T0), "t1")
    liza = Liza.open(board, "p1")
    later = clock.plus(T0, 3600)  # the lease ran out long ago
    snap = top.snapshot(liza)
    assert "LEASE" not in top.frame_text(snap, T0).split("alarms:")[1].split("last")[0]
    top.refresh_alarms(snap, liza, later, top.watcher_alarms)
    text = top.frame_text(snap, later)
    alarms = text[text.index("alarms:"):text.index("last transitions")]
    assert "LEASE" in alarms.upper() and "t1" in alarms, alarms
