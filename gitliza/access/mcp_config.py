"""The MCP configuration that points an agent CLI at `git liza mcp` for one agent.

Pure (no I/O): the supervisor (or a person, see docs/mcp.md) writes what this returns where the
agent CLI reads it. The server is started as `<python> -P -m gitliza mcp --repo R --agent A --role X`:
the interpreter gitliza is installed in (no reliance on PATH, which agent CLIs often trim) and the
repository by path (not every CLI has a working-directory setting for MCP servers).
"""
from __future__ import annotations

import json
import os
from typing import Any, Callable

from gitliza import start_command

SERVER_NAME = "gitliza"
# Agent CLI -> the file it reads MCP servers from (relative to the project, or its home).
CONFIG_FILES = {
    "claude": ".mcp.json",
    "gemini": ".gemini/settings.json",
    "codex": ".codex/config.toml",
    "vibe": ".vibe/config.toml",
}


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
    """Claude Code's `.mcp.json` (also what `claude --mcp-config FILE` takes)."""
    return claude_data(server(repo, agent, role, python, gen))


# The data each CLI reads, from one server entry (`server`): the supervisor's launch profiles
# (gitliza/team/profiles.py) and `for_cli` both build through these.
def claude_data(entry: dict[str, Any]) -> dict[str, Any]:
    return {"mcpServers": {SERVER_NAME: {"type": "stdio", **entry}}}


def gemini_data(entry: dict[str, Any], cwd: str | os.PathLike[str],
                trust: bool = False) -> dict[str, Any]:
    """Gemini CLI's `settings.json` fragment; `trust`: its tools never ask."""
    out = {**entry, "cwd": os.fspath(cwd)}
    if trust:
        out["trust"] = True
    return {"mcpServers": {SERVER_NAME: out}}


def codex_data(entry: dict[str, Any]) -> dict[str, Any]:
    """Codex's `config.toml` table `[mcp_servers.gitliza]`."""
    return {"mcp_servers": {SERVER_NAME: dict(entry)}}


def vibe_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """One Mistral Vibe `[[mcp_servers]]` item."""
    return {"name": SERVER_NAME, "transport": "stdio", **entry}


def vibe_data(entry: dict[str, Any]) -> dict[str, Any]:
    return {"mcp_servers": [vibe_entry(entry)]}


_BUILDERS: dict[str, Callable[[dict[str, Any], str], dict[str, Any]]] = {
    "claude": lambda e, _repo: claude_data(e),
    "gemini": lambda e, repo: gemini_data(e, repo),
    "codex": lambda e, _repo: codex_data(e),
    "vibe": lambda e, _repo: vibe_data(e),
}
ALIASES = {"mistral": "vibe"}


def for_cli(cli: str, repo: str | os.PathLike[str], agent: str, role: str | None = None,
            python: str | None = None, gen: int | None = None) -> tuple[str, str]:
    """(file name relative to the project, its text) for agent CLI `cli` (claude, gemini,
    codex, vibe or mistral)."""
    key = ALIASES.get(cli, cli)
    build = _BUILDERS.get(key)
    if build is None:
        from gitliza.errors import ValidationError
        raise ValidationError(f"unknown agent CLI {cli!r}",
                              hint="one of: " + ", ".join([*_BUILDERS, *ALIASES]))
    return for_entry(key, server(repo, agent, role, python, gen), repo)


def for_entry(cli: str, entry: dict[str, Any], cwd: str | os.PathLike[str]) -> tuple[str, str]:
    """(file name, text) of CLI `cli`'s configuration for one server entry."""
    key = ALIASES.get(cli, cli)
    return CONFIG_FILES[key], render(CONFIG_FILES[key], _BUILDERS[key](entry, os.fspath(cwd)))


def render(filename: str, data: dict[str, Any]) -> str:
    if filename.endswith(".toml"):
        import tomli_w
        return tomli_w.dumps(data)
    return json.dumps(data, indent=2) + "\n"
