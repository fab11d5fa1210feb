"""Claude Code (`claude`), Anthropic's agent CLI: everything gitliza knows of it.

- Launch: `claude -p`, the prompt on standard input. `--permissions worktree`: acceptEdits
  (file edits inside the working directory, the worktree, go through) and an allow-list of the
  shell and gitliza's MCP tools; anything else is denied in -p mode (never asked). Works as root,
  unlike --dangerously-skip-permissions (`bypass`, which Claude refuses as root).
- MCP: `--mcp-config FILE`, the common `mcpServers` JSON (`.mcp.json` in a project).
- Usage, `--output-format stream-json --verbose`: the `result` event's `modelUsage` (every
  model's calls, side calls such as titles included; its `usage` where there is none) and
  `total_cost_usd` (assistant messages' usage, one per message id, if the run died before it);
  input = input_tokens + cache reads + cache writes, cached = cache reads.
- Sandbox: its login and settings in ~/.claude.json and ~/.claude/ (CLAUDE_CONFIG_DIR moves
  both), its API at api.anthropic.com (ANTHROPIC_BASE_URL another).
- Transcript: CLAUDE_CONFIG_DIR (~/.claude)/projects/<cwd with / . \\ : as ->/<session>.jsonl.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from gitliza.agentcli import base as b
from gitliza.agentcli.base import Context, Launch, Permissions, Profile, Prompt
from gitliza.core.agents import faults
from gitliza.core.agents.faults import End, Sign


def _wire(launch: Launch, perms: Permissions, ctx: Context, _cmd: Sequence[str]) -> Launch:
    if ctx.mcp is None:
        return launch
    path = b.run_file(ctx, "mcp.json")
    text = json.dumps(b.mcp_servers_json(ctx.mcp), indent=2)
    # `=`: --mcp-config takes several values and would swallow a following word.
    return Launch([*launch.argv, f"--mcp-config={path}"], launch.env, launch.stdin,
                  {**launch.files, path: text + "\n"}, path)


class ClaudeStream(b.Stream):
    def __init__(self) -> None:
        super().__init__()
        self._messages: dict[str, dict[str, Any]] = {}  # message id -> its usage

    def line(self, e: dict[str, Any]) -> str | None:
        kind = e.get("type")
        if kind == "system" and e.get("subtype") == "init":
            self.counted.model = e.get("model") if isinstance(e.get("model"), str) else None
            return f"[claude] session {e.get('session_id', '?')}, model {e.get('model', '?')}"
        if kind == "assistant" and isinstance(e.get("message"), dict):
            m = e["message"]
            if isinstance(m.get("usage"), dict):
                self._messages[str(m.get("id"))] = m["usage"]
                self.finish()  # counted as it streams: the budget stop reads it during the run
            return blocks(m.get("content"))
        if kind == "user" and isinstance(e.get("message"), dict):
            return blocks(e["message"].get("content"))
        if kind == "result":
            models = b.table(e, "modelUsage")
            per = [m for m in models.values() if isinstance(m, dict)]
            if per:  # every model's calls (side calls such as titles too), not the main loop's
                self._count({k: sum(b.count(m.get(c)) for m in per) for k, c in (
                    ("input_tokens", "inputTokens"), ("output_tokens", "outputTokens"),
                    ("cache_read_input_tokens", "cacheReadInputTokens"),
                    ("cache_creation_input_tokens", "cacheCreationInputTokens"))})
            else:
                self._count(b.table(e, "usage"))
            cost = b.cost(e.get("total_cost_usd"))
            if cost is not None:
                self.counted.at_least(0, 0, 0, cost)
            if not self.counted.model and models:
                self.counted.model = str(next(iter(models)))
            text = e.get("result")
            return (f"[claude] {e.get('subtype', 'result')} after {e.get('num_turns', '?')} "
                    f"turns" + (f": {text}" if isinstance(text, str) and text else ""))
        return None

    def _count(self, u: Mapping[str, Any]) -> None:
        cached = b.count(u.get("cache_read_input_tokens"))
        self.counted.at_least(b.count(u.get("input_tokens")) + cached
                              + b.count(u.get("cache_creation_input_tokens")),
                              b.count(u.get("output_tokens")), cached)

    def finish(self) -> None:
        """At least what the messages said so far (all of it for a run killed before its result
        event; a floor under a result event that says less)."""
        if not self._messages:
            return
        total: dict[str, int] = {}
        for u in self._messages.values():
            for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens",
                      "output_tokens"):
                total[k] = total.get(k, 0) + b.count(u.get(k))
        self._count(total)


def blocks(content: Any) -> str | None:
    """A message's content blocks as lines of the log."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    out = []
    for c in content:
        if not isinstance(c, dict):
            continue
        if c.get("type") == "text":
            out.append(str(c.get("text", "")))
        elif c.get("type") == "tool_use":
            out.append(f"-> {c.get('name')} {b.short(c.get('input', ''))}")
        elif c.get("type") == "tool_result":
            out.append(f"<- {b.short(c.get('content', ''))}")
    return "\n".join(out) if out else None


def reads(e: dict[str, Any] | None, text: str, now: float) -> Sign | None:
    """Claude Code's stream-json: `system/api_retry` (each retry of a refused request, with the
    HTTP status, its error word and the delay it waits: the provider's retry-after),
    `rate_limit_event` (a subscription's limit: `rejected` with `resetsAt` and its window), and
    the error `result` (`is_error`, `api_error_status`, the message: "Not logged in · Please run
    /login", "Credit balance is too low")."""
    if e is None:
        return b.plain_reads(e, text, now)
    kind = e.get("type")
    if kind == "system" and e.get("subtype") == "api_retry":
        delay = e.get("retry_delay_ms")
        reset = int(now + delay / 1000 + 0.999) if isinstance(delay, (int, float)) else None
        error = str(e.get("error") or "")
        if e.get("error_status") is None:  # no answer at all (a refused connection: "unknown")
            return Sign(End.NETWORK, f"API unreachable ({error or 'no status'}), retry "
                        f"{e.get('attempt', '?')}/{e.get('max_retries', '?')}", reset)
        return b.status_sign(e.get("error_status"), error, now, reset) or \
            faults.text_sign(error, now)
    if kind == "rate_limit_event":
        info = b.table(e, "rate_limit_info")
        if info.get("status") != "rejected":
            return None
        window = _WINDOWS.get(str(info.get("rateLimitType")), info.get("rateLimitType"))
        return Sign(End.RATE_LIMITED, f"Claude usage limit reached ({window})",
                    faults.parse_time(info.get("resetsAt")),
                    str(window) if window else None)
    if kind == "result" and e.get("is_error"):
        message = str(e.get("result") or e.get("subtype") or "error")
        s = b.status_sign(e.get("api_error_status"), message, now) or \
            faults.text_sign(message, now) or Sign(End.AGENT_ERROR, message[:300])
        return Sign(s.end, s.line, s.reset, s.window, final=True)
    return None


def logged_in(env: Mapping[str, str], read: Callable[[str], str | None]) -> str | None:
    """A key in the environment (or Bedrock/Vertex), else the OAuth login in its config dir."""
    if b.any_env(env, "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
                 "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX"):
        return None
    root = env.get("CLAUDE_CONFIG_DIR") or ".claude"
    if "accessToken" in (read(os.path.join(root, ".credentials.json")) or ""):
        return None
    return "no login (no ANTHROPIC_API_KEY, no ~/.claude/.credentials.json)"


_WINDOWS = {"five_hour": "5-hour limit", "seven_day": "weekly limit",
            "seven_day_opus": "weekly Opus limit", "seven_day_sonnet": "weekly Sonnet limit"}


def _transcript(env: Mapping[str, str], home: str, cwd: Path) -> str:
    root = env.get("CLAUDE_CONFIG_DIR") or os.path.join(home, ".claude")
    slug = "".join("-" if c in "/.\\:" else c for c in str(cwd))
    return os.path.join(root, "projects", slug, "<session>.jsonl")


PROFILE = Profile(
    "claude", "claude", ("-p",), Prompt.STDIN, wire=_wire,
    postures={
        Permissions.WORKTREE: ("--permission-mode", "acceptEdits",
                               f"--allowedTools=Bash,mcp__{b.SERVER_NAME}"),
        Permissions.BYPASS: ("--dangerously-skip-permissions",),
    },
    mcp_file=".mcp.json", mcp_data=lambda entry, _cwd: b.mcp_servers_json(entry),
    stream=ClaudeStream, stream_flags=("--output-format", "stream-json", "--verbose"),
    state=(".claude.json", ".claude/.credentials.json", ".claude/settings.json"),
    home_env=("CLAUDE_CONFIG_DIR", ".claude"),
    hosts=("api.anthropic.com:443",), base_url_env=("ANTHROPIC_BASE_URL",),
    transcript=_transcript, reads=reads, logged_in=logged_in,
    login="run `claude` then /login, or set ANTHROPIC_API_KEY")
