"""Benchmark: joining and verifying a long board (issue 28 item 4; docs/performance.md, "Joining a
long board"). A script:

    .venv/bin/python benchmarks/bench_join.py [--sizes 1000,10000,100000] [--runs 3]
                                              [--seal-every 1000] [--before 1000,10000]

For each size N it builds (once, cached under $TMPDIR/gitliza-bench-join/) a bare remote holding
a board of N state commits, written through the library API: a team's history where liveness
dominates, as in the issue's 5,222-commit run (96% heartbeats): every task is added, claimed,
renewed by 40 heartbeats, submitted, reviewed and merged (46 commits), and the human seals every
--seal-every commits. Then, --runs times, in a new directory:

- join: `git init`, `git remote add`, `git liza pull`, `git liza status` (the real CLI, each a
  process), the way a new machine joins;
- verify: `git liza verify` in the joined clone (from the newest seal).

--before N,...: boards of the same shape without seals, joined whole (`git config
liza.joinDepth 0`; the pull and `verify --full` replay the whole chain): what joining cost before
seals, for the ratio the issue measured.
Figures: the median of --runs, wall clock and CPU time (user + system of every process the step
ran, git's included: the shared machine's load inflates the wall clock, much less the CPU);
the ratio of each size to the smallest.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gitliza.core import clock  # noqa: E402
from gitliza.core.ops import (Add, Claim, ClaimReview, Heartbeat, Init, Merge, Op,  # noqa: E402
                              Register, Submit, Verdict, apply)
from gitliza.core.ops.keys import Seal  # noqa: E402
from gitliza.git.store import STATE_REF, Store  # noqa: E402
from gitliza.git.objects.trees import Batch  # noqa: E402

SHA = "a" * 40
HEARTBEATS = 40
REROOT = 500  # ops per pack (sync's replay writes one per REROOT_EVERY)
CACHE = Path(tempfile.gettempdir()) / "gitliza-bench-join"
BIN = str(Path(sys.executable).parent)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def build(dest: Path, commits: int, seal_every: int) -> Path:
    """A bare remote with a board of `commits` state commits (cached: built once per size).

    Written as sync's replay writes (gitliza/services/sync/replay.py): each op applied by the core
    on the board in memory and staged into one pack per REROOT ops, the ref set at the end; the
    commits are exactly those `Liza.do` writes (verify replays them), without a pack and a
    compare-and-swap per op."""
    bare = dest / f"board-{commits}-s{seal_every}.git"
    if (bare / "liza-bench-done").exists():
        return bare
    work = dest / f"work-{commits}-s{seal_every}"
    subprocess.run(["rm", "-rf", str(work), str(bare)], check=True)
    git(dest, "init", "-q", "-b", "main", str(work))
    t = [clock.to_epoch("2025-01-01T00:00:00Z")]

    def now() -> str:
        t[0] += 1
        return clock.from_epoch(t[0])
    store = Store.discover(work)
    batch = Batch(store.repo)
    state: dict[str, Any] = {"parent": None, "tree": None, "board": store.board_at(None), "n": 0}

    def do(op: Op) -> None:
        outcome = apply(state["board"], op)
        new, state["tree"] = store.stage_commit(batch, state["parent"], state["tree"], outcome, op)
        state["parent"] = new
        state["n"] += 1
        if state["n"] % REROOT == 0:
            batch.flush()
            state["board"] = store.board_at(store.repo[new])
        else:
            state["board"] = outcome.board

    do(Init(actor="human", time=now(), goal="bench"))
    do(Register(actor="human", time=now(), agent="coder-1", role="coder"))
    do(Register(actor="human", time=now(), agent="rev-1", role="code_reviewer"))
    k = 0
    started = time.perf_counter()
    while state["n"] < commits:
        tid = f"task-{k}"
        k += 1
        steps: list[Callable[[], Op]] = [
            lambda: Add(actor="human", time=now(), task=tid, description="d", spec_ref="s",
                        done_when="w", scope="x", ready=True),
            lambda: Claim(actor="coder-1", time=now(), task=tid, worktree=f".worktrees/{tid}",
                          base_commit=SHA)]
        steps += [lambda: Heartbeat(actor="coder-1", time=now(), task=tid)] * HEARTBEATS
        steps += [lambda: Submit(actor="coder-1", time=now(), task=tid, commit=SHA),
                  lambda: ClaimReview(actor="rev-1", time=now(), task=tid),
                  lambda: Verdict(actor="rev-1", time=now(), task=tid, verdict="approve",
                                  commit=SHA),
                  lambda: Merge(actor="rev-1", time=now(), task=tid, result="merged",
                                merge_commit=SHA)]
        for step in steps:
            if state["n"] >= commits:
                break
            if seal_every and (commits - state["n"]) % seal_every == seal_every // 2:
                # Every `seal_every` commits, the newest half a cadence below the tip: the
                # distance a join meets on average.
                do(Seal(actor="human", time=now()))
            if state["n"] < commits:
                do(step())
        if k % 200 == 0:
            n = state["n"]
            print(f"  built {n} commits ({n / (time.perf_counter() - started):.0f}/s)",
                  file=sys.stderr)
    batch.flush()
    store.repo.references.create(STATE_REF, state["parent"], force=True)
    git(dest, "init", "-q", "--bare", str(bare))
    git(work, "push", "-q", str(bare), f"{STATE_REF}:{STATE_REF}")
    subprocess.run(["rm", "-rf", str(work)], check=True)
    (bare / "liza-bench-done").touch()
    return bare


def cli(cwd: Path, *args: str) -> None:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    r = subprocess.run(["git", "liza", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"git liza {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")


def cpu() -> float:
    """CPU seconds (user + system) of every finished child process and its children: on a
    shared, loaded machine the wall clock measures the neighbours too."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def join_once(bare: Path, where: Path, *, before: bool) -> tuple[float, float, float, float, int]:
    """(join wall s, join CPU s, verify wall s, verify CPU s, state commits held) for one new
    clone."""
    subprocess.run(["rm", "-rf", str(where)], check=True)
    t0, c0 = time.perf_counter(), cpu()
    git(where.parent, "init", "-q", "-b", "main", str(where))
    git(where, "remote", "add", "origin", str(bare))
    if before:
        git(where, "config", "liza.joinDepth", "0")
    cli(where, "pull")
    cli(where, "status")
    jw, jc = time.perf_counter() - t0, cpu() - c0
    t0, c0 = time.perf_counter(), cpu()
    cli(where, "verify", *(["--full"] if before else []))
    vw, vc = time.perf_counter() - t0, cpu() - c0
    held = int(git(where, "rev-list", "--count", "refs/liza/state"))
    return jw, jc, vw, vc, held


def measure(bare: Path, runs: int, before: bool) -> tuple[float, float, float, float, int]:
    got = [join_once(bare, CACHE / "joiner", before=before) for _ in range(runs)]
    med = [statistics.median(g[i] for g in got) for i in range(4)]
    return med[0], med[1], med[2], med[3], got[0][4]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--before", default="1000,10000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seal-every", type=int, default=1000)
    args = ap.parse_args()
    CACHE.mkdir(parents=True, exist_ok=True)
    rows = []
    for label, sizes, before in (("with seals", args.sizes, False),
                                 ("before seals", args.before, True)):
        if not sizes:
            continue
        base: tuple[float, float] | None = None
        for size in (int(s) for s in sizes.split(",")):
            t0 = time.perf_counter()
            # Before seals: a board without any (and a whole join): the pull replays it all.
            bare = build(CACHE, size, 0 if before else args.seal_every)
            print(f"board of {size} commits ready in {time.perf_counter() - t0:.1f}s",
                  file=sys.stderr)
            jw, jc, vw, vc, held = measure(bare, args.runs, before)
            base = base or (jw + vw, jc + vc)
            rows.append((label, size, held, jw, jc, vw, vc, (jw + vw) / base[0],
                         (jc + vc) / base[1]))
            print(f"{label}: {size} commits: join {jw:.2f}s wall / {jc:.2f}s CPU (holds {held} "
                  f"state commits), verify {vw:.2f}s / {vc:.2f}s CPU; join+verify "
                  f"{(jw + vw) / base[0]:.2f}x wall, {(jc + vc) / base[1]:.2f}x CPU the smallest",
                  flush=True)
    print("\n| board | commits | state commits fetched | join (pull + status), wall / CPU | "
          "verify, wall / CPU | join + verify, x the smallest: wall / CPU |")
    print("|---|---|---|---|---|---|")
    for label, size, held, jw, jc, vw, vc, rw, rc in rows:
        print(f"| {label} | {size:,} | {held:,} | {jw:.2f} / {jc:.2f} s | {vw:.2f} / {vc:.2f} s "
              f"| {rw:.2f}x / {rc:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
