"""The usage a real agent CLI reports is what the board records: a planner run through the CLI's
launch profile (`git liza agent planner --once --cli NAME`, whose supervisor adds the CLI's
machine-readable output), against the scripted model server, which reports known and different
token counts per answer. The run's one `usage` entry equals the sum of what the server served,
and the agent log stays readable (no raw JSON events)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Callable

import pytest

from tests.agentcli import clis
from tests.agentcli.modelserver import Server


@pytest.mark.slow
@pytest.mark.parametrize("name", ["claude", "codex", "gemini", "mistral"])
def test_recorded_usage_is_what_the_server_served(name: str,
                                                  agent_cli: Callable[[str], clis.Cli],
                                                  board: Path, agent_env: dict[str, str],
                                                  server: Server) -> None:
    agent_cli(name)
    env = dict(agent_env, LIZA_AGENT_ID="planner-1")
    r = subprocess.run(["git", "liza", "agent", "planner", "--once", "--cli", name], cwd=board,
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    served = [e.usage for e in server.log if e.usage is not None]
    assert served, "the CLI made no model call"
    data = json.loads(subprocess.run(["git", "liza", "usage", "--json"], cwd=board, env=env,
                                     capture_output=True, text=True, check=True).stdout)
    runs = data["runs"]
    assert runs, r.stdout[-3000:]
    assert [(u["run"], u["cli"], u["role"]) for u in runs] == [("planner-1.1.1", name,
                                                                "planner")]
    u = runs[0]
    want = tuple(sum(s[i] for s in served) for i in range(3))
    assert (u.get("input_tokens", 0), u.get("output_tokens", 0), u.get("cached_tokens", 0)) \
        == want, (u, served)
    logs = sorted((board / ".liza" / "agent-logs").glob("planner-1--*.log"))
    text = logs[-1].read_text()
    assert '{"type":' not in text and '{"type": ' not in text, text[-2000:]
