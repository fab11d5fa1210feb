"""Benchmark: what checking fetched state commits costs a sync (gitliza/services/adopt.py). A script:

    .venv/bin/python benchmarks/bench_adopt.py [--first-pull 10000] [--runs 40]

1. The check of a one-op sync: the replay of the one fetched commit (verify's engine, from the
   trusted parent), on boards of 10 and 1,000 open tasks; median of --runs.
2. Per fetched op: a range of 1,000 fetched commits (notes and claims) checked at once, per op.
3. The first pull of a new clone of a board of --first-pull commits (full task lifecycles): the
   whole `pull` (fetch through git, the whole chain verified, the ref moved), beside a bare
   `git fetch` of the same ref and `verify` of the same chain, in a temporary directory.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gitliza.services.sync import engine  # noqa: E402
from gitliza.services.api import Liza  # noqa: E402
from gitliza.core import clock  # noqa: E402
from gitliza.core.ops import Add, Claim, Init, Note, Register  # noqa: E402
from gitliza.git.store import Store  # noqa: E402
from gitliza.services.verify.engine import replay  # noqa: E402
from benchutil import remote_of  # noqa: E402

SHA = "a" * 40


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def board(path: Path, tasks: int) -> Liza:
    git(path.parent, "init", "-q", "-b", "main", str(path))
    t = [clock.to_epoch("2030-01-01T00:00:00Z")]

    def now() -> str:
        t[0] += 1
        return clock.from_epoch(t[0])
    h = Liza.open(path, "human", now=now)
    h.do(Init, goal="bench")
    for i in range(200):
        h.do(Register, agent=f"c{i}", role="coder")
    for i in range(tasks):
        h.do(Add, task=f"task-{i}", description="d", spec_ref="s", done_when="d", scope="x",
             ready=True)
    return h


def one_op(tmp: Path, tasks: int, runs: int) -> float:
    h = board(tmp / f"one-{tasks}", tasks)
    store = h.store
    times = []
    for i in range(runs):
        parent = store.tip()
        h.do(Note, message=f"n{i}")
        t0 = time.perf_counter()
        replay(Store.discover(tmp / f"one-{tasks}"), store.tip(), parent)  # a fresh store: cold
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def per_op(tmp: Path, tasks: int, ops: int = 1000) -> float:
    h = board(tmp / f"range-{tasks}", tasks)
    store = h.store
    base = store.tip()
    for i in range(ops):
        if i % 5 == 0 and i // 5 < min(tasks, 200):
            k = i // 5
            Liza.open(store.repo.workdir, f"c{k}", now=h.now).do(
                Claim, task=f"task-{k}", worktree=f".worktrees/task-{k}", base_commit=SHA)
        else:
            h.do(Note, message=f"n{i}")
    t0 = time.perf_counter()
    rep = replay(Store.discover(tmp / f"range-{tasks}"), store.tip(), base)
    return (time.perf_counter() - t0) / rep.commits


def first_pull(tmp: Path, commits: int) -> dict[str, float]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_verify import history
    src = tmp / "history"
    store = history(src, commits)
    n = sum(1 for _ in store.history())
    bare = tmp / "remote.git"
    git(tmp, "init", "-q", "--bare", str(bare))
    git(src, "push", "-q", str(bare), "refs/liza/state:refs/liza/state")
    out: dict[str, float] = {"commits": float(n)}
    fresh = tmp / "fresh"
    git(tmp, "init", "-q", str(fresh))
    git(fresh, "remote", "add", "origin", str(bare))
    t0 = time.perf_counter()
    rep = engine.pull(Store.discover(fresh), remote_of(Store.discover(fresh), "origin"))
    out["pull"] = time.perf_counter() - t0
    out["verified"] = float(rep.verified)
    floor = tmp / "floor"
    git(tmp, "init", "-q", str(floor))
    t0 = time.perf_counter()
    git(floor, "fetch", "-q", str(bare), "refs/liza/state:refs/liza/state")
    out["git_fetch"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    replay(Store.discover(floor), Store.discover(floor).tip(), None)
    out["verify"] = time.perf_counter() - t0
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--first-pull", type=int, default=10_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for tasks in (10, 1000):
            print(f"one-op sync check, {tasks:,} open tasks: "
                  f"{one_op(tmp, tasks, args.runs) * 1e3:.2f} ms (median of {args.runs})",
                  flush=True)
        for tasks in (10, 1000):
            print(f"per fetched op (1,000 fetched at once), {tasks:,} open tasks: "
                  f"{per_op(tmp, tasks) * 1e3:.2f} ms", flush=True)
        if args.first_pull:
            fp = first_pull(tmp, args.first_pull)
            print(f"first pull of a {fp['commits']:,.0f}-commit board: {fp['pull']:.2f} s "
                  f"({fp['verified']:,.0f} commits verified); git fetch alone "
                  f"{fp['git_fetch']:.2f} s, verify alone {fp['verify']:.2f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
