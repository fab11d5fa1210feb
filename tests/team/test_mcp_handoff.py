"""`git liza agent --mcp`: the supervisor hands its agent an MCP configuration for `git liza mcp`,
and an agent that acts only through MCP tools (the SDK's own client, as an agent CLI would) does
its task with it: its ops carry the supervisor's generation, and the work lands on the board."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.team.procs import Sup, add_task, make_board, ops, script, task_of, wait_status
from tests.cli.test_board import liza, ok

pytestmark = pytest.mark.slow

# The agent: commit in the worktree with git, then submit through the MCP server named in
# $LIZA_MCP_CONFIG (Claude Code's .mcp.json shape, the default for `-- COMMAND`).
MCP_AGENT = '''
import asyncio, json, os, subprocess
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

task, wt = os.environ["LIZA_TASK_ID"], os.environ["LIZA_WORKTREE"]
open(os.path.join(wt, task + ".txt"), "w").write(task + "\\n")
subprocess.run(["git", "add", "-A"], cwd=wt, check=True)
subprocess.run(["git", "commit", "-q", "-m", "implement " + task], cwd=wt, check=True)
spec = json.load(open(os.environ["LIZA_MCP_CONFIG"]))["mcpServers"]["gitliza"]

async def main():
    params = StdioServerParameters(command=spec["command"], args=spec["args"], env={
        **os.environ, **spec["env"]})
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            names = {t.name for t in (await s.list_tools()).tools}
            # A coder's tools, less what its supervisor does for it (its prompt forbids them).
            assert "submit" in names and "release" in names, names
            assert not names & {"verdict", "claim", "heartbeat", "merge"}, names
            res = await s.call_tool("submit", {"task": task})
            assert not res.is_error, res.content
            print("submitted through mcp", flush=True)

asyncio.run(main())
'''


def test_an_agent_submits_through_the_mcp_server_the_supervisor_handed_it(
        repo: Path, tmp_path: Path) -> None:
    make_board(repo)
    add_task(repo, "t1")
    agent = script(tmp_path, "agent.sh", f'exec {sys.executable} {tmp_path / "agent.py"}\n')
    (tmp_path / "agent.py").write_text(MCP_AGENT)
    sup = Sup(repo, "coder", "coder-1", "--mcp", "--", str(agent))
    sup.expect("agent completed")
    wait_status(repo, "t1", "READY_FOR_REVIEW")
    # The agent's own output is in its run's log, not in the supervisor's.
    assert "submitted through mcp" in Path(task_of(repo, "t1")["agent_logs"][0]).read_text()
    ok(liza(repo, "abort", agent=None))
    assert sup.wait() == 0
    assert ("submit", "coder-1", "t1") in ops(repo)
    config = json.loads((repo / ".liza" / "agent-prompts" / "coder-1-mcp.json").read_text())
    server = config["mcpServers"]["gitliza"]
    assert server["args"][-4:] == ["--agent", "coder-1", "--role", "coder"]
    assert server["env"]["LIZA_SUPERVISOR_GEN"] == "1"
    assert task_of(repo, "t1")["status"] == "READY_FOR_REVIEW"
    ok(liza(repo, "verify", agent=None))
