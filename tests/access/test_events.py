"""`git liza events`: every state commit once, oldest first, from the history and then live (local
writers, another process, `git fetch`, packed refs), resumable with --since without a gap or a
repeat."""
from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Iterator

import pytest

from gitliza.services.api import Liza
from gitliza.core.ops import Note
from tests.access.mcp_client import setup_board
from tests.conftest import git

STATE = "refs/liza/state"


def cli(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gitliza", *args], cwd=repo,
                          capture_output=True, text=True, timeout=120)


def states(repo: Path, rev: str = STATE) -> list[str]:
    return git(repo, "rev-list", "--reverse", rev).split()


@pytest.fixture
def board(repo: Path) -> Path:
    setup_board(repo, ("t1", "t2"))
    return repo


def test_history_oldest_first_and_since_resumes_without_repeats(board: Path) -> None:
    r = cli(board, "events", "--json")
    assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert [e["state"] for e in lines] == states(board)
    assert lines[0]["op"] == "init" and lines[0]["parent"] is None
    assert all(b["parent"] == a["state"] for a, b in zip(lines, lines[1:]))
    assert [e["op"] for e in lines[-2:]] == ["add", "add"]
    cursor = lines[2]["state"]
    r = cli(board, "events", "--json", "--since", cursor)
    assert [json.loads(x)["state"] for x in r.stdout.splitlines()] == states(board)[3:]
    r = cli(board, "events", "--since", states(board)[-1])
    assert r.returncode == 0 and r.stdout == ""
    text = cli(board, "events").stdout.splitlines()
    assert len(text) == len(lines) and text[0].startswith(lines[0]["state"] + "  ")
    assert "init" in text[0]


def test_a_bad_since_is_one_line_exit_1(board: Path) -> None:
    r = cli(board, "events", "--since", "nope")
    assert r.returncode == 1 and r.stdout == "" and len(r.stderr.splitlines()) == 1
    r = cli(board, "events", "--since", "main")  # a commit, not a state
    assert r.returncode == 1 and "not a state commit" in r.stderr


class Follower:
    """`git liza events --follow --json` in a real process; lines read by a thread."""

    def __init__(self, repo: Path, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "gitliza", "events", "--follow",
                                      "--json", *args], cwd=repo, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        assert self.proc.stdout is not None
        threading.Thread(target=self._pump, args=(self.proc.stdout,), daemon=True).start()

    def _pump(self, out: IO[str]) -> None:
        for line in out:
            self.lines.put(line)

    def take(self, n: int) -> list[dict[str, str]]:
        # The timeout only keeps a broken build from hanging the suite; it measures nothing.
        return [json.loads(self.lines.get(timeout=60)) for _ in range(n)]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        assert self.lines.empty(), list(self.lines.queue)


@pytest.fixture
def follower(board: Path) -> Iterator[Follower]:
    f = Follower(board)
    yield f
    if f.proc.poll() is None:
        f.proc.kill()


@pytest.mark.slow
def test_follow_streams_history_then_every_new_commit_from_anywhere(
        board: Path, tmp_path: Path, follower: Follower) -> None:
    history = states(board)
    assert [e["state"] for e in follower.take(len(history))] == history
    # A writer in another process (the CLI), then one in this process.
    assert cli(board, "note", "from the cli").returncode == 0
    Liza.open(board, "p1").do(Note, message="in process")
    got = follower.take(2)
    assert [e["op"] for e in got] == ["note", "note"]
    assert [e["state"] for e in got] == states(board)[-2:]
    # Commits that arrive by fetch from another clone (what sync does underneath).
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(board), str(clone))
    git(clone, "fetch", "-q", "origin", f"{STATE}:{STATE}")
    other = Liza.open(clone, "p1")
    for i in range(3):
        other.do(Note, message=f"remote {i}")
    git(board, "fetch", "-q", str(clone), f"{STATE}:{STATE}")
    got = follower.take(3)
    assert [e["args"]["message"] for e in got] == ["remote 0", "remote 1", "remote 2"]
    # Packed refs: the next update is seen as well.
    git(board, "pack-refs", "--all")
    Liza.open(board, "p1").do(Note, message="after pack-refs")
    assert follower.take(1)[0]["args"]["message"] == "after pack-refs"
    last = states(board)[-1]
    follower.stop()

    # A restart from the last state seen misses nothing written while it was down.
    for i in range(2):
        Liza.open(board, "p1").do(Note, message=f"while down {i}")
    again = Follower(board, "--since", last)
    try:
        got = again.take(2)
        assert [e["state"] for e in got] == states(board)[-2:]
        Liza.open(board, "p1").do(Note, message="live again")
        assert again.take(1)[0]["args"]["message"] == "live again"
    finally:
        again.stop()
