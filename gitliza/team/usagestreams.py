"""The agent CLIs' machine-readable output, read while the agent runs: each event rendered as a
readable line of the agent's log, and what it says the run used counted (gitliza/team/usage.py
uses these; docs/agents.md says per CLI what is counted).

- Claude Code, `--output-format stream-json --verbose`: the `result` event's `modelUsage` (every
  model's calls, side calls such as titles included; its `usage` where there is none) and
  `total_cost_usd` (assistant messages' usage, one per message id, if the run died before it);
  input = input_tokens + cache reads + cache writes, cached = cache reads;
- Codex, `exec --json`: every `turn.completed` event's `usage` (input includes cached input;
  no cost);
- Gemini CLI, `--output-format stream-json`: the `result` event's `stats` (input_tokens is the
  prompt, cached included; output_tokens the candidates; no cost);
- Mistral Vibe, `--output-dir DIR`: `DIR/export.json`'s `usage` and `cost_usd`, its subagents'
  added (the text output stays as it is).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable, Mapping

from gitliza.core import usage as core_usage

_SHOW = 300  # characters of a tool's input or output shown in the log


@dataclass
class Counted:
    input: int = 0
    output: int = 0
    cached: int = 0
    cost: int | None = None  # micro-dollars
    model: str | None = None

    def at_least(self, input: int, output: int, cached: int, cost: int | None = None) -> None:
        """Never less than what was counted before: a `result` event a tool forged into the CLI's
        output (any process of the agent can write there) can raise the count, never lower it
        below what the CLI emitted (issue 35)."""
        self.input, self.output = max(self.input, input), max(self.output, output)
        self.cached = max(self.cached, cached)
        if cost is not None:
            self.cost = max(self.cost or 0, cost)

    def add(self, other: Counted) -> None:
        self.input += other.input
        self.output += other.output
        self.cached += other.cached
        if other.cost is not None:
            self.cost = (self.cost or 0) + other.cost
        self.model = self.model or other.model


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0


def _cost(v: Any) -> int | None:
    if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0:
        return int((Decimal(str(v)) * core_usage.MICRO).to_integral_value())
    return None


def _table(d: Any, key: str) -> dict[str, Any]:
    v = d.get(key) if isinstance(d, dict) else None
    return v if isinstance(v, dict) else {}


def _short(v: Any) -> str:
    text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= _SHOW else text[:_SHOW] + "..."


# -- the CLIs' event streams ---------------------------------------------------------------------
class Stream:
    """One CLI's JSON lines: `line` renders an event for the log and counts what it says."""

    def __init__(self) -> None:
        self.counted = Counted()

    def line(self, event: dict[str, Any]) -> str | None:
        raise NotImplementedError


class ClaudeStream(Stream):
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
            return _blocks(m.get("content"))
        if kind == "user" and isinstance(e.get("message"), dict):
            return _blocks(e["message"].get("content"))
        if kind == "result":
            models = _table(e, "modelUsage")
            per = [m for m in models.values() if isinstance(m, dict)]
            if per:  # every model's calls (side calls such as titles too), not the main loop's
                self._count({k: sum(_int(m.get(c)) for m in per) for k, c in (
                    ("input_tokens", "inputTokens"), ("output_tokens", "outputTokens"),
                    ("cache_read_input_tokens", "cacheReadInputTokens"),
                    ("cache_creation_input_tokens", "cacheCreationInputTokens"))})
            else:
                self._count(_table(e, "usage"))
            cost = _cost(e.get("total_cost_usd"))
            if cost is not None:
                self.counted.at_least(0, 0, 0, cost)
            if not self.counted.model and models:
                self.counted.model = str(next(iter(models)))
            text = e.get("result")
            return (f"[claude] {e.get('subtype', 'result')} after {e.get('num_turns', '?')} "
                    f"turns" + (f": {text}" if isinstance(text, str) and text else ""))
        return None

    def _count(self, u: Mapping[str, Any]) -> None:
        cached = _int(u.get("cache_read_input_tokens"))
        self.counted.at_least(_int(u.get("input_tokens")) + cached
                              + _int(u.get("cache_creation_input_tokens")),
                              _int(u.get("output_tokens")), cached)

    def finish(self) -> None:
        """At least what the messages said so far (all of it for a run killed before its result
        event; a floor under a result event that says less)."""
        if not self._messages:
            return
        total: dict[str, int] = {}
        for u in self._messages.values():
            for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens",
                      "output_tokens"):
                total[k] = total.get(k, 0) + _int(u.get(k))
        self._count(total)


def _blocks(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    out = []
    for b in content:
        if not isinstance(b, dict):
            continue
        if b.get("type") == "text":
            out.append(str(b.get("text", "")))
        elif b.get("type") == "tool_use":
            out.append(f"-> {b.get('name')} {_short(b.get('input', ''))}")
        elif b.get("type") == "tool_result":
            out.append(f"<- {_short(b.get('content', ''))}")
    return "\n".join(out) if out else None


class CodexStream(Stream):
    def line(self, e: dict[str, Any]) -> str | None:
        kind = e.get("type")
        if kind == "turn.completed" and isinstance(e.get("usage"), dict):
            u = e["usage"]
            self.counted.input += _int(u.get("input_tokens"))
            self.counted.cached += _int(u.get("cached_input_tokens"))
            self.counted.output += _int(u.get("output_tokens"))
            return None
        if kind == "thread.started":
            return f"[codex] thread {e.get('thread_id', '?')}"
        if kind in ("error", "turn.failed"):
            err = _table(e, "error") or e
            return f"[codex] {kind}: {err.get('message', '')}"
        if kind == "item.completed" and isinstance(e.get("item"), dict):
            item = e["item"]
            t = item.get("type")
            if t in ("agent_message", "reasoning"):
                return str(item.get("text", ""))
            if t == "command_execution":
                return (f"$ {item.get('command')} (exit {item.get('exit_code')})\n"
                        f"{_short(item.get('aggregated_output', ''))}")
            if t == "mcp_tool_call":
                return f"-> {item.get('server')}.{item.get('tool')} ({item.get('status')})"
            if t == "file_change":
                return f"[edit] {_short(item.get('changes', ''))}"
            return f"[{t}] {_short(item)}"
        return None


class GeminiStream(Stream):
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
            return f"-> {e.get('tool_name')} {_short(e.get('parameters', ''))}"
        if kind == "tool_result":
            return f"<- {e.get('status')} {_short(e.get('output', ''))}"
        if kind == "error":
            return f"[gemini] error: {e.get('message', '')}"
        if kind == "result":
            s = _table(e, "stats")
            self.counted.at_least(_int(s.get("input_tokens")), _int(s.get("output_tokens")),
                                  _int(s.get("cached")))
            models = s.get("models")
            if not self.counted.model and isinstance(models, dict) and models:
                self.counted.model = str(next(iter(models)))
            return f"[gemini] {e.get('status', 'done')}"
        return None


STREAMS: dict[str, Callable[[], Stream]] = {"claude": ClaudeStream, "codex": CodexStream,
                                            "gemini": GeminiStream}
FLAGS: dict[str, tuple[str, ...]] = {"claude": ("--output-format", "stream-json", "--verbose"),
                                     "codex": ("--json",),
                                     "gemini": ("--output-format", "stream-json")}


def vibe_export(path: Path) -> Counted:
    """Vibe's export.json: the run's usage and cost, its subagents' added."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return Counted()
    out = Counted()
    for part in [data, *(data.get("subagents") or [])] if isinstance(data, dict) else []:
        if not isinstance(part, dict):
            continue
        u = _table(part, "usage")
        out.add(Counted(_int(u.get("input_tokens")), _int(u.get("output_tokens")),
                        _int(u.get("cached_input_tokens")), _cost(part.get("cost_usd")),
                        part.get("model") if isinstance(part.get("model"), str) else None))
    cfg = data.get("config") if isinstance(data, dict) else None
    if isinstance(cfg, dict) and isinstance(cfg.get("active_model"), str):
        out.model = cfg["active_model"]
    return out
