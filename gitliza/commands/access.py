"""Access commands: `mcp` (the board as an MCP server), `events` (the transitions as a stream),
`top` (a live view). The work is in gitliza/access/."""
from __future__ import annotations

from pathlib import Path

from gitliza.commands import Env


def mcp(env: Env, role: str | None, repo: Path | None) -> int:
    from gitliza.access import mcp as server
    return server.serve(repo or env.path, env.agent, role)
