"""Codex (`codex`), OpenAI's agent CLI: everything gitliza knows of it.

- Launch: `codex exec -`, the prompt on standard input. `--permissions worktree`: its
  workspace-write sandbox, approvals never asked, plus the task's own git metadata as writable
  roots; inside gitliza's sandbox its own is off (it cannot nest). `bypass`: its
  --dangerously-bypass-approvals-and-sandbox.
- MCP: `-c mcp_servers.gitliza.*` overrides (`.codex/config.toml`'s `[mcp_servers.gitliza]`).
- Usage, `exec --json`: every `turn.completed` event's `usage` (input includes cached input; no
  cost).
- Sandbox: its login and configuration in ~/.codex/ (CODEX_HOME moves it), its API at
  api.openai.com, chatgpt.com and auth.openai.com (OPENAI_BASE_URL, or a provider's base_url in
  its config.toml, another).
- Transcript: CODEX_HOME (~/.codex)/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from gitliza.agentcli import base as b
from gitliza.agentcli.base import Context, Launch, Permissions, Profile, Prompt
from gitliza.agentcli.launch import writable_git_roots
from gitliza.core.agents import faults
from gitliza.core.agents.faults import End, Sign


def _tmpdir(launch: Launch, ctx: Context) -> Launch:
    """Codex's own sandbox runs its commands through a `codex-linux-sandbox` alias it makes in
    its home, and refuses to make it when that home is under the temporary directory (TMPDIR,
    else /tmp): then, where a system bubblewrap is installed, every command fails with
    "bwrap: execvp codex-linux-sandbox: No such file or directory" (a HOME under /tmp, as in
    tests and throwaway accounts). A TMPDIR of its own, beside this agent's per-run files, puts
    the home outside it."""
    env = launch.env
    named = env.get("CODEX_HOME") or (f"{env['HOME']}/.codex" if env.get("HOME") else None)
    home, tmp = Path(named or "."), Path(env.get("TMPDIR") or "/tmp")
    if not home.is_absolute() or not (home == tmp or tmp in home.parents):
        return launch
    mine = ctx.run_dir / f"{ctx.agent}-tmp"
    note = mine / "README"
    return Launch(launch.argv, {**env, "TMPDIR": str(mine)}, launch.stdin,
                  {**launch.files, note: "Codex's TMPDIR for this agent (gitliza: its home is "
                                         "under the system's temporary directory)\n"},
                  launch.mcp_config)


def _wire(launch: Launch, perms: Permissions, ctx: Context, _cmd: Sequence[str]) -> Launch:
    argv = list(launch.argv)
    if perms is Permissions.WORKTREE and ctx.contained:
        # gitliza's sandbox holds it (docs/security.md); Codex's own would fail every command
        # ("bwrap: setting up uid map: Operation not permitted"), so it runs without one.
        argv[argv.index("workspace-write")] = "danger-full-access"
    elif perms is Permissions.WORKTREE:
        # workspace-write keeps `.git` (and a worktree's resolved gitdir) read-only: give back
        # exactly what committing and `git liza` write (measured with `codex sandbox`).
        argv += ["-c", "sandbox_workspace_write.writable_roots="
                       f"{b.toml_value(writable_git_roots(ctx))}"]
        launch = _tmpdir(launch, ctx)
    # Codex's shell drops variables whose names contain KEY/SECRET/TOKEN (GIT_CONFIG_KEY_0);
    # `set` is applied after that filter.
    alias = {k: v for k, v in launch.env.items() if k.startswith("GIT_CONFIG_")}
    argv += ["-c", f"shell_environment_policy.set={b.toml_value(alias)}"]
    mcp = None
    files = dict(launch.files)
    if ctx.mcp is not None:
        base = f"mcp_servers.{b.SERVER_NAME}"
        argv += ["-c", f"{base}.command={b.toml_value(ctx.mcp['command'])}",
                 "-c", f"{base}.args={b.toml_value(ctx.mcp['args'])}",
                 "-c", f"{base}.env={b.toml_value(ctx.mcp['env'])}",
                 # Codex starts a turn without waiting for its MCP servers, and tool_search
                 # indexes only the servers connected by then (gitliza's takes a few seconds):
                 # a required server is waited for before the first turn (and fails it loudly),
                 # with room for a slow start on a loaded machine.
                 "-c", f"{base}.required=true", "-c", f"{base}.startup_timeout_sec=60"]
        if perms is not Permissions.OWN:
            argv += ["-c", f'{base}.default_tools_approval_mode="approve"']
        mcp = b.run_file(ctx, "mcp.toml")
        files[mcp] = b.render(".toml", _mcp_data(ctx.mcp, str(ctx.cwd)))
    return Launch(argv, launch.env, launch.stdin, files, mcp)


def _mcp_data(entry: Mapping[str, Any], _cwd: str) -> dict[str, Any]:
    """Codex's `config.toml` table `[mcp_servers.gitliza]`."""
    return {"mcp_servers": {b.SERVER_NAME: dict(entry)}}


class CodexStream(b.Stream):
    def line(self, e: dict[str, Any]) -> str | None:
        kind = e.get("type")
        if kind == "turn.completed" and isinstance(e.get("usage"), dict):
            u = e["usage"]
            self.counted.input += b.count(u.get("input_tokens"))
            self.counted.cached += b.count(u.get("cached_input_tokens"))
            self.counted.output += b.count(u.get("output_tokens"))
            return None
        if kind == "thread.started":
            return f"[codex] thread {e.get('thread_id', '?')}"
        if kind in ("error", "turn.failed"):
            err = b.table(e, "error") or e
            return f"[codex] {kind}: {err.get('message', '')}"
        if kind == "item.completed" and isinstance(e.get("item"), dict):
            item = e["item"]
            t = item.get("type")
            if t in ("agent_message", "reasoning"):
                return str(item.get("text", ""))
            if t == "command_execution":
                return (f"$ {item.get('command')} (exit {item.get('exit_code')})\n"
                        f"{b.short(item.get('aggregated_output', ''))}")
            if t == "mcp_tool_call":
                return f"-> {item.get('server')}.{item.get('tool')} ({item.get('status')})"
            if t == "file_change":
                return f"[edit] {b.short(item.get('changes', ''))}"
            return f"[{t}] {b.short(item)}"
        return None


def reads(e: dict[str, Any] | None, text: str, now: float) -> Sign | None:
    """Codex's `exec --json`: an `error` event per refused attempt ("Reconnecting... 2/5
    (unexpected status 401 Unauthorized: ...)", "exceeded retry limit, last status: 429"),
    "Quota exceeded. Check your plan and billing details." (insufficient_quota), "Missing
    environment variable: `KEY`" (no key), and `turn.failed` with the last of them."""
    if e is None:
        return b.plain_reads(e, text, now)
    kind = e.get("type")
    if kind not in ("error", "turn.failed"):
        return None
    message = str((b.table(e, "error") or e).get("message") or "")
    s = faults.text_sign(message, now)
    if s is None and _MISSING_KEY.search(message):
        s = Sign(End.NOT_LOGGED_IN, message)
    if kind == "turn.failed":
        s = s or Sign(End.AGENT_ERROR, message[:300] or "turn failed")
        return Sign(s.end, s.line, s.reset, s.window, final=True)
    return s


def logged_in(env: Mapping[str, str], read: Callable[[str], str | None]) -> str | None:
    """The key its configured provider reads (`env_key`), else OPENAI_API_KEY or the login in
    CODEX_HOME's auth.json."""
    import tomllib  # here: read only for `team`'s start check
    home = env.get("CODEX_HOME") or ".codex"
    try:
        cfg = tomllib.loads(read(os.path.join(home, "config.toml")) or "")
    except tomllib.TOMLDecodeError:
        cfg = {}
    chosen = b.table(cfg.get("model_providers"), str(cfg.get("model_provider")))
    key = chosen.get("env_key")
    if isinstance(key, str):
        return None if env.get(key) else f"{key} is not set (its provider's env_key)"
    if b.any_env(env, "OPENAI_API_KEY", "CODEX_API_KEY") or read(os.path.join(home, "auth.json")):
        return None
    return "no login (no OPENAI_API_KEY, no ~/.codex/auth.json)"


_MISSING_KEY = re.compile(r"Missing environment variable", re.I)


def _config_urls(text: str) -> list[str]:
    """The base_url of every model provider its config.toml names."""
    import tomllib  # here: read only for `--sandbox model`
    try:
        providers = tomllib.loads(text).get("model_providers")
    except tomllib.TOMLDecodeError:
        return []
    entries = list(providers.values()) if isinstance(providers, dict) else []
    return [e["base_url"] for e in entries
            if isinstance(e, dict) and isinstance(e.get("base_url"), str)]


def _transcript(env: Mapping[str, str], home: str, _cwd: Path) -> str:
    root = env.get("CODEX_HOME") or os.path.join(home, ".codex")
    return os.path.join(root, "sessions", "YYYY", "MM", "DD", "rollout-<time>-<id>.jsonl")


PROFILE = Profile(
    "codex", "codex", ("exec",), Prompt.STDIN, wire=_wire, prompt_words=("-",),
    postures={
        # The writable roots (the task's git metadata) are added by the wiring.
        Permissions.WORKTREE: ("--sandbox", "workspace-write", "-c", 'approval_policy="never"'),
        Permissions.BYPASS: ("--dangerously-bypass-approvals-and-sandbox",),
    },
    mcp_file=".codex/config.toml", mcp_data=_mcp_data,
    stream=CodexStream, stream_flags=("--json",),
    state=(".codex/config.toml", ".codex/auth.json"), home_env=("CODEX_HOME", ".codex"),
    hosts=("api.openai.com:443", "chatgpt.com:443", "auth.openai.com:443"),
    base_url_env=("OPENAI_BASE_URL",),
    config_file=".codex/config.toml", config_urls=_config_urls,
    transcript=_transcript, reads=reads, logged_in=logged_in, login="`codex login`, or set OPENAI_API_KEY")
