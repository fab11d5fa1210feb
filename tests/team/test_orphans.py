"""No orphaned agents: real supervisors killed with SIGKILL, real agent process groups. The agent
dies with its supervisor (parent-death signal); what it started lives on in its process group
until the next supervisor of the id stops it, before running an agent of its own."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitliza.services.api import Liza
from gitliza.team import orphans
from tests.team.procs import WAIT, Sup, add_task, env_for, make_board, script

linux = pytest.mark.skipif(not sys.platform.startswith("linux"),
                           reason="parent-death signal and /proc are Linux-only")


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def _parent(pid: int) -> int:
    """The parent of `pid` (the agent's: its supervisor), from /proc."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2:].split()[1])


def _read_pid(path: Path) -> int:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        try:
            return int(path.read_text())
        except (OSError, ValueError):
            time.sleep(0.05)
    raise AssertionError(f"no pid in {path}")


def _hanging_agent(repo: Path, tmp_path: Path) -> tuple[str, Path]:
    """A board with task t1 and an agent that writes its pid and sleeps: (agent, pid file)."""
    make_board(repo)
    add_task(repo, "t1")
    pidfile = tmp_path / "agent.pid"
    return str(script(tmp_path, "hang.sh", f"echo $$ > {pidfile}\nexec sleep 600\n")), pidfile


@linux
@pytest.mark.slow
def test_the_agent_dies_with_a_sigkilled_supervisor(repo: Path, tmp_path: Path) -> None:
    agent, pidfile = _hanging_agent(repo, tmp_path)
    sup = Sup(repo, "coder", "coder-1", "--", agent)
    sup.expect("started agent")
    pid = _read_pid(pidfile)
    assert _alive(pid)
    sup.kill()  # SIGKILL: no handler runs, nothing is cleaned up by the supervisor
    assert _gone(pid), "the agent outlived its SIGKILLed supervisor"


@linux
@pytest.mark.slow
def test_a_new_generation_stops_what_the_old_agent_left_before_it_starts(
        repo: Path, tmp_path: Path) -> None:
    make_board(repo)
    add_task(repo, "t1")
    child = tmp_path / "child.pid"
    runs = tmp_path / "runs"
    # Session 1 starts a worker (its process group, not its direct child: the parent-death
    # signal does not reach it) and waits; later sessions check no worker of session 1 runs.
    agent = script(tmp_path, "agent.sh", f"""n=$(cat {runs} 2>/dev/null || echo 0); n=$((n+1))
echo $n > {runs}
if [ $n = 1 ]; then sleep 600 & echo $! > {child}; wait; fi
s=$(awk '{{print $3}}' "/proc/$(cat {child})/stat" 2>/dev/null || true)  # Z: dead, not reaped
[ -n "$s" ] && [ "$s" != Z ] && echo "OLD WORKER STILL RUNNING" && exit 3
exec sleep 600
""")
    first = Sup(repo, "coder", "coder-1", "--", str(agent))
    first.expect("started agent")
    worker = _read_pid(child)
    first.kill()
    time.sleep(0.2)
    assert _alive(worker)  # the orphan the issue found: it keeps working in the worktree
    second = Sup(repo, "coder", "coder-1", "--takeover", "--", str(agent))
    line = second.expect("stopping the agent of generation 1 still running")
    assert "task t1" in line
    second.expect("started agent")  # after the old group was stopped
    assert not _alive(worker)
    assert "OLD WORKER" not in "".join(p.read_text() for p in
                                       (repo / ".liza" / "agent-logs").glob("*.log"))
    second.signal(signal.SIGTERM)
    assert second.wait() == 0


@linux
def _exec_done(pid: int, marker: bytes) -> None:
    """Wait until child `pid` runs its program: between fork and exec its environment is still
    this process's (a loaded machine stretched that gap past the check that reads it). No clock
    here: a child that never execs is the test's timeout."""
    while marker not in Path(f"/proc/{pid}/environ").read_bytes():
        time.sleep(0.01)


def test_a_recorded_group_is_signalled_only_when_it_is_still_the_agent(tmp_path: Path) -> None:
    """A record whose process group now belongs to a stranger (the pid was reused, or the agent
    is long gone) stops nothing."""
    stranger = subprocess.Popen(["sleep", "600"], start_new_session=True,
                                env={"PATH": os.environ["PATH"]})
    try:
        orphans.record(tmp_path, "coder-1", 1, stranger.pid, "t1")
        said: list[str] = []
        assert orphans.stop_previous(tmp_path, "coder-1", 2, said.append) == 0
        assert stranger.poll() is None and said == []
        assert not orphans.record_path(tmp_path, "coder-1").exists()
        # The same group with the agent's identity in its environment is stopped.
        agent = subprocess.Popen(["sleep", "600"], start_new_session=True,
                                 env={"PATH": os.environ["PATH"], "LIZA_AGENT_ID": "coder-1",
                                      "LIZA_SUPERVISOR_GEN": "1"})
        _exec_done(agent.pid, b"LIZA_AGENT_ID=coder-1")
        orphans.record(tmp_path, "coder-1", 1, agent.pid, "t1")
        assert orphans.stop_previous(tmp_path, "coder-1", 1, said.append) == 0  # our own gen
        assert orphans.stop_previous(tmp_path, "coder-1", 2, said.append) == 1
        assert agent.wait(WAIT) == -signal.SIGTERM and "generation 1" in said[0]
    finally:
        stranger.kill()
        stranger.wait()


@linux
@pytest.mark.slow
def test_a_sigkilled_team_takes_its_supervisors_and_their_agents_along(
        repo: Path, tmp_path: Path) -> None:
    agent, pidfile = _hanging_agent(repo, tmp_path)
    team = subprocess.Popen([sys.executable, "-m", "gitliza", "team", "--planners", "0",
                             "--reviewers", "0", "--coders", "1", "--", agent],
                            cwd=repo, env=env_for(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        pid = _read_pid(pidfile)
        supervisor = _parent(pid)
        team.kill()
        team.wait(WAIT)
        assert _gone(pid), "the agent outlived its SIGKILLed team"
        assert _gone(supervisor), "the supervisor outlived its SIGKILLed team"
        # The supervisor stopped cleanly (SIGTERM), so before exiting it gave its token back.
        token = Liza.open(repo).board().get("supervisors", "coder-1")
        assert not getattr(token, "expires", 0), "the supervisor kept its token"
    finally:
        if team.poll() is None:
            team.kill()
