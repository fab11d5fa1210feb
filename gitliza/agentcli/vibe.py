"""Mistral Vibe (`vibe`, `--cli mistral` or `vibe`): everything gitliza knows of it.

- Launch: `vibe --prompt-file FILE` (it reads the prompt from the file by name); it takes no
  model on its command line. `--permissions worktree`: its accept-edits agent plus bash and
  gitliza's tools; `bypass`: --auto-approve.
- MCP and permissions: VIBE_* variables, a config layer above the user's and the project's
  config.toml (lists of servers merge by name), so the user's home and keys stay in use.
- Usage, `--output-dir DIR`: `DIR/export.json`'s `usage` and `cost_usd`, its subagents' added
  (the text output stays as it is).
- Sandbox: its configuration and keys in ~/.vibe/ (VIBE_HOME moves it), its API at
  api.mistral.ai (MISTRAL_BASE_URL, or a provider's api_base in its config.toml, another).
- Transcript: VIBE_HOME (~/.vibe)/logs/session.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from gitliza.agentcli import base as b
from gitliza.agentcli.base import Context, Launch, Permissions, Profile, Prompt


def mcp_entry(entry: Mapping[str, Any]) -> dict[str, Any]:
    """One Mistral Vibe `[[mcp_servers]]` item."""
    return {"name": b.SERVER_NAME, "transport": "stdio", **entry}


def _mcp_data(entry: Mapping[str, Any], _cwd: str) -> dict[str, Any]:
    return {"mcp_servers": [mcp_entry(entry)]}


def _wire(launch: Launch, perms: Permissions, ctx: Context, _cmd: Sequence[str]) -> Launch:
    env = dict(launch.env)
    tools: dict[str, Any] = {}
    if perms is Permissions.WORKTREE:
        tools["bash"] = {"permission": "always"}
    files = dict(launch.files)
    mcp = None
    if ctx.mcp is not None:
        data = _mcp_data(ctx.mcp, str(ctx.cwd))
        env["VIBE_MCP_SERVERS"] = json.dumps(data["mcp_servers"])
        if perms is not Permissions.OWN:
            for t in ctx.tools:  # vibe names an MCP tool SERVER_TOOL
                tools[f"{b.SERVER_NAME}_{t}"] = {"permission": "always"}
        mcp = b.run_file(ctx, "mcp.toml")
        files[mcp] = b.render(".toml", data)
    if tools:
        env["VIBE_TOOLS"] = json.dumps(tools)
    return Launch(launch.argv, env, launch.stdin, files, mcp)


def export(text: str) -> b.Counted:
    """Vibe's export.json: the run's usage and cost, its subagents' added."""
    try:
        data = json.loads(text)
    except ValueError:
        return b.Counted()
    out = b.Counted()
    for part in [data, *(data.get("subagents") or [])] if isinstance(data, dict) else []:
        if not isinstance(part, dict):
            continue
        u = b.table(part, "usage")
        out.add(b.Counted(b.count(u.get("input_tokens")), b.count(u.get("output_tokens")),
                          b.count(u.get("cached_input_tokens")), b.cost(part.get("cost_usd")),
                          part.get("model") if isinstance(part.get("model"), str) else None))
    cfg = data.get("config") if isinstance(data, dict) else None
    if isinstance(cfg, dict) and isinstance(cfg.get("active_model"), str):
        out.model = cfg["active_model"]
    return out


def _config_urls(text: str) -> list[str]:
    """The api_base of every provider its config.toml lists."""
    import tomllib  # here: read only for `--sandbox model`
    try:
        listed = tomllib.loads(text).get("providers")
    except tomllib.TOMLDecodeError:
        return []
    entries = listed if isinstance(listed, list) else []
    return [e["api_base"] for e in entries
            if isinstance(e, dict) and isinstance(e.get("api_base"), str)]


def logged_in(env: Mapping[str, str], read: Callable[[str], str | None]) -> str | None:
    """The key its active provider reads (`api_key_env_var`, MISTRAL_API_KEY by default), from
    the environment or VIBE_HOME's .env."""
    import tomllib  # here: read only for `team`'s start check
    home = env.get("VIBE_HOME") or ".vibe"
    try:
        cfg = tomllib.loads(read(os.path.join(home, "config.toml")) or "")
    except tomllib.TOMLDecodeError:
        cfg = {}
    keys = {p.get("api_key_env_var") for p in cfg.get("providers") or []
            if isinstance(p, dict) and p.get("name") == "mistral"} - {None}
    key = str(next(iter(keys), "MISTRAL_API_KEY"))
    if env.get(key) or f"{key}=" in (read(os.path.join(home, ".env")) or ""):
        return None
    return f"{key} is not set (nor in ~/.vibe/.env)"


def _transcript(env: Mapping[str, str], home: str, _cwd: Path) -> str:
    root = env.get("VIBE_HOME") or os.path.join(home, ".vibe")
    return os.path.join(root, "logs", "session")


PROFILE = Profile(
    "mistral", "vibe", (), Prompt.FILE, wire=_wire, prompt_words=("--prompt-file",),
    postures={
        Permissions.WORKTREE: ("--agent", "accept-edits"),
        Permissions.BYPASS: ("--auto-approve",),
    },
    aliases=("vibe",), model_words=(),
    mcp_file=".vibe/config.toml", mcp_data=_mcp_data,
    export=b.Export(("--output-dir",), "export.json", export),
    state=(".vibe/config.toml", ".vibe/.env"), home_env=("VIBE_HOME", ".vibe"),
    hosts=("api.mistral.ai:443",), base_url_env=("MISTRAL_BASE_URL",),
    config_file=".vibe/config.toml", config_urls=_config_urls,
    transcript=_transcript, logged_in=logged_in, login="`vibe --setup`, or set MISTRAL_API_KEY")
