"""`git pack-refs` in a loop beside a lifecycle loop (finding 2 of issue 18): git's own
housekeeping holds packed-refs.lock and the loose refs' locks again and again; no gitliza command
may fail for it, and none may fail after recording its transition."""
from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from gitliza.services.lifecycle.doctor import doctor
from gitliza.services.api import Liza
from tests.conftest import git
from tests.faults import harness as h

pytestmark = pytest.mark.slow
CYCLES = 6


def test_lifecycles_beside_a_pack_refs_loop(repo: Path) -> None:
    tasks = tuple(f"t{i}" for i in range(CYCLES))
    h.board_with(repo, tasks)
    stop = threading.Event()
    packs = [0]

    def pack_refs() -> None:
        while not stop.is_set():
            subprocess.run(["git", "pack-refs", "--all", "--prune"], cwd=repo,
                           capture_output=True)
            packs[0] += 1

    loop = threading.Thread(target=pack_refs)
    loop.start()
    failures: list[str] = []
    try:
        for i, tid in enumerate(tasks):
            steps: list[tuple[str, ...]] = [("claim", tid), ("submit", tid),
                                            ("claim-review", tid), ("verdict", tid, "approve"),
                                            ("merge", tid)]
            if i % 2:  # and a release, whose branch deletion takes packed-refs.lock too
                steps = [("claim", tid), ("release", tid)] + steps
            for step in steps:
                agent = "r1" if step[0] in ("claim-review", "verdict", "merge") else "c1"
                if step[0] == "submit":
                    h.work(repo, tid, "c1")
                r = h.liza(repo, *step, agent=agent)
                if r.returncode != 0:
                    failures.append(f"{' '.join(step)}: {r.returncode} {r.stderr.strip()}")
    finally:
        stop.set()
        loop.join()
    h.report(f"pack-refs loop: {CYCLES} lifecycles, {packs[0]} pack-refs runs, "
             f"{len(failures)} failed commands")
    assert not failures, failures
    board = Liza.open(repo).board()
    assert all(board.task(t).status.value == "MERGED" for t in tasks)
    report = doctor(Liza.open(repo), fix=True)  # finishes any deletion left to it
    assert not report.remaining
    assert not git(repo, "branch", "--list", "liza/*")
