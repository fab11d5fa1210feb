"""The escalation webhook's latency: from a BLOCKED commit to its POST on a real receiver.

    .venv/bin/python benchmarks/bench_notify.py [--events 50] [--tasks 200]

A board of --tasks READY tasks and a receiver on 127.0.0.1 (tests/governance/receiver.py, the
tests' own). This process blocks task after task (the planner's `block`, a library write: one
state commit each) and times from the start of the write to the POST's arrival at the receiver,
for two senders:

- `watch`: a real `git liza watch` process (no team running);
- `team`: only a real `git liza team` (one reviewer supervisor with nothing to review), whose own
  watcher sends; no `watch` anywhere.

Each event's id is checked to be new (one POST per event). Prints p50/p95/max; no assertions
(docs/performance.md, "The escalation webhook").
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gitliza.core.ops import Add, ConfigSet, Init, Register  # noqa: E402
from gitliza.core.ops.work import Block  # noqa: E402
from gitliza.services.api import Liza  # noqa: E402
from bench_governance import repo  # noqa: E402
from benchutil import GIT_ENV  # noqa: E402
from tests.governance.receiver import Receiver  # noqa: E402

BIN = Path(sys.executable).parent


def board(root: Path, tasks: int, url: str) -> Path:
    path = repo(root)
    human = Liza.open(path, sync=False)
    human.do(Init, goal="bench")
    human.do(Register, agent="planner-1", role="planner")
    human.do(ConfigSet, key="escalation_webhook", value=url)
    planner = Liza.open(path, "planner-1", sync=False)
    for i in range(tasks):
        planner.do(Add, task=f"task-{i}", description="x", spec_ref="specs/a.md", done_when="d",
                   scope="a", ready=True)
    return path


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(p * len(xs) + 0.5)) - 1))]


def run(mode: str, events: int, tasks: int) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp, Receiver() as rx:
        path = board(Path(tmp), max(tasks, events), rx.url)
        env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", **GIT_ENV)
        env = {k: v for k, v in env.items() if not k.startswith("LIZA_")}
        env["LIZA_SANDBOX"] = "off"
        argv = ["git", "liza", "watch"] if mode == "watch" else \
            ["git", "liza", "team", "--planners", "0", "--coders", "0", "--reviewers", "1", "--",
             sys.executable, "-c", "pass"]
        proc = subprocess.Popen(argv, cwd=path, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        planner = Liza.open(path, "planner-1", sync=False)
        lat: list[float] = []
        try:
            time.sleep(3.0)  # let it start, register and settle
            for i in range(events):
                seen = len(rx.posts)
                t0 = time.time()
                planner.do(Block, task=f"task-{i}", reason="bench", questions=("q?",))
                posts = rx.wait_for(seen + 1, timeout=120)
                lat.append(rx.arrivals[-1] - t0)
                assert posts[-1]["task"] == f"task-{i}", posts[-1]
            assert len({p["id"] for p in rx.posts}) == len(rx.posts) == events
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        return lat


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=50)
    ap.add_argument("--tasks", type=int, default=200)
    ap.add_argument("--only", choices=["watch", "team"], action="append")
    args = ap.parse_args()
    for mode in args.only or ["watch", "team"]:
        lat = run(mode, args.events, args.tasks)
        print(f"webhook latency with only `{mode}` running (BLOCKED write start -> POST at the "
              f"receiver), {len(lat)} events, {args.tasks} tasks: p50 "
              f"{statistics.median(lat) * 1000:.0f} ms, p95 {pct(lat, 0.95) * 1000:.0f} ms, "
              f"max {max(lat) * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
