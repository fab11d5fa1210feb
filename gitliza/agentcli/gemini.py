"""Gemini CLI (`gemini`), Google's agent CLI: everything gitliza knows of it.

- Launch: `gemini`, the prompt on standard input; always --skip-trust (our worktrees are not in
  the user's trusted folders; untrusted, a headless gemini exits 55). `--permissions worktree`:
  the edit tools auto-approved inside the workspace (--approval-mode auto_edit) and the shell
  allowed by a policy rule; `bypass`: --approval-mode yolo.
- MCP: per-run settings as its *system* settings file (GEMINI_CLI_SYSTEM_SETTINGS_PATH: highest
  precedence; objects and arrays merge with the user's), the administrator's file kept under
  ours. It skips a settings file below a group/world-writable directory (a repository under
  /tmp): then the file goes to a private directory (team/prepare.py).
- Usage, `--output-format stream-json`: the `result` event's `stats` (input_tokens is the
  prompt, cached included; output_tokens the candidates; no cost).
- Sandbox: its login and settings in ~/.gemini/, its API at generativelanguage.googleapis.com,
  cloudcode-pa.googleapis.com and oauth2.googleapis.com (GOOGLE_GEMINI_BASE_URL,
  CODE_ASSIST_ENDPOINT another).
- Transcript: ~/.gemini/tmp/<project>/chats/session-<time>.json.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from gitliza.agentcli import base as b
from gitliza.agentcli.base import Context, Launch, Permissions, Profile, Prompt
from gitliza.core.agents import faults
from gitliza.core.agents.faults import End, Sign

POLICY = """# gitliza --permissions worktree: the shell is allowed (headless, a tool that would ask is
# denied); --approval-mode auto_edit approves the edit tools, which stay inside the workspace.
[[rule]]
toolName = "run_shell_command"
decision = "allow"
priority = 100
"""
SETTINGS_ENV = "GEMINI_CLI_SYSTEM_SETTINGS_PATH"


def mcp_data(entry: Mapping[str, Any], cwd: str, trust: bool = False) -> dict[str, Any]:
    """Gemini CLI's `settings.json` fragment; `trust`: its tools never ask."""
    out = {**entry, "cwd": cwd}
    if trust:
        out["trust"] = True
    return {"mcpServers": {b.SERVER_NAME: out}}


def _wire(launch: Launch, perms: Permissions, ctx: Context, _cmd: Sequence[str]) -> Launch:
    argv, files = list(launch.argv), dict(launch.files)
    if perms is Permissions.WORKTREE:
        # A policy file of the user tier (`--policy`; the settings' tools.allowed is deprecated).
        policy = b.run_file(ctx, "gemini-policy.toml")
        argv += ["--policy", str(policy)]
        files[policy] = POLICY
    if ctx.mcp is None:
        return Launch(argv, launch.env, launch.stdin, files)
    ours = mcp_data(ctx.mcp, os.fspath(ctx.cwd), trust=perms is not Permissions.OWN)
    # Per-run settings as the *system* settings file (highest precedence; objects and arrays
    # merge with the user's): what the administrator's file said is kept underneath.
    settings = _merge(_json_object(ctx.system_settings), ours)
    path = (ctx.private_dir or ctx.run_dir) / f"{ctx.agent}-gemini-settings.json"
    env = {**launch.env, SETTINGS_ENV: str(path)}
    files[path] = json.dumps(settings, indent=2) + "\n"
    return Launch(argv, env, launch.stdin, files, path)


def _json_object(text: str | None) -> dict[str, Any]:
    try:
        data = json.loads(text) if text else {}
    except ValueError:  # gemini tolerates comments; an unreadable file is left out
        return {}
    return data if isinstance(data, dict) else {}


def _merge(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in top.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        elif isinstance(v, list) and isinstance(out.get(k), list):
            out[k] = [*out[k], *(x for x in v if x not in out[k])]
        else:
            out[k] = v
    return out


class GeminiStream(b.Stream):
    def __init__(self) -> None:
        super().__init__()
        self._open = False  # an assistant message is being streamed in deltas

    def line(self, e: dict[str, Any]) -> str | None:
        kind = e.get("type")
        if kind == "message" and e.get("role") == "assistant" and e.get("delta"):
            self._open = True
            return "\x00" + str(e.get("content", ""))  # no newline: deltas join up
        out = self._line(e, kind)
        if out is not None and self._open:
            self._open = False
            out = "\n" + out
        return out

    def _line(self, e: dict[str, Any], kind: Any) -> str | None:
        if kind == "init":
            self.counted.model = e.get("model") if isinstance(e.get("model"), str) else None
            return f"[gemini] session {e.get('session_id', '?')}, model {e.get('model', '?')}"
        if kind == "message":
            return str(e.get("content", "")) if e.get("role") == "assistant" else None
        if kind == "tool_use":
            return f"-> {e.get('tool_name')} {b.short(e.get('parameters', ''))}"
        if kind == "tool_result":
            return f"<- {e.get('status')} {b.short(e.get('output', ''))}"
        if kind == "error":
            return f"[gemini] error: {e.get('message', '')}"
        if kind == "result":
            s = b.table(e, "stats")
            self.counted.at_least(b.count(s.get("input_tokens")), b.count(s.get("output_tokens")),
                                  b.count(s.get("cached")))
            models = s.get("models")
            if not self.counted.model and isinstance(models, dict) and models:
                self.counted.model = str(next(iter(models)))
            return f"[gemini] {e.get('status', 'done')}"
        return None


def reads(e: dict[str, Any] | None, text: str, now: float) -> Sign | None:
    """Gemini CLI: each refused attempt on stderr ("Attempt 1 failed: Resource has been
    exhausted (e.g. check quota).", then "Suggested retry after 30s.. Retrying after 32347ms"),
    "When using Gemini API, you must specify the GEMINI_API_KEY environment variable." (exit
    41), and the stream's `result` with `status: error` and the API error's message."""
    if e is None:
        m = _RETRY.search(text)
        if m is not None:  # the delay of the attempt before: the kind comes from that line
            return Sign(End.RATE_LIMITED, text.strip()[:300],
                        int(now + float(m.group(1)) + 0.999), aside=True)
        s = b.plain_reads(e, text, now)
        if s is not None and _STATUS.match(text):  # `  status: 503` under a stack trace
            return Sign(s.end, s.line, s.reset, s.window, s.final, aside=True)
        return s
    kind = e.get("type")
    if kind == "error" or (kind == "result" and e.get("status") == "error"):
        message = str(b.table(e, "error").get("message") or e.get("message") or "")
        s = faults.text_sign(message, now) or Sign(End.AGENT_ERROR, message[:300] or "error")
        return Sign(s.end, s.line, s.reset, s.window, final=kind == "result")
    return None


def logged_in(env: Mapping[str, str], read: Callable[[str], str | None]) -> str | None:
    """An API key or Vertex AI in the environment, else its Google login."""
    if b.any_env(env, "GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI",
                 "GOOGLE_APPLICATION_CREDENTIALS"):
        return None
    if read(".gemini/oauth_creds.json"):
        return None
    return "no login (no GEMINI_API_KEY, no ~/.gemini/oauth_creds.json)"


_STATUS = re.compile(r"^\s*status: \d+\s*$")
_RETRY = re.compile(r"Suggested retry after (\d+(?:\.\d+)?)s", re.I)


def _transcript(_env: Mapping[str, str], home: str, _cwd: Path) -> str:
    return os.path.join(home, ".gemini", "tmp", "<project>", "chats", "session-<time>.json")


PROFILE = Profile(
    "gemini", "gemini", (), Prompt.STDIN, wire=_wire,
    postures={
        Permissions.WORKTREE: ("--skip-trust", "--approval-mode", "auto_edit"),
        Permissions.BYPASS: ("--skip-trust", "--approval-mode", "yolo"),
        Permissions.OWN: ("--skip-trust",),
    },
    system_settings=(SETTINGS_ENV, "/etc/gemini-cli/settings.json"),
    mcp_file=".gemini/settings.json", mcp_data=mcp_data,
    stream=GeminiStream, stream_flags=("--output-format", "stream-json"),
    state=(".gemini/settings.json", ".gemini/oauth_creds.json", ".gemini/google_accounts.json",
           ".gemini/installation_id"),
    hosts=("generativelanguage.googleapis.com:443", "cloudcode-pa.googleapis.com:443",
           "oauth2.googleapis.com:443"),
    base_url_env=("GOOGLE_GEMINI_BASE_URL", "CODE_ASSIST_ENDPOINT"),
    transcript=_transcript, reads=reads, logged_in=logged_in,
    # Its fatal errors' exit codes (41 authentication, 53 the turn limit).
    exits={41: End.NOT_LOGGED_IN, 53: End.CONTEXT_LIMIT},
    login="run `gemini` and sign in, or set GEMINI_API_KEY")
