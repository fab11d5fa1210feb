#!/usr/bin/env python3
"""gitliza benchmarks (not part of the test suite). `python3 dev.py bench` runs them all.

    transition  one transition in-process (read tip, apply, write blobs/trees/commit, CAS the ref)
                on boards of 10, 1,000 and 10,000 live tasks; median and p90 of many runs
    cli         one `git liza add` process beside a bare `python -c "import pygit2"` process
    others      benchmarks/bench_*.py (lifecycle, verify, sync), each printing its own figures

Boards are written once with a bulk-load commit (a fixture, not a replayable op), then measured.
Each figure is given for the default temp dir (a real disk) and for /dev/shm (tmpfs) when it
exists, so that what the filesystem costs (a rename per ref update, a file per object) can be told
apart from what gitliza's code costs.
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pygit2

from gitliza.core.model import Task
from gitliza.core.ops import Add, Init, Register
from gitliza.core.states import TaskState
from gitliza.git.store import STATE_REF, Store

HERE = Path(__file__).resolve().parent
T = "2025-01-17T14:00:00Z"


def make_board(path: Path, n: int) -> Store:
    if path.exists():
        shutil.rmtree(path)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    repo = pygit2.Repository(str(path))
    store = Store(repo)
    store.transact(lambda b, t: Init(actor="human", time=t, goal="bench"), lambda: T)
    store.transact(lambda b, t: Register(actor="human", time=t, agent="planner-1",
                                         role="planner"), lambda: T)
    tip = store.tip()
    changes = {("tasks", f"task-{i}"): Task(id=f"task-{i}", description="benchmark task",
                                            status=TaskState.UNCLAIMED, created=T, spec_ref="s",
                                            done_when="w", scope="x") for i in range(n)}
    tree = store.build_tree(repo[tip].tree, changes)
    sig = pygit2.Signature("bench", "bench@liza.invalid", 0, 0)
    c = repo.create_commit(None, sig, sig, "bulk load (benchmark fixture)", tree, [tip])
    repo.lookup_reference(STATE_REF).set_target(c)
    return store


def bench_transition(root: Path, sizes: list[int], runs: int) -> list[tuple[int, float, float]]:
    out = []
    for n in sizes:
        store = make_board(root / f"board-{n}", n)
        times = []
        for i in range(runs):
            t0 = time.perf_counter()
            store.transact(lambda b, t, i=i: Add(actor="planner-1", time=t, task=f"new-{i}",
                                                 description="d"), lambda: T)
            times.append(time.perf_counter() - t0)
        times.sort()
        out.append((n, statistics.median(times) * 1000, times[int(len(times) * 0.9)] * 1000))
    return out


def _median_process(cmd: list[str], runs: int, cwd: Path, env: dict[str, str]) -> float:
    times = []
    for i in range(runs):
        argv = [a.replace("{i}", str(i)) for a in cmd]
        t0 = time.perf_counter()
        subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def bench_cli(root: Path, runs: int) -> tuple[float, float, float]:
    make_board(root / "cli", 10)
    bindir = Path(sys.executable).parent
    env = dict(os.environ, LIZA_AGENT_ID="planner-1",
               PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    bare = _median_process([sys.executable, "-c", "import pygit2"], runs, root, env)
    cli = _median_process([str(bindir / "git-liza"), "add", "cli-{i}", "--desc", "x"], runs,
                          root / "cli", env)
    status = _median_process([str(bindir / "git-liza"), "status"], runs, root / "cli", env)
    return bare, cli, status


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--runs", type=int, default=300, help="transitions per board size")
    ap.add_argument("--cli-runs", type=int, default=21)
    ap.add_argument("--only", choices=["transition", "cli", "others"], action="append")
    args = ap.parse_args()
    only = set(args.only or ["transition", "cli", "others"])
    print(f"gitliza benchmarks: python {platform.python_version()}, pygit2 {pygit2.__version__} "
          f"(libgit2 {pygit2.LIBGIT2_VERSION}), git {_git_version()}, {os.cpu_count()} cpus")
    places = [("disk", Path(tempfile.gettempdir()))]
    if Path("/dev/shm").is_dir():
        places.append(("tmpfs", Path("/dev/shm")))
    for label, base in places:
        root = Path(tempfile.mkdtemp(prefix="gitliza-bench-", dir=base))
        try:
            if "transition" in only:
                rows = bench_transition(root, [10, 1_000, 10_000], args.runs)
                small = rows[0][1]
                for n, med, p90 in rows:
                    print(f"[{label}] transition at {n:>6} tasks: median {med:.3f} ms, "
                          f"p90 {p90:.3f} ms, {med / small:.2f}x the 10-task time")
            if "cli" in only:
                bare, cli, status = bench_cli(root, args.cli_runs)
                print(f"[{label}] python -c 'import pygit2': {bare:.1f} ms; git liza add: "
                      f"{cli:.1f} ms ({cli / bare:.2f}x); git liza status: {status:.1f} ms "
                      f"({status / bare:.2f}x)")
        finally:
            shutil.rmtree(root, ignore_errors=True)
    if "others" in only:
        for script in sorted(HERE.glob("bench_*.py")):
            print(f"--- {script.name}", flush=True)
            subprocess.run([sys.executable, str(script)], check=False)
    return 0


def _git_version() -> str:
    return subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.split()[-1]


if __name__ == "__main__":
    sys.exit(main())
