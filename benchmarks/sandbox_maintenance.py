#!/usr/bin/env python3
"""The user's git maintenance beside a sandboxed team (issue 38; not part of `dev.py bench`).

Two sandboxed coder supervisors and a sandboxed reviewer work on a stream of tasks; each coder
commits five times a task and prints every commit id it made. Beside them a loop runs what a
user's cron or IDE runs: `gc --aggressive --prune=now`, `repack -ad`, `prune`, `reflog expire
--expire=now --all`, `worktree prune`. After SECONDS the team is aborted and the run reports:

    failed   the user's maintenance commands that failed (a concurrent git's lock aside); of
             them on a live ref (refs/liza/live/*: a renewal's loose objects pruned) and other
    lost     commits a coder made that no ref of the repository reaches (the attic included)
    broken   refs naming a missing object
    merged   tasks merged during the run

Usage: python3 benchmarks/sandbox_maintenance.py [RUNS] [SECONDS]   (default 1 run of 60 s)
Run it with PYTHONPATH=<another checkout> to measure that code (the supervisors inherit it).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, os.environ.get("PYTHONPATH", "").split(os.pathsep)[0] or str(ROOT))

from tests.cli.test_board import liza  # noqa: E402
from tests.team.procs import Sup, add_task, env_for, new_board_repo, script, task_of  # noqa: E402

IDENTITY = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
            "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}
TASKS = 40
MAINTENANCE = (("gc", "--aggressive", "--prune=now", "--quiet"), ("repack", "-ad", "-q"),
               ("prune",), ("reflog", "expire", "--expire=now", "--all"), ("worktree", "prune"))
CODER = """test -n "$LIZA_TASK_ID"
for i in 1 2 3 4 5; do
  echo "$LIZA_TASK_ID $i" > "$LIZA_TASK_ID.txt"
  git add "$LIZA_TASK_ID.txt"
  git commit -q -m "implement $LIZA_TASK_ID, step $i"
  echo "COMMIT $(git rev-parse HEAD)"
done
git liza submit "$LIZA_TASK_ID"
"""
REVIEWER = """git liza verdict "$LIZA_TASK_ID" approve --commit "$LIZA_REVIEW_COMMIT"
"""
COMMIT = re.compile(r"^COMMIT ([0-9a-f]{40})$", re.M)


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True,
                          env=env_for())


def one_run(seconds: float) -> dict[str, int]:
    tmp, repo = new_board_repo("sandbox-maint-", lease_duration="30", reviewer_max_wait="600")
    for i in range(TASKS):
        add_task(repo, f"t{i}")
    coder = script(tmp, "coder.sh", CODER)
    reviewer = script(tmp, "reviewer.sh", REVIEWER)
    mode = ("--sandbox", "on")
    sups = [Sup(repo, "coder", "coder-1", *mode, "--", str(coder)),
            Sup(repo, "coder", "coder-2", *mode, "--", str(coder)),
            Sup(repo, "code-reviewer", "reviewer-1", *mode, "--", str(reviewer))]
    stop = threading.Event()
    failures: list[str] = []
    rounds = [0]

    def maintain() -> None:
        while not stop.is_set():
            for cmd in MAINTENANCE:
                r = git(repo, *cmd)
                if r.returncode != 0 and "another git process" not in r.stderr:
                    failures.append(f"git {' '.join(cmd)}: {r.stderr.strip()[:200]}")
            rounds[0] += 1

    loop = threading.Thread(target=maintain)
    loop.start()
    time.sleep(seconds)
    stop.set()
    loop.join()
    liza(repo, "abort", agent=None)
    for s in sups:
        try:
            s.wait(120)
        except subprocess.TimeoutExpired:
            s.proc.kill()
    made: set[str] = set()
    for f in list((repo / ".liza").rglob("*")) + list((repo / ".git" / "liza").rglob("*.log")):
        if f.is_file():
            try:
                made.update(COMMIT.findall(f.read_text(errors="replace")))
            except OSError:
                pass
    broken = 0
    for line in git(repo, "for-each-ref", "--format=%(refname)").stdout.split():
        if git(repo, "rev-parse", "--verify", "-q", line + "^{object}").returncode != 0:
            broken += 1
    lost = 0
    for oid in made:
        if git(repo, "cat-file", "-e", oid + "^{commit}").returncode != 0 or \
                not git(repo, "for-each-ref", "--contains", oid, "--count=1").stdout.strip():
            lost += 1
    merged = sum(1 for i in range(TASKS) if task_of(repo, f"t{i}").get("status") == "MERGED")
    for f in [f for f in failures if "refs/liza/live/" not in f][:3]:
        print("   ", f)
    if os.environ.get("BENCH_VERBOSE"):
        for s in sups:
            print("\n".join(s.lines[-15:]))
    live = sum(1 for f in failures if "refs/liza/live/" in f)
    return {"rounds": rounds[0], "failed": len(failures), "failed_live_ref": live,
            "failed_other": len(failures) - live, "commits": len(made), "lost": lost,
            "broken": broken, "merged": merged}


def main(runs: int, seconds: float) -> None:
    os.environ.update(IDENTITY)
    print(f"code: {os.environ.get('PYTHONPATH') or ROOT}")
    total = {"failed": 0, "lost": 0, "failed_other": 0}
    for n in range(runs):
        r = one_run(seconds)
        total["failed"] += r["failed"]
        total["lost"] += r["lost"]
        total["failed_other"] += r["failed_other"]
        print(f"run {n + 1}: {seconds:.0f} s, " + ", ".join(f"{k} {v}" for k, v in r.items()),
              flush=True)
    print(f"total over {runs} runs: {total['failed']} failed user commands "
          f"({total['failed_other']} not on a live ref), {total['lost']} lost commits")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1,
         float(sys.argv[2]) if len(sys.argv) > 2 else 60.0)
