"""The main job with a real agent CLI: `examples/team.py --cli claude` builds the hello-CLI demo
(a planner, two coders, a reviewer, each a `git liza agent ROLE --cli claude` supervisor) against
the scripted model server, and passes the example's own end checks: every task MERGED,
`python -m hello [--name Bob]` on the integration branch, its tests, `git liza verify`."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from tests.agentcli import clis
from tests.agentcli.brain import HELLO
from tests.agentcli.modelserver import Server
from tests.agentcli.team_check import denials

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "team.py"
TIMEOUT = 900  # seconds: a hung run fails the test instead of CI


@pytest.mark.slow
def test_the_example_team_builds_hello_with_claude(agent_cli: Callable[[str], clis.Cli],
                                                   agent_env: dict[str, str],
                                                   server: Server) -> None:
    agent_cli("claude")
    r = subprocess.run([sys.executable, str(EXAMPLE), "--cli", "claude", "--deadline", "600"],
                       env=agent_env, capture_output=True, text=True, timeout=TIMEOUT)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-8000:]
    merged = f"every task MERGED: {', '.join(sorted(t.id for t in HELLO))};"
    assert merged in out, out[-4000:]
    assert "integration: `python -m hello` -> 'Hello, World!', --name Bob -> 'Hello, Bob!'" \
        in out, out[-4000:]
    assert "integration tests: Ran 4 tests" in out, out[-4000:]
    assert re.search(r"^verified \d+ state commit", out, re.M), out[-2000:]
    assert denials(server) == [], denials(server)
    # Every member's turns went to the scripted model through Claude Code.
    for role in ("planner", "coder", "code-reviewer"):
        assert server.turns(role), f"no {role} turn reached the model"


@pytest.mark.slow
def test_the_offline_demo_runs_claude_without_an_account(agent_cli: Callable[[str], clis.Cli],
                                                         tmp_path: Path) -> None:
    """`python3 dev.py example offline` (examples/offline.py): what a newcomer runs, with no
    fixture of ours around it: it installs the CLI, starts the scripted server, configures a
    private HOME and runs the team; the example's own end checks must pass."""
    agent_cli("claude")  # installed once per session (or the test skips, saying why)
    offline = EXAMPLE.parent / "offline.py"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "LIZA_"))}
    env["GITLIZA_AGENT_CLI_CACHE"] = str(clis.CACHE)  # the install the session made, not anew
    r = subprocess.run([sys.executable, str(offline)], env=env, capture_output=True, text=True,
                       timeout=TIMEOUT)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-8000:]
    assert "the team runs claude" in out
    assert f"every task MERGED: {', '.join(sorted(t.id for t in HELLO))};" in out, out[-4000:]
    assert re.search(r"^verified \d+ state commit", out, re.M), out[-2000:]
