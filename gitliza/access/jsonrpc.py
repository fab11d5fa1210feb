"""The JSON-RPC 2.0 checks of one incoming line, before the MCP SDK sees it.

The SDK drops a line it cannot read (no answer: a client waiting on that id hangs) and answers a
failing handler with code 0. Here every line that is not a well-formed request or notification
gets the error the JSON-RPC 2.0 specification names (a request with an id is always answered):

    -32700  Parse error       not JSON (the id cannot be known: null)
    -32600  Invalid Request   JSON, but not a request object (a batch, no method, a bad id...)
    -32602  Invalid params    a request whose params is not an object (MCP's params are named)

and `RESOURCE_NOT_FOUND` (-32002) is MCP's code for resources/read of an unknown URI.

A line is hostile input (an agent writes it): one longer than `MAX_LINE` characters is not read
whole (the server reads at most that much, then skips to the line's end), and one nested deeper
than `MAX_DEPTH` is never parsed. Both get -32600 with a null id, which is what JSON-RPC 2.0 says
when the id cannot be known. Python's json parser recurses per level: a line nested 1,000 deep
raised RecursionError and killed the server, and one 500 deep was never answered. No MCP message
comes near either bound (a tool's arguments are a flat object of short texts).
"""
from __future__ import annotations

import json
import re
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002

MAX_LINE = 1 << 20  # characters of one message line (a description is at most 4,000)
MAX_DEPTH = 64  # arrays and objects inside each other

# A JSON string (its brackets are text, not nesting), and a bracket outside one.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_BRACKET = re.compile(r"[\[\]{}]")


def error(id_: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": id_, "error": err}


def check_line(line: str) -> dict[str, Any] | None:
    """None when `line` is a well-formed message (a request, a notification, or a response to
    one of the server's own requests) for the SDK; else what to answer instead: an error
    response, or {} for a malformed notification (JSON-RPC never answers a notification)."""
    if not line.strip():
        return None  # blank lines between messages: nothing to answer
    if len(line.rstrip("\r\n")) > MAX_LINE:
        return error(None, INVALID_REQUEST, f"Invalid Request: a line of more than {MAX_LINE:,} "
                     "characters (not read)")
    if nesting(line) > MAX_DEPTH:
        return error(None, INVALID_REQUEST, f"Invalid Request: nested more than {MAX_DEPTH} "
                     "deep (not parsed)")
    try:
        msg = json.loads(line)
    except ValueError as e:
        return error(None, PARSE_ERROR, f"Parse error: {e}")
    if not isinstance(msg, dict):
        what = "a batch (an array)" if isinstance(msg, list) else type(msg).__name__
        return error(None, INVALID_REQUEST, f"Invalid Request: {what}, not a request object")
    id_ = msg.get("id")
    has_id = "id" in msg
    valid_id = isinstance(id_, (str, int)) and not isinstance(id_, bool)
    answer_to = id_ if valid_id else None
    if msg.get("jsonrpc") != "2.0":
        return error(answer_to, INVALID_REQUEST, "Invalid Request: jsonrpc must be \"2.0\"")
    if "method" not in msg:
        if has_id and ("result" in msg or "error" in msg):
            return None  # a response to the server's own request
        return error(answer_to, INVALID_REQUEST, "Invalid Request: no method")
    if not isinstance(msg["method"], str):
        return error(answer_to, INVALID_REQUEST, "Invalid Request: method must be a string")
    if has_id and not valid_id:
        return error(None, INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
    if "params" in msg and not isinstance(msg["params"], dict):
        if not has_id:
            return {}  # a malformed notification: never answered, and not passed on
        return error(id_, INVALID_PARAMS, "Invalid params: params must be an object (named "
                     f"parameters), got {type(msg['params']).__name__}")
    return None


def nesting(text: str) -> int:
    """How deep arrays and objects nest in `text` (JSON or not), counted without parsing: the
    brackets outside strings. Cheap for what real messages are (few brackets: not scanned)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return 0  # cannot nest deeper than the bound
    depth = most = 0
    for m in _BRACKET.finditer(_STRING.sub('""', text)):
        if m.group() in "[{":
            depth += 1
            most = max(most, depth)
        else:
            depth -= 1
    return most
