"""What a finished run of the scripted team must show (shared by the agent CLI tests), and the
figures the tests measure from the model server's log."""
from __future__ import annotations

import json
import os
import re
import statistics
from pathlib import Path
from typing import Any

from tests.agentcli.brain import SIGN
from tests.agentcli.conftest import liza
from tests.agentcli.modelserver import Entry, Server
from tests.conftest import git

# What a CLI answers when it did not run a tool call (a permission that waits or is refused).
DENIALS = ("denied", "requires approval", "require approval", "not allowed", "approval callback",
           "haven't granted", "has not been granted", "blocked by", "not permitted",
           "is not a git command", "read-only file system", "operation not permitted")


def prompts_reached_byte_for_byte(repo: Path, srv: Server, strips_end: bool = False) -> list[str]:
    """Every prompt the supervisors saved, found whole in a request the CLI sent. `strips_end`:
    the CLI drops the file's final newline (Vibe's --prompt-file does), nothing else."""
    saved = sorted((repo / ".liza" / "agent-prompts").glob("*.txt"))
    assert saved, "no prompt was saved"
    texts = [t for e in srv.turns() for t in (e.conv.texts if e.conv else [])]
    want = {p.name: p.read_text() for p in saved}
    if strips_end:
        want = {n: w.rstrip("\n") for n, w in want.items()}
    missing = [n for n, w in want.items() if not any(w in t for t in texts)]
    assert not missing, f"prompts the model never saw byte for byte: {missing}"
    return [p.name for p in saved]


def tool_results(srv: Server, role: str | None = None) -> list[tuple[str, str]]:
    """(tool name, result) of every tool call the CLIs ran, from the last turn of each
    conversation (each turn repeats the earlier calls)."""
    seen: dict[tuple[str, str, str], None] = {}
    for e in srv.turns(role):
        assert e.conv is not None
        for c in e.conv.calls:
            seen[(c.name, json.dumps(c.args, sort_keys=True), c.result)] = None
    return [(name, result) for name, _args, result in seen]


def denials(srv: Server) -> list[str]:
    return [f"{name}: {result[:300]}" for name, result in tool_results(srv)
            if any(d in result.lower() for d in DENIALS)]


def check_team_result(repo: Path, env: dict[str, str], srv: Server, label: str) -> dict[str, Any]:
    """The goal is COMPLETED, both tasks MERGED with their files on the integration branch, the
    first draft of `hello` was rejected once with a blocker and the fix approved, and `git liza
    verify` accepts the whole history."""
    status = json.loads(liza(repo, env, "status", "--json").stdout)
    assert status["goal"]["status"] == "COMPLETED", status["goal"]
    moves = [(e["op"], e["task"], e["from"], e["to"])
             for e in json.loads(liza(repo, env, "log", "--json").stdout)]
    for task in ("hello", "bye"):
        assert ("merge", task, "APPROVED", "MERGED") in moves, moves[:40]
    assert moves.count(("verdict", "hello", "READY_FOR_REVIEW", "REJECTED")) == 1, moves[:40]
    assert moves.count(("verdict", "hello", "READY_FOR_REVIEW", "APPROVED")) == 1, moves[:40]
    assert ("verdict", "bye", "READY_FOR_REVIEW", "REJECTED") not in moves
    assert git(repo, "show", "integration:hello.txt") == f"Hello, World!\n{SIGN}"
    assert git(repo, "show", "integration:bye.txt") == f"Goodbye!\n{SIGN}"
    coder_prompts = [e.prompt or "" for e in srv.turns("coder")]
    assert any("PRIOR REJECTION FEEDBACK" in p and f"`{SIGN}` is missing" in p
               for p in coder_prompts), "the coder never saw the reviewer's blocker"
    verify = liza(repo, env, "verify")
    assert verify.stdout.startswith("verified "), verify.stdout
    prompts_reached_byte_for_byte(repo, srv, strips_end=label.startswith("mistral"))
    assert srv.outbound == [], f"a CLI tried to reach the internet: {srv.outbound}"
    return metrics(srv, label)


def metrics(srv: Server, label: str) -> dict[str, Any]:
    """Model turns, agent runs, and the round trip of a tool call (from the model's answer to the
    CLI's next request carrying the result) for gitliza's MCP tools and for shell commands."""
    turns = srv.turns()
    by_conv: dict[str, list[Entry]] = {}
    for e in turns:
        by_conv.setdefault(e.prompt or "", []).append(e)
    rtt: dict[str, list[float]] = {"mcp": [], "shell": [], "other": []}
    for entries in by_conv.values():
        entries.sort(key=lambda e: e.t)
        for a, b in zip(entries, entries[1:]):
            ans = a.answer if isinstance(a.answer, dict) else None
            if ans is None:
                continue
            name = str(ans.get("tool"))
            program = name == "run_typescript" and "gitliza" in json.dumps(ans.get("args"))
            kind = "mcp" if "gitliza" in name or name in ("submit", "verdict", "add", "show") \
                or program \
                else "shell" if "git liza" in json.dumps(ans.get("args")) else "other"
            rtt[kind].append(b.t - a.t)
    out = {"run": label, "turns": len(turns), "runs": len(by_conv),
           **{f"{k}_calls": len(v) for k, v in rtt.items()},
           **{f"{k}_median_s": round(statistics.median(v), 3) for k, v in rtt.items() if v}}
    sink = os.environ.get("GITLIZA_AGENTCLI_METRICS")
    if sink:
        with open(sink, "a") as f:
            f.write(json.dumps(out) + "\n")
    return out


def mcp_used(srv: Server, role: str, op: str) -> bool:
    """Whether `role` called gitliza's MCP tool `op`: directly, or from a Vibe program."""
    def called(answer: Any) -> bool:
        if not isinstance(answer, dict):
            return False
        code = answer["args"].get("code", "") if isinstance(answer.get("args"), dict) else ""
        return bool(re.search(rf"gitliza.*{op}$|^{op}$", str(answer.get("tool"))) or
                    answer.get("tool") == "run_typescript" and
                    re.search(rf"tools\.\w*gitliza\w*\.{op}\(", code))
    return any(called(e.answer) for e in srv.turns(role))
