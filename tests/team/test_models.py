"""A model per role: the board's `models` config (core/agents/teammodels.py) names each role's
CLI and model, each reviewer slot its own; `git liza team` starts every member on it, the CLI gets
its --model, and the run's usage records the model."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gitliza.core.agents import teammodels
from gitliza.errors import ValidationError
from gitliza import agentcli
from gitliza.team.launch import Member, TeamOptions, supervisor_argv
from tests.cli.test_board import liza, ok, tip
from tests.team.procs import BIN, WAIT, add_task, env_for, make_board, script
from tests.team.test_supervisor import SUBMIT

MODELS = "planner=claude:opus coder=codex:cheap-1 reviewer=claude:sonnet reviewer.2=gemini:pro-2"


def test_each_role_and_reviewer_slot_gets_its_own() -> None:
    assert teammodels.for_member(MODELS, "planner", "planner-1") == ("claude", "opus")
    assert teammodels.for_member(MODELS, "coder", "coder-7") == ("codex", "cheap-1")
    assert teammodels.for_member(MODELS, "code-reviewer", "reviewer-1") == ("claude", "sonnet")
    assert teammodels.for_member(MODELS, "code-reviewer", "b-reviewer-2") == ("gemini", "pro-2")
    assert teammodels.for_member("coder=codex", "coder", "coder-1") == ("codex", None)
    assert teammodels.for_member(None, "coder", "coder-1") is None
    assert teammodels.canonical("reviewer=claude coder=codex:m") == "coder=codex:m reviewer=claude"
    for bad in ("coder", "tester=claude", "coder=", "coder=a b=c", "coder=x coder=y",
                "coder=codex:$(rm -rf ~)"):
        with pytest.raises(ValidationError):
            teammodels.parse(bad)


def test_team_members_follow_the_board_unless_told_otherwise() -> None:
    two = Member("code-reviewer", "reviewer-2")
    argv = supervisor_argv(two, TeamOptions(models=MODELS))
    assert argv[argv.index("--cli") + 1] == "gemini" and argv[argv.index("--model") + 1] == "pro-2"
    argv = supervisor_argv(two, TeamOptions(cli="codex").following(MODELS))  # --cli wins
    assert argv[argv.index("--cli") + 1] == "codex" and "--model" not in argv
    argv = supervisor_argv(two, TeamOptions(command=("my-agent",)).following(MODELS))  # a command
    assert "--cli" not in argv and "--model" not in argv


def test_the_cli_gets_the_model_and_one_without_a_flag_is_refused() -> None:
    p = agentcli.with_model(agentcli.profile("claude"), "opus")
    assert p.model == "opus" and "--model" in p.model_words
    with pytest.raises(ValidationError):
        agentcli.with_model(agentcli.profile("mistral"), "large")
    with pytest.raises(ValidationError):
        agentcli.with_model(agentcli.PLAIN, "x")


def test_models_is_the_humans_and_checked(repo: Path) -> None:
    make_board(repo)
    before = tip(repo)
    r = liza(repo, "config", "models", "coder=codex:x", agent="planner-1")
    assert r.returncode != 0 and tip(repo) == before
    r = liza(repo, "config", "models", "coder=codex:x y", agent=None)
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and tip(repo) == before
    ok(liza(repo, "config", "models", MODELS, agent=None))
    status = json.loads(ok(liza(repo, "status", "--json", agent=None)))
    assert status["config"]["models"] == teammodels.canonical(MODELS)


@pytest.mark.slow
def test_a_team_runs_each_role_on_its_model(repo: Path, tmp_path: Path) -> None:
    """A stand-in `codex` on PATH records its command line and does the coder's work: the team
    started the coder on codex with --model cheap-1, and the run's usage says so."""
    make_board(repo)
    add_task(repo, "t1")
    ok(liza(repo, "config", "models", "coder=codex:cheap-1", agent=None))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    seen = tmp_path / "argv.txt"
    script(bindir, "codex", f'echo "$@" > {seen}\ncat > /dev/null\n' + SUBMIT)
    env = env_for()
    env["PATH"] = f"{bindir}:{env['PATH']}"
    team = subprocess.Popen([str(BIN / "git-liza"), "team", "--planners", "0", "--coders", "1",
                             "--reviewers", "0"], cwd=repo, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        from tests.team.procs import wait_status
        wait_status(repo, "t1", "READY_FOR_REVIEW")
        ok(liza(repo, "abort", agent=None))
        out, _ = team.communicate(timeout=WAIT)
    finally:
        if team.poll() is None:
            team.kill()
    assert "--model cheap-1" in seen.read_text(), out[-2000:]
    runs = json.loads(ok(liza(repo, "show", "t1", "--json", agent=None)))["usage"]
    assert runs and runs[0]["cli"] == "codex" and runs[0].get("model") == "cheap-1", runs
