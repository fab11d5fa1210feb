"""The MCP configuration that points an agent CLI at `git liza mcp` for one agent.

Pure (no I/O): the supervisor (or a person, see docs/mcp.md) writes what this returns where the
agent CLI reads it. The server is started as `<python> -P -m gitliza mcp --repo R --agent A --role X`:
the interpreter gitliza is installed in (no reliance on PATH, which agent CLIs often trim) and the
repository by path (not every CLI has a working-directory setting for MCP servers).
"""
from __future__ import annotations

import os
from typing import Any

from gitliza import agentcli, start_command
from gitliza.agentcli.base import mcp_servers_json, render


def server(repo: str | os.PathLike[str], agent: str, role: str | None = None,
           python: str | None = None, gen: int | None = None) -> dict[str, Any]:
    """The stdio server entry: command, args, env. `gen`: the supervisor generation the agent
    runs under (`git liza agent`); the server's ops then carry it, like the CLI's."""
    # -P (gitliza.start_command): the CLI starts the server in the agent's worktree, whose
    # files the agent wrote; a `gitliza/` there must not run instead of the installed one.
    command, *start = start_command(python)
    args = [*start, "mcp", "--repo", os.fspath(repo), "--agent", agent]
    if role:
        args += ["--role", role]
    env = {"LIZA_AGENT_ID": agent}
    if gen is not None:
        env["LIZA_SUPERVISOR_GEN"] = str(gen)
    return {"command": command, "args": args, "env": env}


def mcp_json(repo: str | os.PathLike[str], agent: str, role: str | None = None,
             python: str | None = None, gen: int | None = None) -> dict[str, Any]:
    """The common `mcpServers` JSON: Claude Code's `.mcp.json` (also what `claude --mcp-config
    FILE` takes)."""
    return mcp_servers_json(server(repo, agent, role, python, gen))


def for_cli(cli: str, repo: str | os.PathLike[str], agent: str, role: str | None = None,
            python: str | None = None, gen: int | None = None) -> tuple[str, str]:
    """(file name relative to the project, its text) for agent CLI `cli` (a profile's name or
    alias, gitliza/agentcli/)."""
    return for_entry(cli, server(repo, agent, role, python, gen), repo)


def for_entry(cli: str, entry: dict[str, Any], cwd: str | os.PathLike[str]) -> tuple[str, str]:
    """(file name, text) of CLI `cli`'s configuration for one server entry."""
    p = agentcli.find(cli)
    if p is None or p.mcp_data is None:
        from gitliza.errors import ValidationError
        known = [n for q in agentcli.profiles().values() if q.mcp_data is not None
                 for n in (q.name, *q.aliases)]
        raise ValidationError(f"unknown agent CLI {cli!r}", hint="one of: " + ", ".join(known))
    return p.mcp_file, render(p.mcp_file, p.mcp_data(entry, os.fspath(cwd)))
