"""Teams on plans that collide (issue 37; a script, not a test): `git liza agent` supervisors as
real processes, scripted coders and one scripted reviewer, on real repositories.

    .venv/bin/python benchmarks/bench_collide.py                  # every scenario
    .venv/bin/python benchmarks/bench_collide.py --only one-file --work 1

one-file   8 tasks that each append a line to the same file, no lock scopes, 3 coders: the
           conflicts are caught before review (sent back to the coder, who merges the
           integration branch in and keeps both sides); counted: merged, blocked, failed merges
           (a merge that found a conflict), reviews per merged task, conflicts per 10 merged.
pairs      8 tasks in 4 pairs, each pair on one file, with lock scopes, 4 coders: the second of
           a pair waits for the first's lock; counted as above, and the wall time against
disjoint   the same plan on 8 disjoint files (the ideal with 4 coders: two rounds).
slow-test  `pairs` and `disjoint` with an integration test that sleeps --test seconds, merged
           one by one (merge_batch 1) and in batches of up to 4 (merge_batch 4).

Each coder run sleeps --work seconds (the "work"), so that wall times compare rounds, not the
supervisors' start-up. The reviewer approves everything.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gitliza.core import mergequeue  # noqa: E402
from gitliza.core.ops import AddTasks, Init  # noqa: E402
from gitliza.core.ops.goal import ConfigSet  # noqa: E402
from gitliza.core.ops.planning import NewTask  # noqa: E402
from gitliza.core.states import TERMINAL  # noqa: E402
from gitliza.services.api import Liza  # noqa: E402
from gitliza.services.lifecycle.integration import ensure_integration_branch  # noqa: E402

BIN = Path(sys.executable).parent
ENV = {k: v for k, v in os.environ.items() if not k.startswith("LIZA_")}
ENV.update(PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", GIT_AUTHOR_NAME="b",
           GIT_AUTHOR_EMAIL="b@b.invalid", GIT_COMMITTER_NAME="b",
           GIT_COMMITTER_EMAIL="b@b.invalid", GIT_CONFIG_NOSYSTEM="1", LIZA_SANDBOX="off")

CODER = r'''
import json, os, subprocess, sys, time
task, wt = os.environ["LIZA_TASK_ID"], os.environ["LIZA_WORKTREE"]
plan = json.load(open(sys.argv[1]))
name = plan[task]
def git(*a, check=True):
    return subprocess.run(["git", *a], cwd=wt, capture_output=True, text=True, check=check)
time.sleep(float(sys.argv[2]))  # the work
# An integration fix: merge the integration branch in, keeping both sides of a conflict.
if git("merge", "-q", "--no-edit", "integration", check=False).returncode != 0:
    p = os.path.join(wt, name)
    lines = [l for l in open(p).read().splitlines()
             if not l.startswith(("<<<<<<<", "=======", ">>>>>>>"))]
    open(p, "w").write("".join(l + "\n" for l in lines))
    git("add", name)
    git("commit", "-q", "--no-edit")
p = os.path.join(wt, name)
text = open(p).read() if os.path.exists(p) else ""
if task + "\n" not in text.splitlines(keepends=True):
    open(p, "a").write(task + "\n")
    git("add", name)
    git("commit", "-q", "-m", task)
r = subprocess.run(["git", "liza", "submit", task], cwd=wt, capture_output=True, text=True)
sys.stdout.write(r.stdout + r.stderr)
'''
REVIEWER = ('git liza verdict "$LIZA_TASK_ID" approve --commit "$LIZA_REVIEW_COMMIT" '
            '>/dev/null')


def board(root: Path, name: str, files: dict[str, str], scoped: bool,
          test_seconds: float, batch: int = 1) -> tuple[Path, Liza]:
    path = root / name
    path.mkdir()
    git = ["git", "-C", str(path)]
    subprocess.run(git + ["init", "-q", "-b", "main"], check=True, env=ENV)
    (path / "README.md").write_text("bench\n")
    (path / "spec.md").write_text("append your task's id to its file\n")
    if test_seconds:
        (path / "scripts").mkdir()
        (path / "scripts" / "integration-test.sh").write_text(
            f"#!/bin/sh\nsleep {test_seconds}\n")
        (path / "scripts" / "integration-test.sh").chmod(0o755)
    subprocess.run(git + ["add", "."], check=True, env=ENV)
    subprocess.run(git + ["commit", "-qm", "init"], check=True, env=ENV)
    liza = Liza.open(path, "human")
    liza.do(Init, goal="bench")
    for k, v in {"coder_max_wait": "3600", "heartbeat_interval": "60",
                 "lease_duration": "600", "max_launches_per_minute": "600",
                 "max_review_cycles": "10", "max_coder_iterations": "20",
                 "merge_batch": str(batch)}.items():
        liza.do(ConfigSet, key=k, value=v)
    ensure_integration_branch(liza, liza.board().config.integration_branch)
    tasks = tuple(NewTask(task=t, description=f"append {t} to {f}", spec_ref="spec.md",
                          done_when="the line is there", scope=f, ready=True,
                          lock_scope=(f,) if scoped else ())
                  for t, f in files.items())
    liza.do(AddTasks, tasks=tasks)
    (root / f"{name}.json").write_text(json.dumps(files))
    return path, liza


def supervise(path: Path, role: str, agent: str, cmd: list[str],
              log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([str(BIN / "git-liza"), "agent", role, "--", *cmd], cwd=path,
                            env=dict(ENV, LIZA_AGENT_ID=agent), stdout=log.open("wb"),
                            stderr=subprocess.STDOUT)


def run(root: Path, name: str, files: dict[str, str], coders: int, scoped: bool, work: float,
        test_seconds: float = 0, batch: int = 1, timeout: float = 600) -> dict[str, object]:
    path, liza = board(root, name, files, scoped, test_seconds, batch)
    plan = root / f"{name}.json"
    procs = [supervise(path, "coder", f"coder-{i}",
                       [sys.executable, "-c", CODER, str(plan), str(work)],
                       root / f"{name}-coder-{i}.log") for i in range(1, coders + 1)]
    procs.append(supervise(path, "code-reviewer", "reviewer-1", ["sh", "-c", REVIEWER],
                           root / f"{name}-reviewer.log"))
    t0 = time.monotonic()
    ended = False
    while time.monotonic() - t0 < timeout:
        b = liza.board()
        tasks = list(b.all_tasks())
        if tasks and all(t.status in TERMINAL or t.status == "BLOCKED" for t in tasks):
            ended = True
            break
        time.sleep(0.25)  # the harness polls; the supervisors under test block on the ref
    wall = time.monotonic() - t0
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
    b = liza.board()
    tasks = list(b.all_tasks())
    failed_merges = sum(1 for t in tasks for h in t.history
                        if h.event == "integration_failed" and h.commit is None)
    sent_back = sum(1 for t in tasks for h in t.history
                    if h.event == "integration_failed" and h.commit is not None)
    flow = mergequeue.figures(b, liza.now())
    return {"scenario": name, "coders": coders, "lock_scopes": scoped, "merge_batch": batch,
            "ended": ended,
            "wall_s": round(wall, 1),
            "merged": sum(1 for t in tasks if t.status == "MERGED"),
            "blocked": sum(1 for t in tasks if t.status == "BLOCKED"),
            "failed_merges": failed_merges, "sent_back_before_review": sent_back,
            "reviews": sum(1 for t in tasks for h in t.history
                           if h.event in ("approved", "rejected")),
            "reviews_per_merged": flow["reviews_per_merged"],
            "conflicts_per_10_merged": flow["conflicts_per_10_merged"],
            "queue_seconds_mean": flow["queue_seconds_mean"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=["one-file", "pairs", "slow-test", "batch"])
    ap.add_argument("--work", type=float, default=2.0, help="seconds each coder run works")
    ap.add_argument("--test", type=float, default=10.0, help="integration test seconds")
    args = ap.parse_args()
    one = {f"t{i}": "shared.txt" for i in range(1, 9)}
    pairs = {f"t{i}": f"pair{(i + 1) // 2}.txt" for i in range(1, 9)}
    disjoint = {f"t{i}": f"file{i}.txt" for i in range(1, 9)}
    out = []
    with tempfile.TemporaryDirectory(prefix="bench-collide-") as tmp:
        root = Path(tmp)
        if args.only in (None, "one-file"):
            out.append(run(root, "one-file", one, 3, False, args.work))
        if args.only in (None, "pairs"):
            out.append(run(root, "pairs", pairs, 4, True, args.work))
            out.append(run(root, "disjoint", disjoint, 4, True, args.work))
        if args.only in (None, "slow-test"):
            out.append(run(root, "pairs-slow-test", pairs, 4, True, args.work, args.test))
            out.append(run(root, "disjoint-slow-test", disjoint, 4, True, args.work,
                           args.test))
        if args.only in (None, "slow-test", "batch"):
            out.append(run(root, "pairs-slow-test-batch4", pairs, 4, True, args.work,
                           args.test, batch=4))
            out.append(run(root, "disjoint-slow-test-batch4", disjoint, 4, True, args.work,
                           args.test, batch=4))
        for r in out:
            print(json.dumps(r))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
