"""MCP tool-call latency and event delivery latency.

    .venv/bin/python benchmarks/bench_access.py [--rounds 40]

Builds a throw-away repository with a board (a planner, a coder, ready tasks), then times:
- `status` through MCP (the SDK's client over stdio to `git liza mcp`), the same read in process
  (`gitliza.services.views.data.status_data`), and `git liza status --json` as a process;
- `claim` the same three ways (each claim is followed by an untimed release, so every round
  claims the same task into a fresh worktree);
- events: `git liza events --follow --json` running; an op is committed in process and the time
  from the ref update (an after-commit hook, run right after the CAS) to the line read from the
  pipe is taken (an upper bound: the line may have been waiting in the pipe).
Prints median, p90 and max per operation. No assertions: figures for docs/performance.md.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio  # noqa: E402

from gitliza.services.lifecycle import claim as claiming  # noqa: E402
from gitliza.access import mcp_config  # noqa: E402
from gitliza.services.api import Liza  # noqa: E402
from gitliza.services.views import data as view  # noqa: E402
from gitliza.core.ops import Add, Note, Register  # noqa: E402
import benchutil  # noqa: E402


def show(name: str, ms: list[float]) -> float:
    return benchutil.show(name, ms, digits=2)


def build(repo: Path, tasks: int) -> None:
    repo.mkdir()
    # a ready task's spec_ref must exist
    human = benchutil.project(repo, {"spec.md": "# the spec\n"})
    human.do(Register, agent="p1", role="planner")
    human.do(Register, agent="c1", role="coder")
    planner = Liza.open(repo, "p1")
    for i in range(tasks):
        planner.do(Add, task=f"t{i}", description="d", spec_ref="spec.md", done_when="w", scope="x",
                   ready=True)


def bench_mcp(repo: Path, rounds: int) -> dict[str, float]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    spec = mcp_config.server(repo, "c1", "coder")
    params = StdioServerParameters(command=spec["command"], args=spec["args"], env=spec["env"])
    status: list[float] = []
    claim: list[float] = []

    async def main() -> None:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                await s.call_tool("status", {})  # warm: imports, caches
                for _ in range(rounds):
                    t0 = time.perf_counter()
                    r = await s.call_tool("status", {})
                    status.append((time.perf_counter() - t0) * 1000)
                    assert not r.is_error
                for _ in range(rounds):
                    t0 = time.perf_counter()
                    r = await s.call_tool("claim", {"task": "t0"})
                    claim.append((time.perf_counter() - t0) * 1000)
                    assert not r.is_error, r.content
                    r = await s.call_tool("release", {"task": "t0"})
                    assert not r.is_error, r.content
    anyio.run(main)
    return {"status": show("status via MCP (stdio round trip)", status),
            "claim": show("claim via MCP (stdio round trip)", claim)}


def bench_in_process(repo: Path, rounds: int) -> dict[str, float]:
    liza = Liza.open(repo, "c1")
    view.status_data(liza)
    status, claim = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        view.status_data(liza)
        status.append((time.perf_counter() - t0) * 1000)
    for _ in range(rounds):
        t0 = time.perf_counter()
        claiming.claim(liza, "t0")
        claim.append((time.perf_counter() - t0) * 1000)
        claiming.release(liza, "t0")
    return {"status": show("status in process (library)", status),
            "claim": show("claim in process (library)", claim)}


def bench_cli(repo: Path, rounds: int) -> dict[str, float]:
    env = {**os.environ, "LIZA_AGENT_ID": "c1"}
    cmd = [sys.executable, "-m", "gitliza"]
    status, claim = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        subprocess.run([*cmd, "status", "--json"], cwd=repo, env=env, check=True,
                       stdout=subprocess.DEVNULL)
        status.append((time.perf_counter() - t0) * 1000)
    for _ in range(rounds):
        t0 = time.perf_counter()
        subprocess.run([*cmd, "claim", "t0"], cwd=repo, env=env, check=True,
                       stdout=subprocess.DEVNULL)
        claim.append((time.perf_counter() - t0) * 1000)
        subprocess.run([*cmd, "release", "t0"], cwd=repo, env=env, check=True,
                       stdout=subprocess.DEVNULL)
    return {"status": show("status as a CLI process", status),
            "claim": show("claim as a CLI process", claim)}


def bench_events(repo: Path, rounds: int) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "gitliza", "events", "--follow", "--json",
                             "--since", "refs/liza/state"], cwd=repo, stdout=subprocess.PIPE,
                            text=True, bufsize=1)
    assert proc.stdout is not None
    planner = Liza.open(repo, "p1")
    landed: list[float] = []
    # The clock starts when the ref has moved: the after-commit hook runs right after the CAS.
    planner.after_commit.append(lambda _liza, _done: landed.append(time.perf_counter()) or None)
    lat: list[float] = []
    try:
        time.sleep(1.0)  # the follower is up and watching
        for i in range(rounds):
            done = planner.do(Note, message=f"n{i}")
            got: dict[str, Any] = json.loads(proc.stdout.readline())
            lat.append((time.perf_counter() - landed[-1]) * 1000)
            assert got["state"] == done.commit, (got, done.commit)
            time.sleep(0.05)
    finally:
        proc.terminate()
        proc.wait()
    show("events: commit -> line (--follow)", lat)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--tasks", type=int, default=50)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="gitliza-bench-access-") as tmp:
        repo = Path(tmp) / "repo"
        build(repo, args.tasks)
        mcp = bench_mcp(repo, args.rounds)
        local = bench_in_process(repo, args.rounds)
        cli = bench_cli(repo, max(5, args.rounds // 4))
        for op in ("status", "claim"):
            print(f"{op}: MCP / in process = {mcp[op] / local[op]:.2f}x, "
                  f"CLI process / MCP = {cli[op] / mcp[op]:.1f}x")
        bench_events(repo, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
