"""Raw JSON-RPC at `git liza mcp` (finding 6 of issue 18): every request that carries an id gets
exactly one answer, errors carry the JSON-RPC specification's codes, nothing reaches stderr as a
traceback, the server stays up, and the board moves only for the one valid call."""
from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import git
from tests.faults import harness as h

pytest.importorskip("mcp", reason="the MCP SDK (gitliza[mcp]) is not installed")
pytestmark = pytest.mark.slow

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "fuzz", "version": "0"}}}

# (what is sent, the id of the answer expected (None: none at all), its error code or "ok")
CASES: list[tuple[Any, Any, Any]] = [
    ("{not json", None, -32700),
    ("[1, 2", None, -32700),
    ('"just a string"', None, -32600),
    ("[]", None, -32600),
    ('[{"jsonrpc": "2.0", "id": 50, "method": "ping"}]', None, -32600),
    ({"jsonrpc": "1.0", "id": 1, "method": "ping"}, 1, -32600),
    ({"jsonrpc": "2.0", "id": 2}, 2, -32600),
    ({"jsonrpc": "2.0", "id": 3, "method": 7}, 3, -32600),
    ({"jsonrpc": "2.0", "id": 4.5, "method": "ping"}, None, -32600),
    ({"jsonrpc": "2.0", "id": True, "method": "ping"}, None, -32600),
    ({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": ["claim"]}, 5, -32602),
    ({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": "claim"}, 6, -32602),
    ({"jsonrpc": "2.0", "id": 7, "method": "no/such"}, 7, -32601),
    ({"jsonrpc": "2.0", "id": 8, "method": "resources/read", "params": {"uri": "liza://nope"}},
     8, -32002),
    ({"jsonrpc": "2.0", "id": 9, "method": "resources/read",
      "params": {"uri": "liza://task/none"}}, 9, -32002),
    ({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
      "params": {"name": "claim", "arguments": {"task": None}}}, 10, -32602),
    ({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": 5}}, 11, -32602),
    ({"jsonrpc": "2.0", "id": 12, "method": "resources/read", "params": {}}, 12, -32602),
    ({"jsonrpc": "2.0", "method": "notifications/whatever", "params": [1]}, None, None),
    # Hostile nesting and size (issue 26): json's parser recursed per level (RecursionError and
    # exit 4 at 1,000 deep, no answer at 500); a line is bounded before it is parsed or kept.
    ("[" * 1000 + "]" * 1000, None, -32600),
    ('{"jsonrpc": "2.0", "id": 14, "method": "ping", "params": {"a": ' + "[" * 500 + "]" * 500
     + "}}", None, -32600),
    ('{"jsonrpc": "2.0", "id": 15, "method": "ping", "params": {"a": "' + "x" * (2 << 20)
     + '"}}', None, -32600),
    # Brackets inside strings are text: a deep-looking but flat message is answered.
    ({"jsonrpc": "2.0", "id": 16, "method": "ping", "params": {"a": "[{" * 200}}, 16, "ok"),
    ({"jsonrpc": "2.0", "id": "s", "method": "ping"}, "s", "ok"),
    ({"jsonrpc": "2.0", "id": 13, "method": "tools/call",
      "params": {"name": "claim", "arguments": {"task": "t1"}}}, 13, "ok"),
]


def test_raw_json_rpc_gets_the_specifications_codes(repo: Path) -> None:
    h.board_with(repo, ("t1",))
    env = h.cli_env("c1")
    proc = subprocess.Popen([sys.executable, "-m", "gitliza", "mcp"], cwd=repo, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

    def send(msg: Any) -> None:
        assert proc.stdin is not None
        proc.stdin.write((msg if isinstance(msg, str) else json.dumps(msg)).encode() + b"\n")
        proc.stdin.flush()

    def answers(wait: float) -> list[dict[str, Any]]:
        assert proc.stdout is not None
        out = []
        end = time.monotonic() + wait
        while time.monotonic() < end:
            poller = select.poll()  # select() refuses a descriptor past 1023
            poller.register(proc.stdout, select.POLLIN)
            if not poller.poll(max(0.0, end - time.monotonic()) * 1000):
                break
            line = proc.stdout.readline()
            if not line:
                break
            out.append(json.loads(line))
            end = time.monotonic() + 2.0  # more may follow closely
        return out

    before = git(repo, "rev-parse", "refs/liza/state")
    try:
        send(INIT)
        assert answers(60)[0]["id"] == 0
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        got: list[dict[str, Any]] = []
        for msg, _id, _code in CASES:
            send(msg)
        got = answers(30)
        alive = proc.poll() is None
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)
    errors = proc.stderr.read().decode()
    by_id: dict[Any, list[dict[str, Any]]] = {}
    for a in got:
        by_id.setdefault(json.dumps(a.get("id")), []).append(a)
    expected_null = [c for _m, i, c in CASES if i is None and c is not None]
    nulls = by_id.pop("null", [])
    assert sorted(a["error"]["code"] for a in nulls) == sorted(expected_null), nulls
    for msg, id_, code in CASES:
        if id_ is None:
            continue
        mine = by_id.pop(json.dumps(id_), [])
        assert len(mine) == 1, (msg, mine)
        if code == "ok":
            assert "result" in mine[0] and not mine[0]["result"].get("isError"), mine[0]
        else:
            assert mine[0]["error"]["code"] == code, (msg, mine[0])
    assert not by_id, by_id  # nothing answered twice, nothing unasked
    assert alive
    assert "Traceback" not in errors, errors[-2000:]
    log = git(repo, "log", "--format=%s", f"{before}..refs/liza/state")
    assert len(log.splitlines()) == 1 and "claim" in log  # only the one valid claim
    h.report(f"mcp fuzz: {len(CASES)} raw messages, {len(got)} answers, "
             f"{len(expected_null) + sum(1 for _m, i, _c in CASES if i is not None)} expected")
    assert os.path.isdir(repo / ".worktrees" / "t1")
