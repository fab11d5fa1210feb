"""Concurrent claims in real processes, and a claim killed inside its two-phase gap.

The invariant under test: no worktree without its CLAIMED task, no CLAIMED task without its
worktree, every task claimed at most once, whatever the interleaving."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from gitliza.services.api import Liza
from gitliza.core.ops import Add, Init, Register
from gitliza.git.worktrees.listing import list_task_branches, list_task_worktrees
from gitliza.services.lifecycle.integration import ensure_integration_branch
from tests.conftest import git
from tests.services.test_lifecycle import run

pytestmark = pytest.mark.slow

PROCS = 8
PER_PROC = 25
TASKS = PROCS * PER_PROC

# One worker process: claims once per coder id of its pool through the CLI entry point (exit
# codes included) without paying a process start per command; retries on exit 2 and counts.
WORKER = textwrap.dedent("""
    import contextlib, io, json, sys
    from gitliza.cli.app import main
    pool = sys.argv[1].split(",")
    claims, retries, other = [], 0, []
    for coder in pool:
        while True:
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                code = main(["claim", "--json", "--agent", coder])
            if code == 2:
                retries += 1
                continue
            if code == 0:
                claims.append(json.loads(buf.getvalue()))
            else:
                other.append(code)
            break
    print(json.dumps({"claims": claims, "retries": retries, "other": other}))
""")


def build(repo: Path, tasks: int, coders: list[str]) -> None:
    human = Liza.open(repo, "human")
    done = human.do(Init, goal="race")
    ensure_integration_branch(human, done.outcome.board.config.integration_branch)
    human.do(Register, agent="p1", role="planner")
    for c in coders:
        human.do(Register, agent=c, role="coder")
    planner = Liza.open(repo, "p1")
    for i in range(tasks):
        planner.do(Add, task=f"task-{i}", description="d", spec_ref="s", done_when="w",
                   scope="x", ready=True, priority=1 + i % 5)


def check_board_matches_disk(repo: Path) -> dict[str, str]:
    """CLAIMED tasks == worktrees == task branches; returns task -> coder."""
    liza = Liza.open(repo)
    board = liza.board()
    held = {t.id: t.assigned_to for t in board.tasks() if t.status == "CLAIMED"}
    entries = list_task_worktrees(liza.repo)
    assert {e.task_id for e in entries} == set(held)
    for e in entries:  # registered, checked out, on the task branch
        assert e.registered and e.directory_exists and (e.path / ".git").is_file()
        assert e.head_ref == f"refs/heads/liza/{e.task_id}" and e.head is not None
    assert set(list_task_branches(liza.repo)) == set(held)
    assert len(set(held.values())) == len(held)  # a coder holds one task
    return {k: str(v) for k, v in held.items()}


def test_eight_processes_claim_two_hundred_tasks(repo: Path) -> None:
    pools = [[f"coder-{p}-{i}" for i in range(PER_PROC)] for p in range(PROCS)]
    build(repo, TASKS, [c for pool in pools for c in pool])
    started = time.monotonic()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, ",".join(pool)], cwd=repo,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for pool in pools]
    results: list[dict[str, Any]] = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    claims = [c for r in results for c in r["claims"]]
    retries = sum(r["retries"] for r in results)
    print(f"\n{len(claims)} claims by {PROCS} processes in {time.monotonic() - started:.1f} s, "
          f"{retries} retries on exit 2")
    assert [r["other"] for r in results] == [[]] * PROCS
    tasks = [c["task"] for c in claims]
    assert len(tasks) == TASKS and len(set(tasks)) == TASKS  # every task claimed exactly once
    held = check_board_matches_disk(repo)
    assert held == {c["task"]: c["actor"] for c in claims}
    assert run(repo, "doctor").returncode == 0


def test_concurrent_claims_of_one_task_make_one_winner_and_one_worktree(repo: Path) -> None:
    coders = [f"c{i}" for i in range(PROCS)]
    build(repo, 1, coders)
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]}
    procs = [subprocess.Popen(["git", "liza", "claim", "task-0", "--json", "--agent", c],
                              cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for c in coders]
    codes = []
    for p in procs:
        p.communicate(timeout=120)
        codes.append(p.returncode)
    assert sorted(codes) == [0] + [1] * (PROCS - 1)  # the losers: "already claimed"
    held = check_board_matches_disk(repo)
    assert list(held) == ["task-0"] and held["task-0"] == coders[codes.index(0)]


PAUSED_MARK = "CLAIM-IN-GAP"
# The CLI's own entry point, with an observer of the claim's gap (AFTER_WORKTREE, in
# gitliza/services/lifecycle/claim.py) that says so and then holds the claim there, so the test can
# SIGKILL it between worktree and commit.
_HELD_CLAIM = f"""
import sys, time
from gitliza.services.lifecycle.claim import AFTER_WORKTREE
from gitliza.__main__ import main
def hold(task):
    sys.stderr.write("{PAUSED_MARK} " + task + "\\n"); sys.stderr.flush(); time.sleep(60)
AFTER_WORKTREE.append(hold)
sys.exit(main(sys.argv[1:]))
"""


def _claim_held_in_its_gap(repo: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", _HELD_CLAIM, *args], cwd=repo,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def test_claim_killed_between_worktree_and_commit_is_recovered_by_doctor(repo: Path) -> None:
    build(repo, 2, ["c1", "c2"])
    p = _claim_held_in_its_gap(repo, "claim", "task-0", "--agent", "c1")
    assert p.stderr is not None
    line = p.stderr.readline()  # the claim says when it sits in the gap
    assert line.startswith(PAUSED_MARK), line
    os.killpg(p.pid, signal.SIGKILL)
    p.wait(timeout=30)
    wt = repo / ".worktrees" / "task-0"
    assert wt.is_dir() and git(repo, "branch", "--list", "liza/task-0")
    t = Liza.open(repo).board().task("task-0")
    assert t is not None and t.status == "UNCLAIMED"  # the CLAIMED commit never happened

    r = run(repo, "doctor", "--json")
    assert r.returncode == 4
    (problem,) = json.loads(r.stdout)["problems"]
    assert problem["kind"] == "stray-worktree" and problem["subject"] == "task-0"
    assert problem["fixable"]
    assert run(repo, "doctor", "--fix").returncode == 0
    assert not wt.exists() and git(repo, "branch", "--list", "liza/task-0") == ""
    assert run(repo, "doctor").returncode == 0
    # And nothing stands in the way of the next claim (a claim would also have replaced it).
    assert run(repo, "claim", "task-0", "--agent", "c2").returncode == 0
    check_board_matches_disk(repo)


def test_a_new_claim_replaces_a_killed_claims_leftover(repo: Path) -> None:
    build(repo, 1, ["c1", "c2"])
    p = _claim_held_in_its_gap(repo, "claim", "--agent", "c1")
    assert p.stderr is not None and p.stderr.readline().startswith(PAUSED_MARK)
    # While the claim sits in its gap, doctor leaves the task alone (its lock is held).
    busy = json.loads(run(repo, "doctor", "--fix", "--json").stdout)
    assert busy["busy"] == ["task-0"] and busy["problems"] == []
    os.killpg(p.pid, signal.SIGKILL)
    p.wait(timeout=30)
    assert run(repo, "claim", "--agent", "c2").returncode == 0
    assert check_board_matches_disk(repo) == {"task-0": "c2"}
