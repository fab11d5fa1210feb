"""A whole team of real agent CLIs through gitliza's launch profiles: `git liza team --cli NAME`
(and `--mcp`) with the default permissions, each CLI talking to the scripted model server. The
planner turns the vision into two tasks, the coder implements them, the reviewer rejects the first
draft of one with a blocker and approves the fix, the reviewer's supervisor merges, the planner's
supervisor completes the goal, and `git liza verify` accepts the history.

Shell path: the agents act through the CLI's shell and file tools (`git liza ...`, git).
MCP path: the same CLIs get gitliza's MCP server through their own configuration mechanism and the
scripted model uses its tools (`add`, `show`, `submit`, `verdict`) whenever the CLI offers them.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from tests.agentcli import clis
from tests.agentcli.conftest import BIN, make_board
from tests.agentcli.modelserver import Server, mcp_tool
from tests.agentcli.plainuser import PlainTree
from tests.agentcli.team_check import check_team_result, denials, mcp_used

TEAM_TIMEOUT = 900  # seconds: a hung CLI fails the test instead of CI

# What a role's MCP tool list must leave out: the supervisor claims, heartbeats and merges.
SUPERVISOR_ONLY = ("claim", "claim_review", "heartbeat", "merge", "complete_goal")


def run_team(repo: Path, env: dict[str, str], cli: str, *extra: str,
             prefix: list[str] | None = None, bin_dir: Path = BIN,
             reviewers: int = 1) -> tuple[str, float]:
    """`git liza team` to the end; stopped at once (SIGTERM: every supervisor stops cleanly)
    when a member fails, instead of the others waiting out their max wait."""
    t0 = time.monotonic()
    argv = [*(prefix or []), str(bin_dir / "git-liza"), "team", "--planners", "1",
            "--coders", "1",
            "--reviewers", str(reviewers), "--cli", cli, *extra]
    p = subprocess.Popen(argv, cwd=repo, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    killer = threading.Timer(TEAM_TIMEOUT, p.terminate)
    killer.start()
    lines: list[str] = []
    assert p.stdout is not None
    for line in p.stdout:
        lines.append(line)
        if "internal error" in line or re.search(r"\bexited [1-9]", line) or \
                "agent crashed" in line:
            p.terminate()
    code = p.wait()
    killer.cancel()
    out = "".join(lines)
    assert code == 0, f"team exited {code}\n{out[-8000:]}"
    return out, time.monotonic() - t0


# Combinations that do not work yet with the real CLI, and why (NOTES for the launch profiles).
KNOWN_FAILING: dict[tuple[str, str], str] = {}


@pytest.mark.slow
@pytest.mark.parametrize("path", ["shell", "mcp"])
@pytest.mark.parametrize("name", ["claude", "codex", "gemini", "mistral"])
def test_team_of_real_clis(name: str, path: str, agent_cli: Callable[[str], clis.Cli],
                           board: Path, agent_env: dict[str, str], server: Server,
                           request: pytest.FixtureRequest) -> None:
    agent_cli(name)
    if (name, path) in KNOWN_FAILING:
        request.applymarker(pytest.mark.xfail(reason=KNOWN_FAILING[name, path], strict=False))
    # GITLIZA_AGENTCLI_SANDBOX=off|model: the same run in another sandbox mode, to measure
    # the sandbox's cost (docs/performance.md); the default mode otherwise.
    mode = os.environ.get("GITLIZA_AGENTCLI_SANDBOX")
    out, took = run_team(board, agent_env, name, *(["--mcp"] if path == "mcp" else []),
                         *(["--sandbox", mode] if mode else []))
    try:
        figures = check_team_result(board, agent_env, server, f"{name}-{path}")
        assert denials(server) == [], denials(server)
        if path == "mcp":
            for role, op in (("planner", "add"), ("coder", "submit"), ("code-reviewer", "verdict")):
                assert mcp_used(server, role, op), f"{role} never called gitliza's MCP `{op}`"
            for role in ("planner", "coder", "code-reviewer"):
                tools = {n for e in server.turns(role) for n in (e.conv.tools if e.conv else {})}
                offered = [op for op in SUPERVISOR_ONLY if mcp_tool(dict.fromkeys(tools), op)]
                assert offered == [], f"{role} was offered supervisor tools {offered}"
        else:
            assert not any("gitliza" in n for e in server.turns()
                           for n in (e.conv.tools if e.conv else {}))
    except AssertionError as e:
        raise AssertionError(f"{e}\n--- team output ---\n{out[-6000:]}") from None
    print(f"{name}-{path}: {took:.1f}s {figures}")
    _metric(f"{name}-{path}" + (f"-{mode}" if mode else ""), took)


def _metric(run: str, took: float) -> None:
    if os.environ.get("GITLIZA_AGENTCLI_METRICS"):
        with open(os.environ["GITLIZA_AGENTCLI_METRICS"], "a") as f:
            f.write(f'{{"run": "{run}", "wall_s": {took:.1f}}}\n')


PLAIN_UID = 65534  # nobody


@pytest.fixture(scope="session")
def plain_tree() -> Iterator[PlainTree]:
    tree = PlainTree()
    try:
        yield tree
    finally:
        tree.close()


def as_plain_user(cli: clis.Cli, tree: PlainTree,
                  env: dict[str, str]) -> tuple[list[str], Path, dict[str, str]]:
    """The prefix that runs a command as an unprivileged uid (none when the tests already run as
    one), the venv's bin it runs gitliza from, and its environment: as root, the venv, its Python
    and the CLI come from copies that uid can read (plainuser.py). Skips with one line saying
    why where it cannot."""
    if os.geteuid() != 0:
        return [], BIN, env
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("as a plain user: setpriv (util-linux) is not installed")
    prefix = [setpriv, f"--reuid={PLAIN_UID}", f"--regid={PLAIN_UID}", "--clear-groups"]
    venv_bin = tree.venv(Path(sys.prefix)) / "bin"
    cli_bin = tree.cli(cli.home) / cli.bin.relative_to(cli.home)
    old = {str(c.bin) for c in clis.CLIS.values()} | {str(BIN)}
    path = [p for p in env["PATH"].split(os.pathsep) if p not in old]
    env = dict(env, PATH=os.pathsep.join([str(cli_bin), str(venv_bin), *path]),
               LD_LIBRARY_PATH=os.pathsep.join(map(str, tree.libs)))
    exe = str(cli_bin / cli.exe)
    for argv in (["test", "-r", exe], [exe, "--version"],
                 [str(venv_bin / "python"), "-c", "import gitliza, pygit2"]):
        r = subprocess.run([*prefix, *argv], capture_output=True, text=True, timeout=120,
                           env=env, cwd="/")
        if r.returncode != 0:
            err = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
            raise AssertionError(f"as a plain user: uid {PLAIN_UID} cannot run {argv[0]} from "
                                 f"the readable copies ({err[:200]})")
    return prefix, venv_bin, env


@pytest.mark.slow
@pytest.mark.parametrize("name", ["claude", "codex", "gemini", "mistral"])
def test_team_as_a_plain_user(name: str, agent_cli: Callable[[str], clis.Cli],
                              agent_env: dict[str, str], server: Server,
                              plain_tree: PlainTree) -> None:
    """The shell path again as an unprivileged user with its own HOME (Claude Code, for one,
    behaves differently as root), inside the sandbox (the default)."""
    prefix, venv_bin, plain_env = as_plain_user(agent_cli(name), plain_tree, agent_env)
    top = Path(tempfile.mkdtemp(prefix="gitliza-plain-"))
    try:
        os.chmod(top, 0o755)
        home = top / "home"
        home.mkdir()
        shutil.copy(Path(agent_env["HOME"]) / ".gitconfig", home / ".gitconfig")
        clis.configure_home(home, server.url)
        env = dict(plain_env, HOME=str(home), GIT_CONFIG_GLOBAL=str(home / ".gitconfig"))
        repo = make_board(top / "project", env)
        if prefix:
            subprocess.run(["chown", "-R", f"{PLAIN_UID}:{PLAIN_UID}", str(top)], check=True)
        out, took = run_team(repo, env, name, prefix=prefix, bin_dir=venv_bin)
        if prefix:  # checked as root, which git (and libgit2) refuse in another user's repository
            subprocess.run(["chown", "-R", "0:0", str(top)], check=True)
        try:
            check_team_result(repo, env, server, f"{name}-plain-user")
            assert denials(server) == [], denials(server)
        except AssertionError as e:
            raise AssertionError(f"{e}\n--- team output ---\n{out[-6000:]}") from None
        assert "sandbox off" not in out
        _metric(f"{name}-plain-user", took)
    finally:
        shutil.rmtree(top, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["claude", "codex", "gemini", "mistral"])
def test_team_in_model_mode(name: str, agent_cli: Callable[[str], clis.Cli], board: Path,
                            agent_env: dict[str, str], server: Server) -> None:
    """`--sandbox model`: each agent in a network namespace of its own, reaching only its
    model's endpoints (here the scripted server on 127.0.0.1, forwarded as the same port) through
    its supervisor's gate. The whole cycle still completes; what else each CLI tried to reach is
    refused and shown in the team's output (docs/security.md "Network" lists it)."""
    agent_cli(name)
    out, took = run_team(board, agent_env, name, "--sandbox", "model")
    try:
        check_team_result(board, agent_env, server, f"{name}-model")
        assert denials(server) == [], denials(server)
    except AssertionError as e:
        raise AssertionError(f"{e}\n--- team output ---\n{out[-6000:]}") from None
    refused = sorted({re.sub(r"^\[[^]]+\] ", "", line) for line in out.splitlines()
                      if "sandbox network: refused" in line})
    print(f"{name}-model: {took:.1f}s; refused: {refused}")
    _metric(f"{name}-model", took)
