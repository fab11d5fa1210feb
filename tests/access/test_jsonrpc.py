"""The bounds on one incoming MCP line (issue 26: a line nested 1,000 deep killed the server)."""
from __future__ import annotations

import json

from gitliza.access import jsonrpc


def test_nesting_counts_brackets_outside_strings_only() -> None:
    assert jsonrpc.nesting("[" * 1000 + "]" * 1000) == 1000
    assert jsonrpc.nesting("[" * 1000) == 1000  # not JSON at all: still never parsed
    flat = json.dumps({"a": "[{" * 500, "b": 'quote \\" [[[' * 100, "c": [[1]]})
    assert jsonrpc.nesting(flat) == 3


def test_a_line_past_a_bound_is_refused_unparsed_with_a_null_id() -> None:
    deep = '{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"a": ' + \
        "[" * (jsonrpc.MAX_DEPTH + 1) + "]" * (jsonrpc.MAX_DEPTH + 1) + "}}"
    at_bound = '{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"a": ' + \
        "[" * (jsonrpc.MAX_DEPTH - 2) + "]" * (jsonrpc.MAX_DEPTH - 2) + "}}"
    long = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping",
                       "params": {"a": "x" * jsonrpc.MAX_LINE}})
    for line, why in ((deep, "nested more than"), (long, "characters (not read)")):
        answer = jsonrpc.check_line(line + "\n")
        assert answer is not None and answer["id"] is None, answer
        assert answer["error"]["code"] == jsonrpc.INVALID_REQUEST and why in answer["error"]["message"]
    assert jsonrpc.check_line(at_bound + "\n") is None
