"""A scripted model server on 127.0.0.1 that the real agent CLIs talk to instead of a vendor API.

Speaks, with streaming (server-sent events) where the CLI asks for it:
- Anthropic Messages (`POST /v1/messages`, `/v1/messages/count_tokens`, `GET /v1/models`):
  Claude Code;
- OpenAI Responses (`POST /v1/responses`, `GET /v1/models`): Codex;
- Gemini (`POST /v1beta/models/M:generateContent`, `:streamGenerateContent?alt=sse`,
  `:countTokens`): Gemini CLI;
- Mistral chat completions (`POST /v1/chat/completions`, `GET /v1/models`): Mistral Vibe.

Each request is parsed into a `brain.Conversation`; the scripted role (brain.py) picks the next
step and it is answered in the CLI's own tool vocabulary, found from the tools the request offers
(Claude `Bash`/`Write`, Codex `shell`/`exec_command`/`apply_patch`, Gemini
`run_shell_command`/`write_file`, Vibe `bash`/`write_file`; gitliza's MCP tools by their suffix,
whatever prefix the CLI gives them). Every request is kept in `Server.log` (and appended to a
JSONL file) so a test can assert what the CLI sent: the prompt, the tools, the tool results.

The server is also the agents' HTTP(S) proxy (tests set HTTPS_PROXY to it): a CONNECT or an
absolute-URI request is refused with 403 and recorded in `Server.outbound`, so no test reaches the
internet through a proxy-aware client, and the tests see any attempt.

    python -m tests.agentcli.modelserver [--port N] [--log FILE]    # by hand (see NOTES)
"""
from __future__ import annotations

import argparse
import itertools
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterable
from urllib.parse import parse_qs, urlsplit

from tests.agentcli import brain
from tests.agentcli.brain import (Board, Call, Conversation, Discover, Final, Policy, Program,
                                  Read, Shell, Step, Wait, Write)

MODEL = "liza-scripted"


@dataclass
class Entry:
    """One request the server answered."""

    n: int
    dialect: str
    method: str
    path: str
    body: Any
    headers: dict[str, str]
    conv: Conversation | None = None
    role: str | None = None
    answer: Any = None  # what the scripted model decided: (tool name, args) or the final text
    side: bool = False  # not a turn of the gitliza conversation (a title, a JSON side question)
    # The tokens this answer reported (input, output, cached; input includes cached): known
    # and different per answer, so a test can check that the usage recorded on the board is
    # exactly what the server served (tests/agentcli/test_usage.py).
    usage: tuple[int, int, int] | None = None
    t: float = field(default_factory=time.time)

    @property
    def prompt(self) -> str | None:
        return self.conv.prompt if self.conv else None

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "t": self.t, "dialect": self.dialect, "method": self.method,
                "path": self.path,
                "role": self.role, "side": self.side, "answer": self.answer,
                "calls": [c.__dict__ for c in self.conv.calls] if self.conv else None,
                "tools": sorted(self.conv.tools) if self.conv else None,
                "body": self.body}


# -- tool vocabulary ------------------------------------------------------------------------------

SHELL_TOOLS = ("Bash", "run_shell_command", "bash", "exec_command", "shell_command", "shell")
WRITE_TOOLS = ("Write", "write_file")
READ_TOOLS = ("Read", "read_file")
PATH_KEYS = ("file_path", "path", "absolute_path")


def props(decl: dict[str, Any]) -> dict[str, Any]:
    """The JSON-schema properties of a tool declaration, whatever the dialect calls the schema."""
    for k in ("input_schema", "parameters", "parametersJsonSchema", "inputSchema"):
        s = decl.get(k)
        if isinstance(s, dict):
            p = s.get("properties")
            return p if isinstance(p, dict) else {}
    fn = decl.get("function")
    return props(fn) if isinstance(fn, dict) else {}


def mcp_tool(tools: dict[str, Any], op: str) -> str | None:
    """gitliza's MCP tool `op` as this CLI names it (`mcp__gitliza__submit`, `gitliza__submit`,
    `gitliza_submit`, `submit` ...)."""
    pat = re.compile(rf"(?:^|.*gitliza[_.:-]+){re.escape(op)}$")
    hits = [n for n in tools if pat.fullmatch(n)]
    hits.sort(key=lambda n: ("gitliza" not in n, len(n)))
    return hits[0] if hits else None


def has_mcp(tools: dict[str, Any]) -> bool:
    return any("gitliza" in n for n in tools)


@dataclass(frozen=True)
class ToolCall:
    name: str
    args: dict[str, Any] | str  # a freeform tool (Codex's apply_patch) takes a string
    kind: str = "function"  # "custom": a freeform tool call (Responses API)
    namespace: str | None = None  # a Responses API namespace's tool: called by its own name


def render(step: Step, tools: dict[str, dict[str, Any]]) -> ToolCall | str:
    """The step as a call of a tool the CLI offers, or the final text."""
    if isinstance(step, Final):
        return step.text
    if isinstance(step, Wait):
        if "tool_search" in tools:
            return ToolCall("tool_search", {"query": step.query or step.server, "limit": 20},
                            kind="tool_search")
        return ToolCall("WaitForMcpServers", {"servers": [step.server]})
    if isinstance(step, Discover):
        if step.functions:
            return ToolCall(brain.SEARCH_TOOL, {"mode": "details", "query": step.query,
                                                "functions": list(step.functions)})
        return ToolCall(brain.SEARCH_TOOL, {"mode": "best_match", "query": step.query})
    if isinstance(step, Program):
        code = (f"async function main() {{\n  return await tools.{step.function}("
                f"{json.dumps(step.args)});\n}}")
        return ToolCall(brain.PROGRAM_TOOL, {"code": code})
    if isinstance(step, Board):
        name = mcp_tool(tools, step.tool)
        if name is not None:
            ns = tools[name].get("namespace")
            if ns:
                return ToolCall(str(tools[name]["name"]), dict(step.args), namespace=ns)
            return ToolCall(name, dict(step.args))
        return render(Shell(step.shell), tools)
    if isinstance(step, Read):
        for name in READ_TOOLS:
            if name in tools:
                p = props(tools[name])
                return ToolCall(name, {next((k for k in PATH_KEYS if k in p), "file_path"):
                                       step.path})
        return render(Shell(f"cat {brain.q(step.path)}"), tools)
    if isinstance(step, Write):
        for name in WRITE_TOOLS:
            if name in tools:
                p = props(tools[name])
                key = next((k for k in PATH_KEYS if k in p), "file_path")
                args: dict[str, Any] = {key: step.path, "content": step.text}
                if "overwrite" in p:
                    args["overwrite"] = True
                return ToolCall(name, args)
        if "apply_patch" in tools:
            patch = ("*** Begin Patch\n*** Add File: " + step.path + "\n" +
                     "".join(f"+{ln}\n" for ln in step.text.splitlines()) + "*** End Patch")
            decl = tools["apply_patch"]
            if decl.get("type") == "custom":
                return ToolCall("apply_patch", patch, kind="custom")
            return ToolCall("apply_patch", {"input": patch})
        body = step.text if step.text.endswith("\n") else step.text + "\n"
        return render(Shell(f"cat > {brain.q(step.path)} <<'LIZA_EOF'\n{body}LIZA_EOF"), tools)
    assert isinstance(step, Shell)
    for name in SHELL_TOOLS:
        if name in tools:
            p = props(tools[name])
            if name == "exec_command":
                return ToolCall(name, {"cmd": step.command})
            if p.get("command", {}).get("type") == "array":
                args = {"command": ["bash", "-lc", step.command]}
            else:
                args = {"command": step.command}
            if "description" in p:
                args["description"] = step.command.split("\n")[0][:60]
            return ToolCall(name, args)
    return f"I have no shell tool to run: {step.command}"


# -- dialects -------------------------------------------------------------------------------------

def _text_of(content: Any) -> list[str]:
    """Text blocks of a message content in any dialect."""
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    if isinstance(content, list):
        for b in content:
            if isinstance(b, str):
                out.append(b)
            elif isinstance(b, dict) and isinstance(b.get("text"), str) and \
                    b.get("type") in (None, "text", "input_text", "output_text"):
                out.append(b["text"])
    return out


def _args(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        v = json.loads(raw or "{}")
        return v if isinstance(v, dict) else {"input": v}
    except (TypeError, ValueError):
        return {"input": raw}


def anthropic_conv(body: dict[str, Any]) -> Conversation:
    texts = _text_of(body.get("system"))
    calls: dict[str, Call] = {}
    order: list[Call] = []
    for m in body.get("messages", []):
        content = m.get("content")
        if m.get("role") == "user":
            texts += _text_of(content)
        for b in content if isinstance(content, list) else []:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "tool_use":
                c = calls[b["id"]] = Call(b["name"], _args(b.get("input")))
                order.append(c)
            elif b.get("type") == "tool_result" and b.get("tool_use_id") in calls:
                calls[b["tool_use_id"]].result = brain.results_text(b.get("content"))
    tools = {t["name"]: t for t in body.get("tools", []) if "name" in t}
    return Conversation(texts, order, tools)


def responses_conv(body: dict[str, Any]) -> Conversation:
    texts = _text_of(body.get("instructions"))
    calls: dict[str, Call] = {}
    order: list[Call] = []
    tools: dict[str, dict[str, Any]] = {}
    for t in body.get("tools", []):
        _add_tool(tools, t)
    items = body.get("input", [])
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    for it in items:
        kind = it.get("type", "message")
        if kind == "message" and it.get("role") in ("user", "developer", "system"):
            texts += _text_of(it.get("content"))
        elif kind == "tool_search_output":
            for t in it.get("tools", []):
                _add_tool(tools, t)
            if it.get("call_id") in calls:
                calls[it["call_id"]].result = json.dumps(it.get("tools", []))[:2000]
        elif kind in ("function_call", "custom_tool_call", "local_shell_call",
                      "tool_search_call"):
            raw = it.get("arguments", it.get("input", it.get("action")))
            name = it.get("name") or ("tool_search" if kind == "tool_search_call" else kind)
            if it.get("namespace"):
                name = f"{it['namespace']}__{name}"
            c = calls[it.get("call_id", "")] = Call(name, _args(raw))
            order.append(c)
        elif kind.endswith("_output") and it.get("call_id") in calls:
            calls[it["call_id"]].result = brain.results_text(it.get("output"))
    return Conversation(texts, order, tools)


def _add_tool(tools: dict[str, dict[str, Any]], t: dict[str, Any]) -> None:
    """A Responses API tool; a namespace's tools as `namespace__tool`, and by their own name."""
    name = t.get("name") or t.get("type")
    if name:
        tools[name] = t
    for sub in t.get("tools", []) if t.get("type") == "namespace" else []:
        tools[f"{t.get('name')}__{sub.get('name')}"] = {**sub, "namespace": t.get("name")}


def gemini_conv(body: dict[str, Any]) -> Conversation:
    sys_ = body.get("systemInstruction") or body.get("system_instruction") or {}
    texts = [p["text"] for p in sys_.get("parts", []) if isinstance(p.get("text"), str)]
    order: list[Call] = []
    pending: list[Call] = []
    for c in body.get("contents", []):
        for p in c.get("parts", []):
            if "text" in p and c.get("role", "user") == "user" and not p.get("thought"):
                texts.append(p["text"])
            if "functionCall" in p:
                fc = p["functionCall"]
                call = Call(fc.get("name", ""), _args(fc.get("args")))
                order.append(call)
                pending.append(call)
            if "functionResponse" in p:
                fr = p["functionResponse"]
                match = next((x for x in pending if x.name == fr.get("name")), None)
                if match is not None:
                    pending.remove(match)
                    match.result = brain.results_text(fr.get("response"))
    tools: dict[str, dict[str, Any]] = {}
    for t in body.get("tools", []):
        for d in t.get("functionDeclarations", t.get("function_declarations", [])):
            tools[d["name"]] = d
    return Conversation(texts, order, tools)


def chat_conv(body: dict[str, Any]) -> Conversation:
    texts: list[str] = []
    calls: dict[str, Call] = {}
    order: list[Call] = []
    for m in body.get("messages", []):
        role = m.get("role")
        if role in ("system", "user"):
            texts += _text_of(m.get("content"))
        for tc in m.get("tool_calls") or []:
            fn = tc.get("function", {})
            c = calls[tc.get("id", "")] = Call(fn.get("name", ""), _args(fn.get("arguments")))
            order.append(c)
        if role == "tool" and m.get("tool_call_id") in calls:
            calls[m["tool_call_id"]].result = brain.results_text(m.get("content"))
    tools = {t["function"]["name"]: t["function"] for t in body.get("tools") or []
             if "function" in t}
    return Conversation(texts, order, tools)


_ids = itertools.count(1)


def new_id(prefix: str) -> str:
    return f"{prefix}{next(_ids):06d}"


def sse(events: Iterable[tuple[str | None, Any]]) -> bytes:
    out = []
    for name, data in events:
        line = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {line}\n\n")
    return "".join(out).encode()


def tokens(e: Entry) -> tuple[int, int, int]:
    """The tokens answer `e` reports (input with cached included, output, cached), recorded."""
    e.usage = (1000 + 10 * e.n, 20 + e.n % 13, 100 + e.n % 7)
    return e.usage


def anthropic_answer(ans: ToolCall | str, model: str, stream: bool,
                     tok: tuple[int, int, int] = (100, 20, 0)) -> tuple[str, bytes]:
    # Anthropic's input_tokens leaves out the cache reads.
    USAGE_A = {"input_tokens": tok[0] - tok[2], "output_tokens": tok[1],
               "cache_creation_input_tokens": 0, "cache_read_input_tokens": tok[2]}
    mid = new_id("msg_")
    if isinstance(ans, str):
        block: dict[str, Any] = {"type": "text", "text": ans}
        stop = "end_turn"
    else:
        block = {"type": "tool_use", "id": new_id("toolu_"), "name": ans.name, "input": ans.args}
        stop = "tool_use"
    if not stream:
        msg = {"id": mid, "type": "message", "role": "assistant", "model": model,
               "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": USAGE_A}
        return "application/json", json.dumps(msg).encode()
    start = {"id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
             "stop_reason": None, "stop_sequence": None, "usage": {**USAGE_A, "output_tokens": 1}}
    if block["type"] == "text":
        first = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    else:
        first = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    return "text/event-stream", sse([
        ("message_start", {"type": "message_start", "message": start}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": first}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop,
                                                             "stop_sequence": None},
                           "usage": {"output_tokens": tok[1]}}),
        ("message_stop", {"type": "message_stop"})])


def responses_answer(ans: ToolCall | str, model: str, stream: bool,
                     tok: tuple[int, int, int] = (100, 20, 0)) -> tuple[str, bytes]:
    rid = new_id("resp_")
    if isinstance(ans, str):
        item: dict[str, Any] = {"type": "message", "id": new_id("msg_"), "role": "assistant",
                                "status": "completed",
                                "content": [{"type": "output_text", "text": ans,
                                             "annotations": []}]}
    elif ans.kind == "tool_search":
        item = {"type": "tool_search_call", "id": new_id("ts_"), "call_id": new_id("call_"),
                "execution": "client", "arguments": ans.args, "status": "completed"}
    elif ans.kind == "custom":
        item = {"type": "custom_tool_call", "id": new_id("ctc_"), "call_id": new_id("call_"),
                "name": ans.name, "input": ans.args, "status": "completed"}
    else:
        item = {"type": "function_call", "id": new_id("fc_"), "call_id": new_id("call_"),
                "name": ans.name, "arguments": json.dumps(ans.args), "status": "completed"}
        if ans.namespace:
            item["namespace"] = ans.namespace
    usage = {"input_tokens": tok[0], "input_tokens_details": {"cached_tokens": tok[2]},
             "output_tokens": tok[1], "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": tok[0] + tok[1]}
    base = {"id": rid, "object": "response", "created_at": int(time.time()), "model": model}
    done = {**base, "status": "completed", "output": [item], "usage": usage}
    if not stream:
        return "application/json", json.dumps(done).encode()
    events: list[tuple[str | None, Any]] = [
        ("response.created", {"type": "response.created", "sequence_number": 0,
                              "response": {**base, "status": "in_progress", "output": []}}),
        ("response.output_item.added", {"type": "response.output_item.added",
                                        "sequence_number": 1, "output_index": 0,
                                        "item": item}),
    ]
    if item["type"] == "message":
        events.append(("response.output_text.delta",
                       {"type": "response.output_text.delta", "sequence_number": 2,
                        "item_id": item["id"], "output_index": 0, "content_index": 0,
                        "delta": ans}))
    events += [
        ("response.output_item.done", {"type": "response.output_item.done",
                                       "sequence_number": 3, "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "sequence_number": 4,
                                "response": done})]
    return "text/event-stream", sse(events)


def gemini_answer(ans: ToolCall | str | dict[str, Any], model: str,
                  stream: bool, tok: tuple[int, int, int] = (100, 20, 0)) -> tuple[str, bytes]:
    if isinstance(ans, dict):  # a JSON side answer
        part: dict[str, Any] = {"text": json.dumps(ans)}
    elif isinstance(ans, str):
        part = {"text": ans}
    else:
        part = {"functionCall": {"name": ans.name, "args": ans.args}}
    resp = {"candidates": [{"content": {"role": "model", "parts": [part]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": tok[0], "candidatesTokenCount": tok[1],
                              "cachedContentTokenCount": tok[2],
                              "totalTokenCount": tok[0] + tok[1]},
            "modelVersion": model, "responseId": new_id("gem_")}
    if not stream:
        return "application/json", json.dumps(resp).encode()
    return "text/event-stream", sse([(None, resp)])


def chat_answer(ans: ToolCall | str, model: str, stream: bool,
                tok: tuple[int, int, int] = (100, 20, 0)) -> tuple[str, bytes]:
    cid = new_id("cmpl-")
    if isinstance(ans, str):
        msg: dict[str, Any] = {"role": "assistant", "content": ans}
        finish = "stop"
    else:
        tid = "".join(c for c in new_id("T") if c.isalnum())[-9:].rjust(9, "a")
        msg = {"role": "assistant", "content": "",
               "tool_calls": [{"id": tid, "type": "function", "index": 0,
                               "function": {"name": ans.name,
                                            "arguments": json.dumps(ans.args)}}]}
        finish = "tool_calls"
    usage = {"prompt_tokens": tok[0], "completion_tokens": tok[1],
             "total_tokens": tok[0] + tok[1],
             "prompt_tokens_details": {"cached_tokens": tok[2]}}
    base = {"id": cid, "created": int(time.time()), "model": model}
    if not stream:
        return "application/json", json.dumps({
            **base, "object": "chat.completion", "usage": usage,
            "choices": [{"index": 0, "message": msg, "finish_reason": finish}]}).encode()
    chunk = {**base, "object": "chat.completion.chunk"}
    return "text/event-stream", sse([
        (None, {**chunk, "choices": [{"index": 0, "delta": msg, "finish_reason": None}]}),
        (None, {**chunk, "choices": [{"index": 0, "delta": {"content": ""},
                                      "finish_reason": finish}], "usage": usage}),
        (None, "[DONE]")])


# -- a provider in trouble -------------------------------------------------------------------------
# What each provider answers when it refuses a turn (their documented error bodies and headers):
# (status, body, extra headers) per dialect and kind. `reset` is the epoch second the limit ends.
TROUBLE_KINDS = ("rate_limit", "quota", "overloaded", "auth")


def trouble_answer(dialect: str, kind: str, retry_after: int,
                   reset: int) -> tuple[int, dict[str, Any], dict[str, str]]:
    ra = {"retry-after": str(retry_after)}
    if dialect == "anthropic":
        if kind in ("rate_limit", "quota"):
            claim = "five_hour" if kind == "rate_limit" else "seven_day"
            return 429, {"type": "error", "error": {
                "type": "rate_limit_error",
                "message": "This request would exceed your account's rate limit. "
                           "Please try again later."}}, {
                **ra, "anthropic-ratelimit-unified-status": "rejected",
                "anthropic-ratelimit-unified-reset": str(reset),
                "anthropic-ratelimit-unified-representative-claim": claim,
                "anthropic-ratelimit-unified-5h-status": "rejected",
                "anthropic-ratelimit-unified-5h-reset": str(reset)}
        if kind == "overloaded":
            return 529, {"type": "error", "error": {"type": "overloaded_error",
                                                    "message": "Overloaded"}}, {}
        return 401, {"type": "error", "error": {"type": "authentication_error",
                                                "message": "invalid x-api-key"}}, {}
    if dialect == "responses":
        if kind == "rate_limit":
            return 429, {"error": {
                "message": f"Rate limit reached for gpt-5.5 on tokens per min (TPM): Limit "
                           f"30000, Used 30000. Please try again in {retry_after}s.",
                "type": "tokens", "code": "rate_limit_exceeded", "param": None}}, {
                **ra, "x-ratelimit-reset-tokens": f"{retry_after}s",
                "x-ratelimit-remaining-tokens": "0"}
        if kind == "quota":
            return 429, {"error": {
                "message": "You exceeded your current quota, please check your plan and billing "
                           "details.", "type": "insufficient_quota", "code": "insufficient_quota",
                "param": None}}, {}
        if kind == "overloaded":
            return 503, {"error": {"message": "The server is overloaded or not ready yet.",
                                   "type": "server_error", "code": None, "param": None}}, ra
        return 401, {"error": {"message": "Incorrect API key provided: sk-liza-****. You can "
                                          "find your API key at https://platform.openai.com.",
                               "type": "invalid_request_error", "code": "invalid_api_key",
                               "param": None}}, {}
    if dialect == "gemini":
        if kind in ("rate_limit", "quota"):
            return 429, {"error": {
                "code": 429, "status": "RESOURCE_EXHAUSTED",
                "message": "You exceeded your current quota, please check your plan and billing "
                           "details." if kind == "quota" else
                           "Resource has been exhausted (e.g. check quota).",
                "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                             "retryDelay": f"{retry_after}s"}]}}, {}
        if kind == "overloaded":
            return 503, {"error": {"code": 503, "status": "UNAVAILABLE",
                                   "message": "The model is overloaded. Please try again "
                                              "later."}}, {}
        return 400, {"error": {"code": 400, "status": "INVALID_ARGUMENT",
                               "message": "API key not valid. Please pass a valid API key.",
                               "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                            "reason": "API_KEY_INVALID"}]}}, {}
    # chat (Mistral)
    if kind in ("rate_limit", "quota"):
        return 429, {"object": "error", "message": "Requests rate limit exceeded",
                     "type": "rate_limited", "param": None, "code": "1300"}, ra
    if kind == "overloaded":
        return 503, {"object": "error", "message": "Service unavailable", "type":
                     "service_unavailable", "param": None, "code": "3505"}, {}
    return 401, {"message": "Unauthorized", "request_id": "liza"}, {}


@dataclass
class Trouble:
    """The provider refuses the next `count` model turns (None: all) as `kind`."""

    kind: str
    retry_after: int = 60
    count: int | None = None
    reset_in: int | None = None  # seconds from the refusal to the limit's reset (retry_after)
    refused: int = 0
    dialect: str | None = None  # only this dialect's turns ("anthropic"): one provider in trouble


def json_for_schema(schema: Any) -> Any:
    """A minimal value that satisfies a JSON schema (Gemini CLI's JSON side questions)."""
    if not isinstance(schema, dict):
        return {}
    t = str(schema.get("type", "object")).lower()
    if "enum" in schema:
        prefer = [v for v in schema["enum"] if v in ("user", "flash")]
        return (prefer or schema["enum"])[0]
    if t in ("number", "integer") and "minimum" in schema:
        return schema["minimum"]
    if t == "object":
        return {k: json_for_schema(v) for k, v in schema.get("properties", {}).items()}
    if t == "array":
        return []
    if t in ("number", "integer"):
        return 1  # scores and counts are 1-based (Gemini CLI's router rejects 0)
    if t == "boolean":
        return False
    return "ok"


# -- the server -----------------------------------------------------------------------------------

@dataclass
class Server:
    """The scripted model server (start() it; stop() it). `policy` steers the scripted team."""

    log_file: Path | None = None
    policy: Policy = field(default_factory=Policy)
    port: int = 0
    host: str = "127.0.0.1"  # any loopback address (127.0.0.2: a host that is not forwarded)
    log: list[Entry] = field(default_factory=list)
    trouble: Trouble | None = None  # the provider in trouble (rate limits, outages, bad keys)
    outbound: list[str] = field(default_factory=list)
    _httpd: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> Server:
        server = self

        class Handler(_Handler):
            srv = server

        self._httpd = ThreadingHTTPServer((self.host, self.port), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def record(self, entry: Entry) -> None:
        with self._lock:
            self.log.append(entry)
            if self.log_file is not None:
                with self.log_file.open("a") as f:
                    f.write(json.dumps(entry.to_json(), default=str) + "\n")

    def turns(self, role: str | None = None) -> list[Entry]:
        """The requests that were turns of a gitliza conversation (of `role`)."""
        return [e for e in self.log if e.conv is not None and not e.side and e.prompt and
                (role is None or e.role == role)]

    def decide(self, conv: Conversation) -> tuple[str | None, ToolCall | str]:
        step = brain.next_step(conv, self.policy)
        role = brain.role_of(conv.prompt) if conv.prompt else None
        return role, render(step, conv.tools)


class _Handler(BaseHTTPRequestHandler):
    srv: Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    # A proxy request (HTTPS_PROXY points here): refuse and record, never forward.
    def do_CONNECT(self) -> None:
        self._note_outbound()
        self._send(403, "text/plain", b"no internet in tests\n")

    def do_GET(self) -> None:
        if self._outbound():
            return
        path = urlsplit(self.path).path
        self.srv.record(Entry(len(self.srv.log), "get", "GET", self.path, None,
                              dict(self.headers)))
        if path.endswith("/models"):
            models = [{"id": MODEL, "object": "model", "type": "model", "created": 0,
                       "owned_by": "liza", "display_name": MODEL,
                       "created_at": "2025-01-01T00:00:00Z"}]
            self._json({"object": "list", "data": models, "models": [
                {"slug": MODEL, "name": MODEL}], "has_more": False,
                "first_id": MODEL, "last_id": MODEL})
            return
        self._send(404, "application/json", b'{"error":{"message":"not found"}}')

    def do_HEAD(self) -> None:
        self._send(200, "text/plain", b"")

    def do_POST(self) -> None:
        if self._outbound():
            return
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else self._chunked()
        if self.headers.get("Content-Encoding") == "zstd":
            self._send(415, "application/json", b'{"error":"zstd"}')
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"raw": raw.decode("utf-8", "replace")}
        url = urlsplit(self.path)
        path = url.path
        stream = bool(body.get("stream")) if isinstance(body, dict) else False
        e = Entry(len(self.srv.log), "?", "POST", self.path, body, dict(self.headers))
        handler: Callable[[Entry], tuple[str, bytes]] | None = None
        if path.endswith("/messages/count_tokens"):
            e.dialect, e.side = "anthropic", True
            self.srv.record(e)
            self._json({"input_tokens": 100})
            return
        if path.endswith("/messages"):
            e.dialect, e.conv = "anthropic", anthropic_conv(body)
            model = body.get("model", MODEL)
            handler = lambda e: anthropic_answer(self._decide(e), model, stream,
                                                         tokens(e))  # noqa: E731
        elif path.endswith("/responses"):
            e.dialect, e.conv = "responses", responses_conv(body)
            model = body.get("model", MODEL)
            handler = lambda e: responses_answer(self._decide(e), model, stream,
                                                         tokens(e))  # noqa: E731
        elif ":countTokens" in path:
            e.dialect, e.side = "gemini", True
            self.srv.record(e)
            self._json({"totalTokens": 100})
            return
        elif ":generateContent" in path or ":streamGenerateContent" in path:
            e.dialect, e.conv = "gemini", gemini_conv(body)
            model = path.rsplit("/", 1)[-1].split(":")[0]
            sse_ = ":streamGenerateContent" in path and \
                parse_qs(url.query).get("alt", [""])[0] == "sse"
            cfg = body.get("generationConfig", {})
            if cfg.get("responseMimeType") == "application/json":
                e.side = True
                e.answer = json_for_schema(cfg.get("responseJsonSchema") or
                                           cfg.get("responseSchema"))
                ans = e.answer
                handler = lambda e: gemini_answer(ans, model, sse_, tokens(e))  # noqa: E731
            else:
                handler = lambda e: gemini_answer(self._decide(e), model, sse_,
                                                              tokens(e))  # noqa: E731
        elif path.endswith("/chat/completions"):
            e.dialect, e.conv = "chat", chat_conv(body)
            model = body.get("model", MODEL)
            handler = lambda e: chat_answer(self._decide(e), model, stream, tokens(e))  # noqa: E731
        if handler is None:
            self.srv.record(e)
            self._send(404, "application/json", b'{"error":{"message":"not found"}}')
            return
        if self._refuse(e):
            return
        ctype, data = handler(e)
        self.srv.record(e)
        self._send(200, ctype, data)

    def _refuse(self, e: Entry) -> bool:
        """The provider in trouble: the turn is refused as that provider refuses it."""
        t = self.srv.trouble
        with self.srv._lock:
            if t is None or (t.count is not None and t.refused >= t.count) or \
                    t.dialect not in (None, e.dialect):
                return False
            t.refused += 1
        reset = int(time.time()) + (t.reset_in if t.reset_in is not None else t.retry_after)
        code, body, headers = trouble_answer(e.dialect, t.kind, t.retry_after, reset)
        e.answer, e.side = f"refused: {code} {t.kind}", True
        self.srv.record(e)
        self._send(code, "application/json", json.dumps(body).encode(), headers)
        return True

    def _decide(self, e: Entry) -> ToolCall | str:
        assert e.conv is not None
        if e.conv.prompt is None:
            e.side = True
        e.role, ans = self.srv.decide(e.conv)
        e.answer = ans if isinstance(ans, str) else {"tool": ans.name, "args": ans.args}
        return ans

    def _outbound(self) -> bool:
        if self.path.startswith(("http://", "https://")):
            self._note_outbound()
            self._send(403, "text/plain", b"no internet in tests\n")
            return True
        return False

    def _note_outbound(self) -> None:
        self.srv.outbound.append(f"{self.command} {self.path}")
        self.srv.record(Entry(len(self.srv.log), "outbound", self.command, self.path, None,
                              dict(self.headers), side=True))

    def _chunked(self) -> bytes:
        if "chunked" not in (self.headers.get("Transfer-Encoding") or ""):
            return b""
        out = b""
        while True:
            size = int(self.rfile.readline().strip() or b"0", 16)
            if size == 0:
                self.rfile.readline()
                return out
            out += self.rfile.read(size)
            self.rfile.readline()

    def _json(self, data: Any) -> None:
        self._send(200, "application/json", json.dumps(data).encode())

    def _send(self, code: int, ctype: str, data: bytes,
              headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        if ctype == "text/event-stream":
            self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.write(data)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--log", type=Path, default=None, help="append each request here (JSONL)")
    a = ap.parse_args()
    srv = Server(log_file=a.log, port=a.port).start()
    print(f"scripted model server on {srv.url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        srv.stop()


if __name__ == "__main__":
    main()
