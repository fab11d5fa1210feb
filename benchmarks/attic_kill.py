#!/usr/bin/env python3
"""SIGKILLs at random moments of a sandboxed coder's run, and what the attic kept (issue 38; not
part of `dev.py bench`).

Each run adds a task; a sandboxed coder supervisor claims it and starts a scripted agent that
edits a tracked file, commits once, and keeps appending to an untracked file and to the tracked
one (uncommitted). At a random moment (0.3 to 2.5 s into the agent's run) the harness SIGKILLs

    supervisor   the coder's supervisor (its agent dies with it); then the human releases the
                 task (a teardown whose line names the attic ref)
    agent        the agent (bubblewrap's process); its supervisor's line names the attic ref

and compares the worktree as the kill left it (every file but .git, ignored ones excepted) with
the tree of the ref that line names: bytes lost (goal 0), runs whose line named no ref although
the worktree held work, and the attic's cost per teardown (the time `attic.save` took in-process
on the same worktree, measured after the run).

Usage: python3 benchmarks/attic_kill.py [RUNS_PER_MODE] [MODES]   (default 10, supervisor,agent)
"""
from __future__ import annotations

import os
import random
import re
import signal
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pygit2  # noqa: E402

from gitliza.services.attic import save  # noqa: E402
from tests.cli.test_board import liza  # noqa: E402
from tests.team.procs import Sup, add_task, new_board_repo, script  # noqa: E402

IDENTITY = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
            "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}
AGENT = """i=0
while true; do
  i=$((i+1))
  echo "edit $i of $LIZA_TASK_ID" >> README.md
  head -c 300 /dev/urandom | od -An -tx1 >> "untracked-$LIZA_TASK_ID.txt"
  if [ "$i" = 3 ]; then git add README.md; git commit -q -m "wip $LIZA_TASK_ID"; fi
  sleep 0.02
done
"""
ATTIC_REF = re.compile(r"refs/liza-attic/[\w.-]+/[0-9a-f]{40}")
STARTED = re.compile(r"started agent \(pid (\d+)\) on ([\w.-]+)")


def files(wt: Path) -> dict[str, bytes]:
    """The worktree's work: every file but .git (the agent writes no ignored file)."""
    out = {}
    for p in wt.rglob("*"):
        if p.is_file() and ".git" not in p.relative_to(wt).parts[:1]:
            out[p.relative_to(wt).as_posix()] = p.read_bytes()
    return out


def tree_files(repo: pygit2.Repository, ref: str) -> dict[str, bytes]:
    out: dict[str, bytes] = {}

    def walk(tree: pygit2.Tree, prefix: str) -> None:
        for e in tree:
            if e.type_str == "tree":
                walk(repo[e.id], prefix + e.name + "/")  # type: ignore[arg-type]
            else:
                out[prefix + e.name] = repo[e.id].data  # type: ignore[attr-defined]
    walk(repo.revparse_single(ref).peel(pygit2.Tree), "")
    return out


def one(repo: Path, tmp: Path, n: int, mode: str) -> dict[str, object]:
    add_task(repo, f"k{n}")
    agent = script(tmp, "agent.sh", AGENT)
    sup = Sup(repo, "coder", "coder-1", "--sandbox", "on", "--", str(agent))
    m = STARTED.search(sup.expect("started agent (pid", 120))
    assert m is not None
    pid, task = int(m.group(1)), m.group(2)  # a released task of an earlier run comes first
    time.sleep(random.uniform(0.3, 2.5))
    wt = repo / ".worktrees" / task
    if mode == "supervisor":
        sup.proc.send_signal(signal.SIGKILL)
        sup.proc.wait()
        for _ in range(200):  # the agent dies with its supervisor (parent-death signal)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        time.sleep(0.2)
        left = files(wt)
        r = liza(repo, "release", task, agent=None)
        said = r.stdout + r.stderr
    else:
        os.kill(pid, signal.SIGKILL)
        said = sup.expect("(after the agent's exit", 60)
        left = files(wt)  # the agent is dead; the restart comes a second later at the soonest
        # (the snapshot was made before this read: a restarted agent's appends would only add)
        sup.signal(signal.SIGTERM)
        sup.wait(120)
        r = liza(repo, "release", task, agent=None)
    refs = ATTIC_REF.findall(said)
    r_ = pygit2.Repository(str(repo))
    kept: dict[str, bytes] = {}
    for ref in refs:
        kept.update(tree_files(r_, ref))
    base = tree_files(r_, "main")
    work = {k: v for k, v in left.items() if base.get(k) != v}
    lost = 0
    for name, data in work.items():
        have = kept.get(name)
        if have is None:
            lost += len(data)
        elif not have.startswith(data) and have != data:
            lost += len(data)
    t = time.perf_counter()
    save(r_, task, wt, None, "the benchmark")  # the worktree as the kill left it
    cost = time.perf_counter() - t
    return {"mode": mode, "work_bytes": sum(len(v) for v in work.values()), "lost": lost,
            "named": bool(refs), "cost_ms": cost * 1000}


def main(runs: int, modes: list[str]) -> None:
    os.environ.update(IDENTITY)
    tmp, repo = new_board_repo("attic-kill-", lease_duration="30")
    results = []
    n = 0
    for mode in modes:
        for _ in range(runs):
            n += 1
            try:
                r = one(repo, tmp, n, mode)
            except AssertionError as e:
                r = {"mode": mode, "error": str(e).splitlines()[0][:200]}
            results.append(r)
            print(n, r, flush=True)
    for mode in modes:
        ok = [r for r in results if r["mode"] == mode and "error" not in r]
        errs = [r for r in results if r["mode"] == mode and "error" in r]
        print(f"{mode}: {len(ok)} runs ({len(errs)} harness errors), work "
              f"{sum(int(r['work_bytes']) for r in ok)} bytes, lost "
              f"{sum(int(r['lost']) for r in ok)} bytes, runs with work and no ref named "
              f"{sum(1 for r in ok if int(r['work_bytes']) and not r['named'])}, "
              f"attic.save median {statistics.median([float(r['cost_ms']) for r in ok]) if ok else 0:.1f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10,
         sys.argv[2].split(",") if len(sys.argv) > 2 else ["supervisor", "agent"])
