"""Drive `git liza mcp` as an agent CLI does: the SDK's own client, the server as a subprocess on
stdio, started from the configuration gitliza hands to agent CLIs (gitliza/access/mcp_config.py)."""
from __future__ import annotations

import json
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

from mcp.client.session import ClientSession  # dev.py installs gitliza[mcp]
from mcp.client.stdio import StdioServerParameters, stdio_client

from gitliza.access import mcp_config
from gitliza.services.api import Liza
from gitliza.core.ops import Add, Init, Register
from gitliza.services.lifecycle.integration import ensure_integration_branch
from tests.conftest import commit_specs

AGENTS = (("p1", "planner"), ("c1", "coder"), ("r1", "code_reviewer"))


def setup_board(repo: Path, tasks: tuple[str, ...] = ("t1",),
                agents: tuple[tuple[str, str], ...] = AGENTS) -> None:
    """A board with `agents` registered and ready `tasks` (in-process: set-up, not under test)."""
    commit_specs(repo, "spec.md")  # a ready task's spec must be on the integration branch
    human = Liza.open(repo, "human")
    done = human.do(Init, goal="build it")
    ensure_integration_branch(human, done.outcome.board.config.integration_branch)
    for agent, role in agents:
        human.do(Register, agent=agent, role=role)
    planner = Liza.open(repo, "p1")
    for tid in tasks:
        planner.do(Add, task=tid, description=f"do {tid}", spec_ref="spec.md",
                   done_when="it works", scope="src", ready=True)


@asynccontextmanager
async def agent_session(repo: Path, agent: str, role: str | None = None,
                        env: dict[str, str] | None = None, gen: int | None = None
                        ) -> AsyncIterator[ClientSession]:
    spec = mcp_config.mcp_json(repo, agent, role, python=sys.executable,
                               gen=gen)["mcpServers"]["gitliza"]
    params = StdioServerParameters(command=spec["command"], args=spec["args"],
                                   env={**spec["env"], **(env or {})}, cwd=str(repo))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def call(session: ClientSession, tool: str, **args: Any) -> tuple[bool, dict[str, Any]]:
    """(ok, structured result); also checks the text content says the same as the structure."""
    res = await session.call_tool(tool, args)
    data: dict[str, Any] = res.structured_content
    text = res.content[0].text  # type: ignore[union-attr]
    if res.is_error:
        e = data["error"]
        assert text == f"{e['code']} (exit {e['exit_code']}): {e['message']}"
        assert "\n" not in e["message"]
    else:
        assert json.loads(text) == data
    return not res.is_error, data
