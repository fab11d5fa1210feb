"""`git liza team`: one command starts a whole team (a supervisor per member, real processes)
that builds the hello-CLI demo to COMPLETED; bad team shapes are refused with nothing started."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from gitliza.services.api import Liza
from gitliza.team.launch import Member, members
from gitliza.errors import ValidationError
from tests.team.procs import env_for

ROOT = Path(__file__).resolve().parents[2]


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("team_example", ROOT / "examples" / "team.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_one_command_runs_a_team_that_completes_the_goal(tmp_path: Path) -> None:
    example = _example()
    repo = tmp_path / "hello-cli"
    example.setup(repo)
    logs = tmp_path / "logs"
    r = subprocess.run([sys.executable, "-m", "gitliza", "team", "--coders", "2", "--logs",
                        str(logs), "--", sys.executable,
                        str(ROOT / "examples" / "agents" / "by_role.py")],
                       cwd=repo, env=env_for(), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "team: every supervisor exited 0" in r.stdout
    for agent in ("planner-1", "coder-1", "coder-2", "reviewer-1"):
        assert f"[{agent}] started `git liza agent" in r.stdout
        assert (logs / f"{agent}.log").read_text().strip()
    board = Liza.open(repo).board()
    assert board.goal.status == "COMPLETED"
    tasks = list(board.all_tasks())
    assert tasks and all(t.status == "MERGED" for t in tasks)
    example.check_result(repo)  # python -m hello on the integration branch, tests, verify
    # Liveness is off the audit chain: every state commit of the run is a protocol transition
    # (the heartbeats and token renewals went to refs/liza/live/*).
    log = json.loads(subprocess.run([sys.executable, "-m", "gitliza", "log", "--all", "--json"],
                                    cwd=repo, env=env_for(), capture_output=True, text=True,
                                    check=True).stdout)
    liveness = [e for e in log if e["op"] == "heartbeat" or
                (e["op"] == "supervise" and e["args"].get("mode") == "renew")]
    assert log and not liveness, f"{len(liveness)} liveness commits of {len(log)}"
    # (Whether a renewal happened at all depends on how long the agents ran against the 2 s
    # heartbeat; tests/team/test_supervisor.py's long-running agent asserts the renewals.)


def test_members_and_their_ids() -> None:
    assert members(1, 2, 1, "m2-") == [
        Member("planner", "m2-planner-1"), Member("coder", "m2-coder-1"),
        Member("coder", "m2-coder-2"), Member("code-reviewer", "m2-reviewer-1")]
    assert [m.agent for m in members(0, 1, 0)] == ["coder-1"]
    for bad in ((0, 0, 0), (1, -1, 1), (1, 65, 1)):
        with pytest.raises(ValidationError):
            members(*bad)
    with pytest.raises(ValidationError):
        members(1, 1, 1, "../")


def test_a_missing_agent_program_starts_nobody(repo: Path) -> None:
    from tests.cli.test_board import liza, ok, tip
    ok(liza(repo, "init", "g", agent=None))
    before = tip(repo)
    r = subprocess.run([sys.executable, "-m", "gitliza", "team", "--", "no-such-agent-cli"],
                       cwd=repo, env=env_for(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 5 and "not found" in r.stderr and "started" not in r.stdout
    assert tip(repo) == before


@pytest.mark.slow
def test_the_team_tells_the_human_without_a_watch_running(tmp_path: Path) -> None:
    """No `git liza watch` anywhere: the team's own watcher POSTs the goal's end to a real
    receiver on 127.0.0.1, naming the commit that completed it."""
    from tests.governance.receiver import Receiver
    example = _example()
    repo = tmp_path / "hello-cli"
    example.setup(repo)
    with Receiver() as rx:
        subprocess.run([sys.executable, "-m", "gitliza", "config", "escalation_webhook", rx.url],
                       cwd=repo, env=env_for(), check=True, capture_output=True)
        r = subprocess.run([sys.executable, "-m", "gitliza", "team", "--coders", "1", "--",
                            sys.executable, str(ROOT / "examples" / "agents" / "by_role.py")],
                           cwd=repo, env=env_for(), capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
        ended = [p for p in rx.posts if p["event"] == "GOAL_ENDED"]
    assert len(ended) == 1, rx.posts
    completed = subprocess.run(["git", "log", "-1", "--format=%H", "--grep=^Liza-Op: complete-goal$",
                                "refs/liza/state"], cwd=repo, capture_output=True, text=True,
                               check=True).stdout.strip()
    assert ended[0]["board_commit"] == completed and "COMPLETED" in ended[0]["line"]
