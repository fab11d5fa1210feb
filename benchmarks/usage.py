#!/usr/bin/env python3
"""What usage capture costs a supervisor per run, and what a run adds to the board (not part of
`dev.py bench`; docs/usage.md quotes its figures).

- capture: Meter.start + the pipe and its reader thread rendering a Claude stream-json run of
  EVENTS events (an assistant text, a tool call and its result per turn) + finish, per run;
- record: the run's one `usage` transition on a real repository, per run;
- growth: bytes and objects one `usage` commit adds to the object database;
- budget: the pre-launch budget check (stop_for_budget) with RUNS usage entries on the board.

Usage: python3 benchmarks/usage.py [RUNS]   (default 300)
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gitliza.core.ops import ConfigSet, Init, Register
from gitliza.core.ops.usage import RecordUsage
from gitliza.core.states import Role
from gitliza.services.api import Liza
from gitliza.team import usage

EVENTS = 60
IDENTITY = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
            "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}


def claude_run(turns: int) -> bytes:
    out = [{"type": "system", "subtype": "init", "session_id": "s", "model": "m"}]
    for i in range(turns):
        out.append({"type": "assistant", "message": {"id": f"m{i}", "content": [
            {"type": "text", "text": "thinking about it " * 20},
            {"type": "tool_use", "name": "Bash", "input": {"command": "git liza show t1"}}],
            "usage": {"input_tokens": 1000, "output_tokens": 50}}})
        out.append({"type": "user", "message": {"content": [
            {"type": "tool_result", "content": "x" * 1500}]}})
    out.append({"type": "result", "subtype": "success", "num_turns": turns, "result": "done",
                "usage": {"input_tokens": 1000 * turns, "output_tokens": 50 * turns},
                "total_cost_usd": 0.5})
    return b"".join(json.dumps(e).encode() + b"\n" for e in out)


def capture(d: Path, n: int) -> list[float]:
    data = claude_run(EVENTS // 2)
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        m = usage.Meter.start(d, f"coder-1.1.{i}", "claude", False)
        m.argv(["claude", "-p"], "claude", ("-p",))
        log = (d / f"log{i}").open("wb")
        w = m.output(log)
        assert w is not None
        w.write(data)
        w.close()
        got, _bad = m.finish()
        times.append(time.perf_counter() - t0)
        assert got.output == 50 * (EVENTS // 2)
    return times


def pack_bytes(repo: Path) -> tuple[int, int]:
    out = subprocess.run(["git", "count-objects", "-v"], cwd=repo, capture_output=True,
                         text=True, check=True).stdout
    v = dict(line.split(": ") for line in out.splitlines())
    return (int(v["size"]) + int(v["size-pack"])) * 1024, int(v["count"]) + int(v["in-pack"])


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    os.environ.update(IDENTITY)
    d = Path(tempfile.mkdtemp(prefix="usage-bench-"))
    cap = capture(d, 50)
    repo = d / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "init"], cwd=repo, check=True)
    human = Liza.open(repo, "human")
    human.do(Init, goal="bench")
    human.do(Register, agent="coder-1", role="coder")
    human.do(ConfigSet, key="budget_tokens_per_goal", value=str(10**12))
    coder = Liza.open(repo, "coder-1")
    rec, grow = [], []
    for i in range(runs):
        before = pack_bytes(repo)
        t0 = time.perf_counter()
        coder.do(RecordUsage, run_id=f"coder-1.1.{i}", cli="claude", duration=60,
                 input_tokens=30000 + i, output_tokens=1500, cached_tokens=20000,
                 cost_micro_usd=450000, cost_source="cli", model="claude-sonnet")
        rec.append(time.perf_counter() - t0)
        after = pack_bytes(repo)
        grow.append((after[0] - before[0], after[1] - before[1]))
    budget = []
    for _ in range(20):
        fresh = Liza.open(repo, "coder-1")  # a new process's view: nothing decoded yet
        t0 = time.perf_counter()
        usage.stop_for_budget(fresh, 0, Role.CODER, None, lambda _s: None)
        budget.append(time.perf_counter() - t0)
    ms = lambda xs: f"{statistics.median(xs) * 1000:.2f} ms"  # noqa: E731
    print(f"capture (a {EVENTS}-event Claude run, {len(claude_run(EVENTS // 2)):,} bytes): "
          f"{ms(cap)} per run")
    print(f"record (one usage transition): {ms(rec)} per run (median of {runs})")
    print(f"growth per run: {statistics.median(g[0] for g in grow):,.0f} bytes, "
          f"{statistics.median(g[1] for g in grow):.0f} objects (median)")
    print(f"budget check with {runs} runs on the board (fresh process view): {ms(budget)}")


if __name__ == "__main__":
    main()
