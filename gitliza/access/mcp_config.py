"""The MCP configuration that points an agent CLI at `git liza mcp` for one agent.

Pure (no I/O): the supervisor (or a person, see docs/mcp.md) writes what this returns where the
agent CLI reads it. The server is started as `<python> -m gitliza mcp --repo R --agent A --role X`:
the interpreter gitliza is installed in (no reliance on PATH, which agent CLIs often trim) and the
repository by path (not every CLI has a working-directory setting for MCP servers).
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any

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
    args = ["-m", "gitliza", "mcp", "--repo", os.fspath(repo), "--agent", agent]
    if role:
        args += ["--role", role]
    env = {"LIZA_AGENT_ID": agent}
    if gen is not None:
        env["LIZA_SUPERVISOR_GEN"] = str(gen)
    return {"command": python or sys.executable, "args": args, "env": env}


def mcp_json(repo: str | os.PathLike[str], agent: str, role: str | None = None,
             python: str | None = None, gen: int | None = None) -> dict[str, Any]:
    """Claude Code's `.mcp.json` (also what `claude --mcp-config FILE` takes)."""
    entry = {"type": "stdio", **server(repo, agent, role, python, gen)}
    return {"mcpServers": {SERVER_NAME: entry}}


def gemini_settings(repo: str | os.PathLike[str], agent: str, role: str | None = None,
                    python: str | None = None, gen: int | None = None) -> dict[str, Any]:
    """Gemini CLI's `settings.json` fragment."""
    return {"mcpServers": {SERVER_NAME: {**server(repo, agent, role, python, gen),
                                         "cwd": os.fspath(repo)}}}


def codex_config(repo: str | os.PathLike[str], agent: str, role: str | None = None,
                 python: str | None = None, gen: int | None = None) -> dict[str, Any]:
    """Codex's `config.toml` table `[mcp_servers.gitliza]` (as data; `render` gives TOML)."""
    return {"mcp_servers": {SERVER_NAME: server(repo, agent, role, python, gen)}}


def vibe_config(repo: str | os.PathLike[str], agent: str, role: str | None = None,
                python: str | None = None, gen: int | None = None) -> dict[str, Any]:
    """Mistral Vibe's `config.toml` array of tables `[[mcp_servers]]`."""
    return {"mcp_servers": [{"name": SERVER_NAME, "transport": "stdio",
                             **server(repo, agent, role, python, gen)}]}


_BUILDERS = {"claude": mcp_json, "gemini": gemini_settings, "codex": codex_config,
             "vibe": vibe_config}


def for_cli(cli: str, repo: str | os.PathLike[str], agent: str, role: str | None = None,
            python: str | None = None, gen: int | None = None) -> tuple[str, str]:
    """(file name relative to the project, its text) for agent CLI `cli` (claude, gemini,
    codex, vibe)."""
    build = _BUILDERS.get(cli)
    if build is None:
        from gitliza.errors import ValidationError
        raise ValidationError(f"unknown agent CLI {cli!r}", hint="one of: " + ", ".join(_BUILDERS))
    return CONFIG_FILES[cli], render(CONFIG_FILES[cli], build(repo, agent, role, python, gen))


def render(filename: str, data: dict[str, Any]) -> str:
    if filename.endswith(".toml"):
        import tomli_w
        return tomli_w.dumps(data)
    return json.dumps(data, indent=2) + "\n"
