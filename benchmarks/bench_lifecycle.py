"""Claim and merge latency, in-process (library) and through the CLI.

    .venv/bin/python benchmarks/bench_lifecycle.py [--tasks 200] [--rounds 30]

Builds a throw-away repository in a temp dir with a board of `--tasks` ready tasks, then times:
- claim (library): two-phase claim of the best claimable task: dry-run, worktree, CAS;
- claim (CLI): the same through `git liza claim` (process start included);
- merge (library): fast-forward merges, and merges that need a merge commit (the integration
  branch moved since the task's base); each includes the board write and the worktree removal;
- merge with an integration test (`scripts/integration-test.sh` = `exit 0`): adds a temporary
  checkout and a bash run.
Prints median, p90 and max per operation. No assertions: figures for docs/lifecycle.md.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gitliza.services.lifecycle.claim import ClaimResult, claim  # noqa: E402
from gitliza.services.lifecycle.merge import merge  # noqa: E402
from gitliza.services.api import Liza  # noqa: E402
from gitliza.core.ops import Add, ClaimReview, Register, Submit, Verdict  # noqa: E402
from benchutil import git, project, show  # noqa: E402


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def build(repo: Path, tasks: int, coders: int) -> None:
    human = project(repo)
    human.do(Register, agent="p1", role="planner")
    human.do(Register, agent="r1", role="code_reviewer")
    for i in range(coders):
        human.do(Register, agent=f"c{i}", role="coder")
    planner = Liza.open(repo, "p1")
    for i in range(tasks):
        planner.do(Add, task=f"task-{i}", description="d", spec_ref="s", done_when="w",
                   scope="x", ready=True)


def approve(repo: Path, coder: str, tid: str, files: dict[str, str]) -> None:
    """Work, submit, review and approve `tid` (claimed by `coder`) in-process."""
    wt = repo / ".worktrees" / tid
    for name, text in files.items():
        (wt / name).parent.mkdir(parents=True, exist_ok=True)
        (wt / name).write_text(text)
    git(wt, "add", ".")
    git(wt, "commit", "-q", "-m", f"work on {tid}")
    Liza.open(repo, coder).do(Submit, task=tid, commit=git(wt, "rev-parse", "HEAD"))
    reviewer = Liza.open(repo, "r1")
    reviewer.do(ClaimReview, task=tid)
    reviewer.do(Verdict, task=tid, verdict="approve", commit=git(wt, "rev-parse", "HEAD"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=30)
    args = ap.parse_args()
    rounds = min(args.rounds, args.tasks // 4)
    with tempfile.TemporaryDirectory(prefix="bench-lifecycle-") as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        t0 = time.perf_counter()
        build(repo, args.tasks, coders=3 * rounds + 10)
        print(f"board: {args.tasks} tasks (built in {time.perf_counter() - t0:.1f} s), "
              f"50-file project, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")

        claim_ms: list[float] = []
        claimed: list[tuple[str, str]] = []
        for i in range(rounds):
            liza = Liza.open(repo, f"c{i}")
            res: list[ClaimResult] = []
            claim_ms.append(timed(lambda: res.append(claim(liza))))
            claimed.append((f"c{i}", res[0].task))
        show("claim, library (best claimable)", claim_ms)

        cli_ms = []
        venv_bin = str(Path(sys.executable).parent)
        env = {**os.environ, "PATH": venv_bin + os.pathsep + os.environ["PATH"]}
        for i in range(rounds, rounds + min(rounds, 10)):
            cli_ms.append(timed(lambda: subprocess.run(
                ["git", "liza", "claim", "--agent", f"c{i}"], cwd=repo, env=env, check=True,
                capture_output=True)))
        show("claim, CLI `git liza claim` (process start)", cli_ms)

        reviewer = Liza.open(repo, "r1")
        half = len(claimed) // 2
        ff_ms, mc_ms = [], []
        for coder, tid in claimed[:half]:
            # Every task was claimed from the same base, so only the first merge can
            # fast-forward: move the branch's base first to measure a pure fast-forward.
            wt = repo / ".worktrees" / tid
            git(wt, "merge", "-q", "--ff-only", "integration")
            approve(repo, coder, tid, {f"ff/{tid}.txt": "x\n"})
            ff_ms.append(timed(lambda: merge(reviewer, tid)))
        show("merge, fast-forward", ff_ms)
        for coder, tid in claimed[half:]:
            approve(repo, coder, tid, {f"mc/{tid}.txt": "x\n"})
            mc_ms.append(timed(lambda: merge(reviewer, tid)))
        show("merge, merge commit", mc_ms)

        test_ms = []
        base = rounds + min(rounds, 10)
        for i in range(min(rounds, 10)):
            coder = f"c{base + i}"
            tid = claim(Liza.open(repo, coder)).task
            approve(repo, coder, tid, {"scripts/integration-test.sh": "exit 0\n",
                                       f"it/{tid}.txt": "x\n"})
            test_ms.append(timed(lambda: merge(reviewer, tid)))
        show("merge, with scripts/integration-test.sh", test_ms)


if __name__ == "__main__":
    main()
