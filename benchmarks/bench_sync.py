"""Sync of N local ops over M remote ops (a script, not a test).

    .venv/bin/python benchmarks/bench_sync.py            # N=M in 100, 300
    .venv/bin/python benchmarks/bench_sync.py 1000:1000 50:500

For each N:M: a bare remote with a board (tasks, agents), two clones; clone B makes M ops and
pushes; clone A makes N ops offline (5% of them claims that collide with B's), then `sync`:
fetch, replay N ops on B's M, push. Prints the wall time of that sync and of its parts (the
in-process replay alone, and the fetch and push: in process for this plain local bare remote,
gitliza/git/remotes/direct.py), and the replay rate.
Everything runs in a temporary directory with an isolated git configuration.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gitliza.services.sync import engine  # noqa: E402
from gitliza.services.sync.replay import Rebuilt
from gitliza.services.sync.report import REPLAYED
from gitliza.services.api import Liza  # noqa: E402
from gitliza.core import clock  # noqa: E402
from gitliza.core.ops import Add, Claim, Init, Note, Register  # noqa: E402
from gitliza.git.store import Store  # noqa: E402
from benchutil import git, remote_and_seed  # noqa: E402
from benchutil import remote_of  # noqa: E402

T0 = clock.to_epoch("2030-01-01T00:00:00Z")


def ticker(offset: int) -> Callable[[], str]:
    t = [T0 + offset]

    def now() -> str:
        t[0] += 1
        return clock.from_epoch(t[0])
    return now


def setup(tmp: Path, claims: int) -> tuple[Path, Path, Path, str]:
    bare, seed = remote_and_seed(tmp)
    h = Liza.open(seed, "human", now=ticker(0))
    h.do(Init, goal="bench")
    for side in ("a", "b"):
        for i in range(claims):
            h.do(Register, agent=f"{side}{i}", role="coder")
    for i in range(2 * claims):
        h.do(Add, task=f"task-{i}", description="t", spec_ref="s", done_when="d", scope="x",
             ready=True)
    engine.sync(h.store, remote_of(h.store, "origin"))
    clones = []
    for name in ("a", "b"):
        path = tmp / name
        git(tmp, "clone", "-q", str(bare), str(path))
        engine.pull(Store.discover(path), remote_of(Store.discover(path), "origin"))
        clones.append(path)
    return bare, clones[0], clones[1], git(clones[0], "rev-parse", "HEAD")


def make_ops(path: Path, side: str, n: int, claims: int, first_task: int, offset: int,
             base: str) -> None:
    now = ticker(offset)
    for i in range(claims):
        Liza.open(path, f"{side}{i}", now=now).do(
            Claim, task=f"task-{first_task + i}", worktree=f".worktrees/task-{first_task + i}",
            base_commit=base)
    h = Liza.open(path, "human", now=now)
    for i in range(n - claims):
        h.do(Note, message=f"{side} note {i}")


def run(n: int, m: int) -> None:
    claims = max(1, min(n, m) // 20)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        bare, a, b, base = setup(tmp, claims)
        make_ops(b, "b", m, claims, claims // 2, 2000, base)
        engine.sync(Store.discover(b), remote_of(Store.discover(b)))
        make_ops(a, "a", n, claims, 0, 1000, base)
        store = Store.discover(a)
        # Time the replay inside the sync (objects written, no ref moved); the rest is git's
        # fetch and push plus the ref moves.
        real, spent = engine.replay, [0.0]

        def timed(*args: Any, **kw: Any) -> Rebuilt:
            t0 = time.perf_counter()
            try:
                return real(*args, **kw)
            finally:
                spent[0] += time.perf_counter() - t0
        engine.replay = timed
        try:
            t = time.perf_counter()
            rep = engine.sync(store, remote_of(store))
            sync_s = time.perf_counter() - t
        finally:
            engine.replay = real
        replay_s = spent[0]
        assert rep.action == REPLAYED and rep.pushed, rep.action
        print(f"N={n:5d} local over M={m:5d} remote: sync {sync_s * 1000:8.1f} ms "
              f"(replay {replay_s * 1000:7.1f} ms = {n / replay_s:7.0f} ops/s; fetch+push "
              f"~{(sync_s - replay_s) * 1000:6.1f} ms); replayed {len(rep.replayed)}, "
              f"dropped {len(rep.dropped)}, rounds {rep.rounds}")


def main(argv: list[str]) -> None:
    home = tempfile.mkdtemp()
    os.environ.update(HOME=home, GIT_CONFIG_GLOBAL=str(Path(home) / ".gitconfig"),
                      GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="bench",
                      GIT_AUTHOR_EMAIL="bench@example.invalid", GIT_COMMITTER_NAME="bench",
                      GIT_COMMITTER_EMAIL="bench@example.invalid")
    pairs = [tuple(int(x) for x in a.split(":")) for a in argv] or [(100, 100), (300, 300)]
    for n, m in pairs:
        run(n, m)


if __name__ == "__main__":
    main(sys.argv[1:])
