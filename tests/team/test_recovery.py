"""Recovery without impersonation: a supervisor that died on this host is taken over at once by
the next one, in one line; a live one is refused with `--takeover` named; `doctor` finds dead
supervisors, stale tokens and the work they left held, and `--fix` frees them; a team whose
member fails at start stops the others and names it. Real supervisors, real repositories."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gitliza.services.api import Liza
from gitliza.sandbox.policy import SandboxMode
from gitliza.team.launch import Member, TeamOptions, supervisor_argv
from tests.cli.test_board import liza, ok
from tests.team.procs import WAIT, Sup, add_task, env_for, make_board, script, task_of

pytestmark = pytest.mark.slow

HANG = "exec sleep 600\n"


def _kill_supervisor_and_agent(sup: Sup) -> None:
    """The supervisor dies hard (SIGKILL: no handler, the token stays live) with its agent."""
    pgid = int(sup.expect("started agent (pid ").split("(pid ")[1].split(")")[0])
    sup.kill()
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_a_supervisor_dead_on_this_host_is_taken_over_at_once(repo: Path,
                                                               tmp_path: Path) -> None:
    make_board(repo, lease_duration="600")
    add_task(repo, "t1")
    hang = str(script(tmp_path, "hang.sh", HANG))
    first = Sup(repo, "coder", "coder-1", "--", hang)
    first.expect("generation 1")
    _kill_supervisor_and_agent(first)
    token = Liza.open(repo).board().get("supervisors", "coder-1")
    assert token.expires and token.pid and token.pid_start  # live for 10 more minutes
    second = Sup(repo, "coder", "coder-1", "--", hang)  # no --takeover
    line = second.expect("taking over coder-1")
    assert line.endswith(f"from generation 1: its supervisor (pid {token.pid} on "
                         f"{token.host}) is gone")
    second.expect("generation 2")
    second.expect("started agent")  # it resumes the task its id still holds
    assert sum("taking over" in x for x in second.lines) == 1
    second.signal(signal.SIGINT)
    assert second.wait() == 0
    assert task_of(repo, "t1")["assigned_to"] == "coder-1"


def test_a_live_supervisor_is_refused_and_the_refusal_names_takeover(repo: Path) -> None:
    make_board(repo)
    a = Sup(repo, "coder", "coder-1", "--", "true")
    a.expect("generation 1")
    b = Sup(repo, "coder", "coder-1", "--", "true")
    assert b.wait() == 1
    assert "held by a live supervisor" in b.output() and "--takeover" in b.output()
    assert "git liza team ... --takeover" in b.output()
    a.signal(signal.SIGTERM)
    assert a.wait() == 0


def test_team_passes_takeover_to_every_member() -> None:
    argv = supervisor_argv(Member("coder", "coder-1"),
                           TeamOptions(command=("agent.sh",), takeover=True))
    assert argv[argv.index("agent") + 1:argv.index("agent") + 3] == ["coder", "--takeover"]
    assert "--takeover" not in supervisor_argv(Member("coder", "coder-1"),
                                               TeamOptions(command=("agent.sh",)))


def test_team_passes_its_sandbox_mode_to_every_member_as_a_flag() -> None:
    member = Member("coder", "coder-1")
    argv = supervisor_argv(member, TeamOptions(command=("agent.sh",), sandbox=SandboxMode.MODEL))
    at = argv.index("--sandbox")
    assert argv[at + 1] == "model" and at < argv.index("--")  # the supervisor's, not the agent's
    assert "--sandbox" not in supervisor_argv(member, TeamOptions(command=("agent.sh",)))


def test_a_member_that_fails_at_start_stops_the_team(repo: Path, tmp_path: Path) -> None:
    make_board(repo)
    ok(liza(repo, "register", "m1-coder-1", "--role", "planner", agent=None))
    hang = str(script(tmp_path, "hang.sh", HANG))
    r = subprocess.run([sys.executable, "-m", "gitliza", "team", "--prefix", "m1-",
                        "--planners", "0", "--coders", "1", "--reviewers", "1", "--", hang],
                       cwd=repo, env=env_for(), capture_output=True, text=True, timeout=WAIT * 2)
    assert r.returncode == 1, r.stdout + r.stderr
    err = r.stderr.strip().splitlines()[-1]
    assert err.startswith("gitliza: error: team: m1-coder-1 failed at start (exit 1): ")
    assert "registered as planner" in err and "the other members were stopped" in err
    # The reviewer had started (or was starting): it was stopped, not left waiting.
    assert "[m1-reviewer-1] started `git liza agent" in r.stdout
    board = Liza.open(repo).board()
    live = [s.agent for s in board.values("supervisors") if s.expires is not None]
    assert live == []


def _doctor(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return liza(repo, "doctor", *args, agent=None)


def test_doctor_finds_a_dead_supervisor_and_its_orphaned_worktree_and_frees_them(
        repo: Path, tmp_path: Path) -> None:
    make_board(repo, lease_duration="600")
    add_task(repo, "t1")
    # The agent commits some work, then hangs: its work must survive the clean-up.
    committed = tmp_path / "committed"
    work = script(tmp_path, "work.sh", "echo wip > wip.txt && git add wip.txt && "
                  f"git commit -q -m wip && touch {committed}\nexec sleep 600\n")
    sup = Sup(repo, "coder", "coder-1", "--", str(work))
    sup.expect("started agent")
    for _ in range(int(WAIT * 10)):
        if committed.exists():
            break
        subprocess.run(["sleep", "0.1"])
    _kill_supervisor_and_agent(sup)
    worktree = repo / task_of(repo, "t1")["worktree"]
    from tests.conftest import git
    wip = git(worktree, "rev-parse", "HEAD")
    r = _doctor(repo)
    assert r.returncode == 4, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert any(x.startswith("dead-supervisor coder-1: generation 1 (pid ") and
               x.endswith("[fixable with --fix]") for x in lines), r.stdout
    assert any(x.startswith("orphaned-worktree t1: ") for x in lines), r.stdout
    r = _doctor(repo, "--fix")
    fixed = [x for x in r.stdout.splitlines() if x.endswith("[fixed]")]
    assert [x.split(":")[0] for x in fixed if "coder-1" in x or " t1" in x][:2] == \
        ["dead-supervisor coder-1", "orphaned-worktree t1"], r.stdout
    t = task_of(repo, "t1")
    assert t["status"] == "UNCLAIMED" and not t.get("assigned_to")
    # The work is kept: the release leaves the worktree, and doctor's clean-up of a worktree no
    # task explains any more keeps its commits in the attic.
    assert (worktree / "wip.txt").is_file() or \
        git(repo, "rev-parse", f"refs/liza-attic/t1/{wip}^{{commit}}") == wip
    assert Liza.open(repo).board().get("supervisors", "coder-1").expires is None
    log = json.loads(ok(liza(repo, "log", "--all", "--json", "-n", "2", agent=None)))
    assert [(e["op"], e["actor"]) for e in log] == [("release", "human"),
                                                   ("supervise", "human")]
    ok(liza(repo, "validate", agent=None))
    # Freed: a new supervisor starts without --takeover and without taking anything over.
    again = Sup(repo, "coder", "coder-1", "--", str(script(tmp_path, "hang2.sh", HANG)))
    again.expect("generation 2")
    assert not any("taking over" in x for x in again.lines)
    again.signal(signal.SIGTERM)
    assert again.wait() == 0


def test_doctor_finds_a_stale_token(repo: Path, tmp_path: Path) -> None:
    make_board(repo, lease_duration="2")
    sup = Sup(repo, "coder", "coder-1", "--", "true")
    sup.expect("generation 1")
    sup.kill()
    for _ in range(int(WAIT * 5)):  # the token expires 2 s after its last renewal
        r = _doctor(repo)
        if "stale-token coder-1" in r.stdout:
            break
        subprocess.run(["sleep", "0.2"])
    assert "stale-token coder-1: generation 1 (pid " in r.stdout and r.returncode == 4
    ok(_doctor(repo, "--fix"))
    assert "stale-token" not in _doctor(repo).stdout
