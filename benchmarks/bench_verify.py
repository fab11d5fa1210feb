"""Benchmark: `verify` throughput (state commits replayed per second) and the time the server's
pre-receive hook adds to a push. A script, not a test:

    .venv/bin/python benchmarks/bench_verify.py [--commits 3000] [--pushes 10]

Builds a history of full task lifecycles in a temporary repository through the Python API, replays
it, then pushes one state transition at a time to two bare repositories, one with the server hook
installed and one without, and prints the difference.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pygit2

from gitliza.services.api import Liza
from gitliza.core import clock
from gitliza.core.ops import Add, Claim, ClaimReview, Init, Merge, Register, Submit, Verdict
from gitliza.git.store import Store
from gitliza.hooks.install import install
from gitliza.services.verify.engine import verify

SHA = "a" * 40


def history(path: Path, transitions: int) -> Store:
    """A board with `transitions` state commits: full task lifecycles, six commits each (also used
    by tests/services/test_verify.py)."""
    pygit2.init_repository(str(path))
    t = [clock.to_epoch("2025-01-01T00:00:00Z")]

    def now() -> str:
        t[0] += 1
        return clock.from_epoch(t[0])
    human, coder, rev = (Liza.open(path, agent=a, now=now) for a in ("human", "coder-1", "rev-1"))
    human.do(Init, goal="bench")
    human.do(Register, agent="coder-1", role="coder")
    human.do(Register, agent="rev-1", role="code_reviewer")
    n = 3
    while n < transitions:
        tid = f"task-{n}"
        human.do(Add, task=tid, description="d", spec_ref="s", done_when="w", scope="x", ready=True)
        coder.do(Claim, task=tid, worktree=f".worktrees/{tid}", base_commit=SHA)
        coder.do(Submit, task=tid, commit=SHA)
        rev.do(ClaimReview, task=tid)
        rev.do(Verdict, task=tid, verdict="approve", commit=SHA)
        rev.do(Merge, task=tid, result="merged", merge_commit=SHA)
        n += 6
    return human.store


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def push_times(src: Path, bare: Path, pushes: int) -> list[float]:
    """Push refs/liza/state~<k> for k = pushes-1 .. 0: one new state commit per push."""
    out = []
    for k in range(pushes - 1, -1, -1):
        started = time.perf_counter()
        git(src, "push", "-q", str(bare), f"refs/liza/state~{k}:refs/liza/state")
        out.append(time.perf_counter() - started)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=3000)
    ap.add_argument("--pushes", type=int, default=10)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        store = history(root / "src", args.commits)
        print(f"built {args.commits} state commits in {time.perf_counter() - started:.1f}s")
        rates = []
        for _ in range(3):
            report = verify(store, progress=False)
            rates.append(report.rate)
        print(f"verify: {report.commits} commits, best {max(rates):.0f} commits/s "
              f"(runs: {', '.join(f'{r:.0f}' for r in rates)})")

        src = root / "src"
        timings = {}
        for name, hooked in (("plain", False), ("hooked", True)):
            bare = root / f"{name}.git"
            git(root, "init", "-q", "--bare", str(bare))
            if hooked:
                install(bare, server=True, python=sys.executable)
            # Seed the remote with everything but the last `pushes` commits.
            git(src, "push", "-q", str(bare), f"refs/liza/state~{args.pushes}:refs/liza/state")
            timings[name] = push_times(src, bare, args.pushes)
        bare_ms, hook_ms = (statistics.median(timings[k]) * 1000 for k in ("plain", "hooked"))
        print(f"push of one state commit: {bare_ms:.0f} ms without the server hook, "
              f"{hook_ms:.0f} ms with it: the hook adds {hook_ms - bare_ms:.0f} ms "
              f"(median of {args.pushes})")
        bare = root / "full.git"
        git(root, "init", "-q", "--bare", str(bare))
        install(bare, server=True, python=sys.executable)
        started = time.perf_counter()
        git(src, "push", "-q", str(bare), "refs/liza/state:refs/liza/state")
        print(f"first push of the whole history ({args.commits} commits, replayed by the hook): "
              f"{time.perf_counter() - started:.2f}s")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("GIT_CONFIG_NOSYSTEM", "1")
    sys.exit(main())
