"""Governance figures: the watcher's wake latency and idle CPU, importing a 5,000-task board.

    .venv/bin/python benchmarks/bench_governance.py [--tasks 5000] [--rounds 20] [--idle 10]

- watch wake latency: a real `git liza watch --json` process; this process blocks and unblocks a
  task (library writes) and times from the ref update to the alert line (fired / resolved) read on
  the watcher's stdout. The watcher sleeps on inotify (RefWatcher), so this is the cost of a wake:
  the event, reading the board, evaluating every alarm, writing alerts.log and the line.
- watch idle CPU: the watcher's CPU time (utime + stime from /proc) over --idle seconds with no
  change on the board and no time-based threshold pending.
- import: a seed-schema state.yaml with --tasks tasks (a mix of states, terminal ones with
  histories): reading it strictly, writing the import commit, verify of the import, export.
Prints the figures; no assertions (docs/performance.md, "Governance").
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gitliza.services.api import Liza  # noqa: E402
from gitliza.core.ops import Add, Claim, Init, Register, Unblock  # noqa: E402
from gitliza.core.ops.work import Block  # noqa: E402
from benchutil import GIT_ENV, git  # noqa: E402

BIN = Path(sys.executable).parent


def repo(root: Path) -> Path:
    path = root / "repo"
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "specs").mkdir()
    (path / "specs" / "a.md").write_text("# spec\n")
    git(path, "add", "specs/a.md")
    git(path, "commit", "-q", "-m", "initial")
    git(path, "branch", "integration")  # ready tasks need their spec on it
    return path


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_watch(root: Path, rounds: int, idle: float) -> None:
    path = repo(root)
    human = Liza.open(path, sync=False)
    human.do(Init, goal="bench")
    human.do(Register, agent="planner-1", role="planner")
    human.do(Register, agent="coder-1", role="coder")
    planner, coder = Liza.open(path, "planner-1", sync=False), Liza.open(path, "coder-1", sync=False)
    for i in range(200):  # a board of some size: every wake evaluates all of it
        planner.do(Add, task=f"task-{i}", description="x", spec_ref="specs/a.md", done_when="d",
                   scope="a", ready=True)
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", **GIT_ENV)
    proc = subprocess.Popen(["git", "liza", "watch", "--json"], cwd=path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    q: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [q.put(x) for x in proc.stdout or ()], daemon=True).start()
    try:
        time.sleep(1.5)  # let it start and settle
        while not q.empty():
            q.get()
        lat: list[float] = []
        ops: list[float] = []
        for r in range(rounds):
            k = f"task-{r // 2 + 1}"
            if r % 2 == 0:
                coder.do(Claim, task=k, worktree=f".worktrees/{k}", base_commit="a" * 40)
                time.sleep(0.2)  # the claim's wake (no alarm) is over
                t0 = time.perf_counter()
                coder.do(Block, task=k, reason="bench", questions=("q?",))
            else:
                t0 = time.perf_counter()
                planner.do(Unblock, task=k)
            t1 = time.perf_counter()
            json.loads(q.get(timeout=60))
            lat.append(time.perf_counter() - t0)
            ops.append(t1 - t0)
        lat.sort()
        # From the start of the write (the ref moves inside it) to the alert line: an upper
        # bound of the wake latency; the write alone is printed beside it.
        print(f"watch wake latency (write start -> alert line), {rounds} wakes, 200 tasks: "
              f"median {statistics.median(lat) * 1000:.1f} ms, p90 "
              f"{lat[int(len(lat) * 0.9) - 1] * 1000:.1f} ms, max {lat[-1] * 1000:.1f} ms "
              f"(the write alone: median {statistics.median(ops) * 1000:.1f} ms)")
        c0 = cpu_seconds(proc.pid)
        time.sleep(idle)
        c1 = cpu_seconds(proc.pid)
        print(f"watch idle CPU: {c1 - c0:.3f} s over {idle:.0f} s "
              f"({(c1 - c0) / idle * 100:.2f} % of one core)")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def seed_yaml(n: int) -> str:
    lines = ["version: 1", "goal:", "  id: goal-1", "  description: bench",
             '  created: "2025-01-17T09:00:00Z"', "  status: IN_PROGRESS", "tasks:"]
    states = ["MERGED", "MERGED", "UNCLAIMED", "DRAFT", "ABANDONED"]
    for i in range(n):
        st = states[i % len(states)]
        lines += [f"  - id: task-{i}", f"    description: task number {i}", f"    status: {st}",
                  f"    priority: {i % 5 + 1}", "    spec_ref: specs/a.md",
                  "    done_when: it works", '    created: "2025-01-17T09:00:00Z"']
        if i and st == "UNCLAIMED":
            lines.append(f"    depends_on: [task-{i - 1}]" if states[(i - 1) % 5] == "MERGED"
                         else "    depends_on: []")
        if st == "ABANDONED":
            lines.append("    abandon_reason: not needed")
        if st == "MERGED":
            lines += ["    review_commit: " + "b" * 40, "    history:",
                      '      - { time: "2025-01-17T09:01:00Z", event: "created" }',
                      '      - { time: "2025-01-17T09:02:00Z", event: "claimed", agent: "coder-1" }',
                      '      - { time: "2025-01-17T09:03:00Z", event: "ready_for_review" }',
                      '      - { time: "2025-01-17T09:04:00Z", event: "approved", '
                      'agent: "reviewer-1" }',
                      '      - { time: "2025-01-17T09:05:00Z", event: "merged" }']
    lines += ["agents:", "  coder-1:", "    role: coder", "    status: IDLE",
              "  reviewer-1:", "    role: code_reviewer", "    status: IDLE",
              "sprint:", "  id: sprint-1", "  goal_ref: goal-1", "  status: IN_PROGRESS",
              "  timeline:", '    started: "2025-01-17T09:00:00Z"']
    return "\n".join(lines) + "\n"


def bench_import(root: Path, n: int) -> None:
    from gitliza.git.store import Store
    from gitliza.interop import genesis, seed
    from gitliza.interop.export import export
    from gitliza.services.verify.engine import verify
    path = repo(root / "imp")
    text = seed_yaml(n)
    t0 = time.perf_counter()
    s = seed.read_state(text)
    t1 = time.perf_counter()
    store = Store.discover(path)
    op = genesis.make_op(s.entities, "human", "2025-01-18T00:00:00Z",
                         genesis.sha256(text.encode()), None, 0)
    genesis.write_import(store, s.entities, op, force=False)
    t2 = time.perf_counter()
    verify(store, progress=False)
    t3 = time.perf_counter()
    export(store)
    t4 = time.perf_counter()
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", **GIT_ENV)
    (root / "state.yaml").write_text(text)
    t5 = time.perf_counter()
    subprocess.run(["git", "liza", "import", "--force", str(root / "state.yaml")], cwd=path,
                   env=env, check=True, capture_output=True)
    t6 = time.perf_counter()
    print(f"import of a {n}-task board ({len(text) / 1e6:.1f} MB of YAML): read+check "
          f"{t1 - t0:.2f} s, write the import commit {t2 - t1:.2f} s, verify {t3 - t2:.2f} s, "
          f"export {t4 - t3:.2f} s; `git liza import` end to end {t6 - t5:.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--idle", type=float, default=10.0)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        bench_watch(Path(d), a.rounds, a.idle)
        bench_import(Path(d), a.tasks)


if __name__ == "__main__":
    main()
