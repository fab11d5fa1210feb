"""Each real agent CLI against the scripted model server, launched by hand through
`git liza agent planner --once -- COMMAND` with the CLI's own unattended flags: the server speaks
the CLI's API, the CLI hands it gitliza's prompt byte for byte, runs the tool calls it is given in
its own vocabulary, and the planner's tasks land on the board."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Callable

import pytest

from tests.agentcli import clis
from tests.agentcli.conftest import BIN, make_board
from tests.agentcli.modelserver import Server
from tests.agentcli.team_check import denials, prompts_reached_byte_for_byte

# Each CLI's own "run unattended" flags, as a user passes them by hand (the launch profiles of
# `--cli NAME` are tested in test_team.py).
BY_HAND = {
    "claude": ["claude", "-p", "--permission-mode", "acceptEdits",
               "--allowedTools", "Bash(git:*)", "Bash(cat:*)", "--"],
    "codex": ["codex", "exec", "--dangerously-bypass-approvals-and-sandbox",
              "--skip-git-repo-check", "--"],
    "gemini": ["gemini", "--approval-mode", "yolo", "--skip-trust", "-p"],
    "mistral": ["vibe", "--auto-approve", "--trust", "-p"],
}
SHELL_TOOL = {"claude": "Bash", "codex": "exec_command", "gemini": "run_shell_command",
              "mistral": "bash"}
DIALECT = {"claude": "anthropic", "codex": "responses", "gemini": "gemini", "mistral": "chat"}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(BY_HAND))
def test_planner_by_hand(name: str, agent_cli: Callable[[str], clis.Cli], board: Path,
                         agent_env: dict[str, str], server: Server) -> None:
    cli = agent_cli(name)
    argv = list(BY_HAND[name])
    argv[0] = str(cli.bin / cli.exe)
    env = dict(agent_env, LIZA_AGENT_ID="planner-1")
    r = subprocess.run(["git", "liza", "agent", "planner", "--once", "--", *argv], cwd=board,
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    status = json.loads(subprocess.run(["git", "liza", "status", "--json"], cwd=board, env=env,
                                       capture_output=True, text=True, check=True).stdout)
    assert sorted(t["id"] for t in status["tasks"]) == ["bye", "hello"], r.stdout[-3000:]
    assert {t["status"] for t in status["tasks"]} == {"UNCLAIMED"}
    turns = server.turns("planner")
    assert turns and {e.dialect for e in turns} == {DIALECT[name]}
    assert all(SHELL_TOOL[name] in (e.conv.tools if e.conv else {}) for e in turns)
    first = turns[0].conv
    assert first is not None and first.calls == []  # the model opened the conversation
    # Every later turn carries the results of the earlier calls: the vision was read for real.
    assert any("`hello.txt` holds `Hello, World!`" in c.result
               for e in turns for c in (e.conv.calls if e.conv else []))
    prompts_reached_byte_for_byte(board, server)
    assert denials(server) == []
    assert server.outbound == [], f"{name} tried to reach the internet: {server.outbound}"


@pytest.mark.slow
@pytest.mark.parametrize("name", list(BY_HAND))
def test_planner_reaches_its_model_through_the_gate(name: str,
                                                    agent_cli: Callable[[str], clis.Cli],
                                                    private_dir: Path) -> None:
    """`--sandbox model` when the model is not on this machine's 127.0.0.1: the CLI must go
    through the proxy variables to the supervisor's gate (the way to api.anthropic.com and the
    others). The scripted server listens on 127.0.0.2, which the sandbox does not forward: a
    CLI that ignored HTTPS_PROXY/HTTP_PROXY would reach nothing. (Plain HTTP here, so an
    absolute-URI request through the proxy; over HTTPS the same variables make a CONNECT.)"""
    cli = agent_cli(name)
    with Server(host="127.0.0.2", log_file=private_dir / "model-requests.jsonl") as srv:
        home = Path(os.environ["HOME"])
        clis.configure_home(home, srv.url)
        env = clis.environment(dict(os.environ), home, srv.url, [cli.bin, BIN])
        board = make_board(private_dir / "project", env)
        r = subprocess.run(["git", "liza", "agent", "planner", "--once", "--cli", name,
                            "--sandbox", "model"], cwd=board,
                           env=dict(env, LIZA_AGENT_ID="planner-1"), capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        status = json.loads(subprocess.run(["git", "liza", "status", "--json"], cwd=board,
                                           env=env, capture_output=True, text=True,
                                           check=True).stdout)
        assert sorted(t["id"] for t in status["tasks"]) == ["bye", "hello"], r.stdout[-3000:]
        assert srv.turns("planner"), "the model was never reached"
        refused = sorted({line.split("] ", 1)[-1] for line in r.stdout.splitlines()
                          if "sandbox network: refused" in line})
        print(f"{name} through the gate; refused: {refused}")


@pytest.mark.slow
def test_codex_with_codex_home_outside_the_home_runs_in_the_sandbox(
        agent_cli: Callable[[str], clis.Cli], private_dir: Path, server: Server) -> None:
    """Issue 35: a user whose Codex state lives in CODEX_HOME, outside the home: in the sandbox
    that path is hidden (or read-only), and Codex failed at start ("Read-only file system"). The
    login comes from CODEX_HOME, and inside CODEX_HOME names the agent's own copy. The home has no
    .codex at all here, so only CODEX_HOME can have configured the provider."""
    cli = agent_cli("codex")
    configured, home = private_dir / "configured", private_dir / "home"
    home.mkdir()
    clis.configure_home(configured, server.url)
    gitconfig = Path(os.environ["HOME"]) / ".gitconfig"
    if gitconfig.is_file():
        (home / ".gitconfig").write_text(gitconfig.read_text())
    env = clis.environment(dict(os.environ), home, server.url, [cli.bin, BIN])
    env["CODEX_HOME"] = str(configured / ".codex")
    board = make_board(private_dir / "project", env)
    r = subprocess.run(["git", "liza", "agent", "planner", "--once", "--cli", "codex",
                        "--sandbox", "on"], cwd=board, env=dict(env, LIZA_AGENT_ID="planner-1"),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    status = json.loads(subprocess.run(["git", "liza", "status", "--json"], cwd=board, env=env,
                                       capture_output=True, text=True, check=True).stdout)
    assert sorted(t["id"] for t in status["tasks"]) == ["bye", "hello"], r.stdout[-3000:]
    assert server.turns("planner"), "codex never reached the model"
    assert not (configured / ".codex" / "sessions").exists()  # it wrote its own copy, not ours
