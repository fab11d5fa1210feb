"""`git liza log` reads as the protocol: one line per transition (state, time, actor, op, task,
from -> to), no liveness unless --all, filters by op and time, --json, and a pager on a terminal
as git log has (through a real pseudo-terminal)."""
from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

from gitliza.core.ops import Add, Claim, Heartbeat, Init, Register, Supervise
from gitliza.services.api import Liza
from tests.cli.test_board import liza
from tests.conftest import commit_specs, git

BIN = str(Path(sys.executable).parent)


def _board(repo: Path) -> None:
    """init, register, add, claim, then liveness: heartbeats and a supervisor's renewal, a
    minute apart from 10:00 (within the 5-minute lease)."""
    commit_specs(repo, "spec.md")
    times = iter(f"2025-03-01T10:{m:02d}:00Z" for m in range(60))

    def at(agent: str) -> Liza:
        return Liza.open(repo, agent, now=lambda: next(times), sync=False)
    at("human").do(Init, goal="g")
    at("human").do(Register, agent="coder-1", role="coder")
    at("human").do(Register, agent="planner-1", role="planner")
    at("planner-1").do(Add, task="t1", description="d", spec_ref="spec.md", done_when="w",
                       scope="s", ready=True)
    coder = Liza.open(repo, "coder-1", now=lambda: next(times), sync=False)
    coder.do(Supervise, mode="start")  # 10:04
    gen = coder.board().get("supervisors", "coder-1").generation
    coder.gen = gen
    coder.do(Claim, task="t1", worktree=".worktrees/t1", base_commit=git(repo, "rev-parse",
                                                                          "HEAD"))  # 10:05
    coder.do(Heartbeat, task="t1")  # 10:06
    coder.do(Supervise, mode="renew", gen=gen)  # 10:07
    coder.do(Heartbeat, task="t1")  # 10:08


def run(repo: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return liza(repo, "log", *args, agent=None, env=env)


def entries(repo: Path, *args: str) -> list[dict[str, Any]]:
    r = run(repo, *args, "--json")
    assert r.returncode == 0, r.stderr
    data: list[dict[str, Any]] = json.loads(r.stdout)
    return data


def test_one_line_per_transition_and_no_liveness_by_default(repo: Path) -> None:
    _board(repo)
    r = run(repo)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    # bookkeeping (the supervisor's start) left out too (issue 36)
    assert [ln.split()[3] for ln in lines] == ["claim", "add", "register", "register", "init"]
    claim = lines[0].split()
    assert claim[1:5] == ["2025-03-01T10:05:00Z", "coder-1", "claim", "t1"]
    assert lines[0].endswith("READY -> CLAIMED") or lines[0].endswith("UNCLAIMED -> CLAIMED")
    assert "heartbeat" not in r.stdout and "renew" not in r.stdout
    every = run(repo, "--all").stdout.splitlines()
    assert len(every) == len(lines) + 4  # two heartbeats, one renewal, the supervisor's start
    assert [ln.split()[3] for ln in every[:3]] == ["heartbeat", "supervise", "heartbeat"]
    assert [ln.split()[3] for ln in every].count("supervise") == 2  # the renewal, the start
    # --json follows the same filter; the text's state column is a prefix of its state
    js = entries(repo)
    assert [e["op"] for e in js] == [ln.split()[3] for ln in lines]
    assert all(e["state"].startswith(ln.split()[0]) for e, ln in zip(js, lines))
    assert len(entries(repo, "--all")) == len(every) == int(git(repo, "rev-list", "--count",
                                                                "refs/liza/state"))


def test_filters_by_op_agent_task_and_time(repo: Path) -> None:
    _board(repo)
    assert [e["op"] for e in entries(repo, "--op", "register", "--op", "init")] == \
        ["register", "register", "init"]
    beats = entries(repo, "--op", "heartbeat")  # naming a liveness op shows it
    assert [e["time"] for e in beats] == ["2025-03-01T10:08:00Z", "2025-03-01T10:06:00Z"]
    assert [e["op"] for e in entries(repo, "--agent", "coder-1")] == ["claim"]
    assert [e["op"] for e in entries(repo, "--agent", "coder-1", "--op", "supervise")] == \
        ["supervise", "supervise"]  # named: shown, its renewal included
    assert [e["op"] for e in entries(repo, "--task", "t1", "--all")] == \
        ["heartbeat", "heartbeat", "claim", "add"]
    window = entries(repo, "--since", "2025-03-01T10:01:00Z", "--until", "2025-03-01T10:03:00Z")
    assert [e["time"] for e in window] == ["2025-03-01T10:03:00Z", "2025-03-01T10:02:00Z",
                                           "2025-03-01T10:01:00Z"]
    assert entries(repo, "--since", "2025-03-02") == []
    assert len(entries(repo, "--until", "2025-03-01")) == 0
    # An age counts back from now (LIZA_NOW here): two minutes before 10:09 is 10:07
    r = run(repo, "--all", "--since", "2m", "--json", LIZA_NOW="2025-03-01T10:09:00Z")
    assert [e["time"] for e in json.loads(r.stdout)] == ["2025-03-01T10:08:00Z",
                                                         "2025-03-01T10:07:00Z"]
    assert [e["op"] for e in entries(repo, "-n", "2")] == ["claim", "add"]


def test_bad_filters_are_one_line_and_exit_1(repo: Path) -> None:
    _board(repo)
    before = git(repo, "rev-parse", "refs/liza/state")
    for args, word in ((["--op", "nope"], "--op 'nope' is not an op"),
                       (["--since", "yesterday-ish"], "--since 'yesterday-ish'"),
                       (["--until", "2025-02-30"], "--until '2025-02-30'")):
        r = run(repo, *args)
        assert r.returncode == 1 and r.stdout == ""
        assert word in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert git(repo, "rev-parse", "refs/liza/state") == before


def _on_a_terminal(repo: Path, *args: str, **env: str) -> str:
    """Run `git liza log ARGS` with its stdout on a pseudo-terminal; what the terminal got."""
    e = {**os.environ, "PATH": BIN + os.pathsep + os.environ["PATH"], **env}
    e.pop("LIZA_AGENT_ID", None)
    master, slave = pty.openpty()
    proc = subprocess.Popen(["git", "liza", "log", *args], cwd=repo, env=e, stdout=slave,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the other side closed
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert proc.wait(60) == 0, proc.stderr.read() if proc.stderr else ""
    return out.decode().replace("\r\n", "\n")


def test_a_terminal_gets_the_pager_a_pipe_does_not(repo: Path, tmp_path: Path) -> None:
    _board(repo)
    seen = tmp_path / "paged.txt"
    pager = f"cat > {seen}; echo PAGED"
    plain = run(repo).stdout
    assert _on_a_terminal(repo, GIT_PAGER=pager).strip() == "PAGED"
    assert seen.read_text() == plain  # the pager got every line
    seen.unlink()
    # git's order: GIT_PAGER, then core.pager, then PAGER; `cat` or empty means none
    git(repo, "config", "core.pager", f"cat > {seen}; echo CORE")
    assert _on_a_terminal(repo, PAGER="false").strip() == "CORE"
    assert _on_a_terminal(repo, GIT_PAGER="cat").strip() == plain.strip()
    seen.unlink()
    # piped, never paged, whatever is configured
    assert run(repo, GIT_PAGER=pager).stdout == plain and not seen.exists()
    # --json is never paged
    assert _on_a_terminal(repo, "--json", GIT_PAGER=pager).lstrip().startswith("[")
