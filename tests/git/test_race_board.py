"""Real processes racing on one board through the CLI."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import commit_specs, git

BIN = str(Path(sys.executable).parent)

# Each worker adds its tasks one CLI call at a time; exit 2 (CONCURRENCY_CONFLICT after the spec's
# retries) is the documented "retry with backoff" answer, so the worker retries and counts it.
ADDER = r"""
import os, subprocess, sys, time, random
worker, n = sys.argv[1], int(sys.argv[2])
conflicts = 0
for i in range(n):
    while True:
        r = subprocess.run(["git", "liza", "add", f"task-{worker}-{i}", "--desc", "x"],
                           capture_output=True, text=True)
        if r.returncode == 0:
            break
        if r.returncode != 2:
            sys.exit(f"unexpected exit {r.returncode}: {r.stderr}")
        conflicts += 1
        time.sleep(random.uniform(0.01, 0.1))
print(conflicts)
"""


def _env() -> dict[str, str]:
    return dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}",
                LIZA_AGENT_ID="planner-1")


def _setup(repo: Path) -> None:
    commit_specs(repo, "s")
    for args in (["init", "race"], ["register", "planner-1", "--role", "planner"]):
        subprocess.run(["git", "liza", *args], cwd=repo, env=_env(), check=True,
                       capture_output=True)


@pytest.mark.slow
def test_eight_processes_adding_25_tasks_each(repo: Path) -> None:
    _setup(repo)
    procs = [subprocess.Popen([sys.executable, "-c", ADDER, str(w), "25"], cwd=repo, env=_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for w in range(8)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    status = json.loads(subprocess.run(["git", "liza", "status", "--json"], cwd=repo, env=_env(),
                                       capture_output=True, text=True, check=True).stdout)
    ids = sorted(t["id"] for t in status["tasks"])
    assert ids == sorted(f"task-{w}-{i}" for w in range(8) for i in range(25))
    # one linear commit per transition: 200 adds + init + register, each with one parent
    revs = git(repo, "rev-list", "--parents", "refs/liza/state").splitlines()
    assert len(revs) == 202
    assert all(len(r.split()) == 2 for r in revs[:-1])
    subjects = git(repo, "log", "--format=%(trailers:key=Liza-Task,valueonly,separator=)",
                   "refs/liza/state").split()
    assert sorted(subjects) == ids  # every task added exactly once
    assert git(repo, "fsck", "--strict", "--no-dangling") == ""


@pytest.mark.slow
def test_eight_processes_finalizing_one_task(repo: Path) -> None:
    _setup(repo)
    subprocess.run(["git", "liza", "add", "task-1", "--desc", "d", "--spec-ref", "s",
                    "--done-when", "w", "--scope", "x"], cwd=repo, env=_env(), check=True,
                   capture_output=True)
    procs = [subprocess.Popen(["git", "liza", "finalize", "task-1"], cwd=repo, env=_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(8)]
    results = [(p.wait(timeout=120), p.communicate()[1]) for p in procs]
    codes = sorted(c for c, _ in results)
    assert codes == [0] + [1] * 7, results
    assert all("finalize applies to DRAFT" in err for c, err in results if c == 1)
    ops = git(repo, "log", "--format=%(trailers:key=Liza-Op,valueonly,separator=)",
              "refs/liza/state").split()
    assert ops.count("finalize") == 1
