"""Benchmark (issue 40): `verify` on a board whose approvals carry acceptance evidence, against
the same lifecycles without it. A script, not a test:

    .venv/bin/python benchmarks/bench_evidence.py [--tasks 1000] [--quorum 1]

Builds, through the Python API, N full task lifecycles (add, claim, submit, claim-review, verdict,
merge) whose tasks have two acceptance criteria and whose approvals give a path evidence (a file
and line of a real review commit, which verify reads) and a test evidence. Replays the whole
history (the engine `git liza verify` runs) a few times, with the evidence read and without,
and prints the best of each.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gitliza.core import clock  # noqa: E402
from gitliza.core.model import Evidence  # noqa: E402
from gitliza.core.ops import (Add, Claim, ClaimReview, ConfigSet, Init, Merge, Register,  # noqa: E402
                              Submit, Verdict)
from gitliza.services.api import Liza  # noqa: E402
from gitliza.services.verify.engine import verify  # noqa: E402


def board(path: Path, tasks: int, quorum: int, evidence: bool) -> tuple[int, int]:
    path.mkdir()
    env = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b", "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=path, check=True, env=env)
    (path / "src").mkdir()
    for i in range(50):
        (path / "src" / f"m{i}.py").write_text("".join(f"line {k}\n" for k in range(40)))
    subprocess.run(["git", "add", "."], cwd=path, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "code"], cwd=path, check=True, env=env)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=path, check=True, env=env,
                         capture_output=True, text=True).stdout.strip()
    t = [clock.to_epoch("2025-01-01T00:00:00Z")]

    def now() -> str:
        t[0] += 1
        return clock.from_epoch(t[0])
    reviewers = [f"rev-{i}" for i in range(1, quorum + 1)]
    human = Liza.open(path, agent="human", now=now)
    coder = Liza.open(path, agent="coder-1", now=now)
    revs = [Liza.open(path, agent=r, now=now) for r in reviewers]
    human.do(Init, goal="bench")
    human.do(ConfigSet, key="review_quorum", value=str(quorum))
    human.do(Register, agent="coder-1", role="coder")
    for r in reviewers:
        human.do(Register, agent=r, role="code_reviewer")
    done_when = "- the module exists\n- its test passes" if evidence else "it works"
    proofs = 0
    for n in range(tasks):
        tid = f"task-{n}"
        human.do(Add, task=tid, description="d", spec_ref="s", done_when=done_when, scope="x",
                 criteria=("the module exists", "its test passes") if evidence else (),
                 ready=True)
        coder.do(Claim, task=tid, worktree=f".worktrees/{tid}", base_commit=sha)
        coder.do(Submit, task=tid, commit=sha)
        for rev in revs:
            ev = (Evidence(1, "path", f"src/m{n % 50}.py:{n % 40 + 1}"),
                  Evidence(2, "test", f"tests/test_m.py::test_{n}")) if evidence else ()
            proofs += len(ev)
            rev.do(ClaimReview, task=tid)
            rev.do(Verdict, task=tid, verdict="approve", commit=sha, counted=True, evidence=ev)
        revs[-1].do(Merge, task=tid, result="merged", merge_commit=sha)
    return len(list(human.store.repo.walk(human.store.resolve(None).id))), proofs


def best_verify(path: Path, runs: int, read_evidence: bool = True) -> float:
    from gitliza.services.verify import engine
    store = Liza.open(path).store
    orig = engine.evidence_gaps
    if not read_evidence:  # the same replay with the reading of the commits left out
        engine.evidence_gaps = lambda repo, commit, evidence: []  # type: ignore[assignment]
    try:
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            verify(store)
            times.append(time.perf_counter() - t0)
    finally:
        engine.evidence_gaps = orig  # type: ignore[assignment]
    return min(times)


def repack(path: Path) -> None:
    """One pack for everything, as a maintained repository has: a board written this fast by one
    process leaves thousands of small packs in gitliza's object store (docs/maintenance.md),
    and every lookup of an object outside them (a review commit) misses through each index."""
    subprocess.run(["git", "repack", "-a", "-d", "-q"], cwd=path, check=True)
    for f in (path / ".git" / "liza-objects" / "pack").glob("*"):
        f.unlink()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--quorum", type=int, default=1)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-evidence-") as tmp:
        path = Path(tmp) / "board"
        t0 = time.perf_counter()
        commits, proofs = board(path, args.tasks, args.quorum, True)
        built = time.perf_counter() - t0
        repack(path)
        with_ev = best_verify(path, args.runs)
        without = best_verify(path, args.runs, read_evidence=False)
    print(f"{args.tasks} tasks, quorum {args.quorum}, {commits} state commits, {proofs} evidence "
          f"entries (built in {built:.0f} s): verify {with_ev:.2f} s reading the evidence in the "
          f"review commits, {without:.2f} s without ({with_ev / without:.2f}x; "
          f"{commits / with_ev:.0f} commits/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
