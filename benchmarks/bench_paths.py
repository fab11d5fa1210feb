"""Hot paths against their floors (used by benchmarks/run.py; not a test).

- hooks: a commit in a clone with gitliza's client hooks, against a bare `git commit` plus one
  shell start; the time the server's pre-receive hook adds to a one-commit push of the board,
  against a bare `python -c "import pygit2"`;
- sync: a sync that brings one op (and sends one), at 10 and 1,000 open tasks each with its task
  branch on the remote, against a bare `git fetch` + `git push` of one ref to the same remote;
- writers: W processes making transitions back to back on one repository: ops/s, p99 latency and
  the share of ops that gave up (CONCURRENCY_CONFLICT after the retries).
Every figure is a median of interleaved runs (each candidate and its floor alternate).
"""
from __future__ import annotations

import multiprocessing
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pygit2
from benchutil import remote_of  # noqa: E402

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def interleaved(cands: dict[str, Callable[[], Any]], runs: int) -> dict[str, float]:
    """Median seconds of each candidate, run in turn `runs` times (after one warm-up each)."""
    times: dict[str, list[float]] = {k: [] for k in cands}
    for k, fn in cands.items():
        fn()
    for _ in range(runs):
        for k, fn in cands.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def _liza(cwd: Path, *args: str, agent: str = "planner-1") -> None:
    subprocess.run([str(BIN / "git-liza"), *args], cwd=cwd, check=True, capture_output=True,
                   env=dict(os.environ, LIZA_AGENT_ID=agent))


def _init_board(path: Path) -> None:
    git(path.parent, "init", "-q", "-b", "main", str(path))
    (path / "README").write_text("x\n")
    git(path, "add", "README")
    git(path, "commit", "-q", "-m", "initial")
    git(path, "branch", "integration")
    _liza(path, "init", "bench", agent="human")
    _liza(path, "register", "planner-1", "--role", "planner", agent="human")


def bench_hooks(root: Path, runs: int) -> dict[str, float]:
    hooked, plain = root / "hooked", root / "plain"
    for p in (hooked, plain):
        _init_board(p)
    _liza(hooked, "hooks", "install")
    for p in (hooked, plain):
        git(p, "checkout", "-q", "-b", "feature")
    n = [0]

    def commit(p: Path) -> Callable[[], None]:
        def go() -> None:
            n[0] += 1
            git(p, "commit", "-q", "--allow-empty", "-m", f"c{n[0]}")
        return go
    client = interleaved({"hooked": commit(hooked), "plain": commit(plain),
                          "sh": lambda: subprocess.run(["sh", "-c", ":"], check=True)}, runs)
    # Server: a bare remote with and without the pre-receive hook; push one state commit.
    out = {"commit_hooked": client["hooked"], "commit_plain": client["plain"],
           "sh": client["sh"]}
    remotes = {}
    for name in ("guarded", "open"):
        bare = root / f"{name}.git"
        git(root, "init", "-q", "--bare", "-b", "main", str(bare))
        git(plain, "push", "-q", str(bare), "main", "integration", "refs/liza/state")
        remotes[name] = bare
    _liza(remotes["guarded"], "hooks", "install", "--server")

    def push(bare: Path) -> Callable[[], None]:
        def go() -> None:
            _liza(plain, "note", f"n{time.perf_counter_ns()}", "--no-sync")
            git(plain, "push", "-q", str(bare), "refs/liza/state")
        return go
    floor = [sys.executable, "-c", "import pygit2"]
    server = interleaved({"guarded": push(remotes["guarded"]), "open": push(remotes["open"]),
                          "python": lambda: subprocess.run(floor, check=True)}, runs)
    out.update(push_guarded=server["guarded"], push_open=server["open"],
               python_pygit2=server["python"])
    return out


def bench_sync(root: Path, open_tasks: int, runs: int, daemon: bool = False) -> dict[str, float]:
    """One op each way per sync; the remote has `open_tasks` tasks, each with its branch.
    `daemon`: the clones reach the remote through a `git daemon` (git://) instead of its path."""
    from gitliza.services.sync import engine
    from gitliza.services.api import Liza
    from gitliza.core.ops import Add, Note
    from gitliza.git.store import Store
    base = root / f"sync-{open_tasks}{'-daemon' if daemon else ''}"
    base.mkdir()
    seed, bare = base / "seed", base / "remote.git"
    _init_board(seed)
    h = Liza.open(seed, "planner-1")
    store = h.store
    for i in range(open_tasks):
        store.transact(lambda b, t, i=i: Add(actor="planner-1", time=t, task=f"task-{i}",
                                             description="d"), h.now)
    git(base, "init", "-q", "--bare", "-b", "main", str(bare))
    git(seed, "push", "-q", str(bare), "main", "integration", "refs/liza/state")
    refs = [f"main:refs/heads/liza/task-{i}" for i in range(open_tasks)]
    for chunk in range(0, len(refs), 500):
        git(seed, "push", "-q", str(bare), *refs[chunk:chunk + 500])
    a, b = base / "a", base / "b"
    server = None
    if daemon:
        sys.path.insert(0, str(HERE.parent))
        from tests.gitdaemon import GitDaemon
        server = GitDaemon(base)
        server.start()
    for c in (a, b):
        git(base, "clone", "-q", str(bare), str(c))
        if server is not None:
            git(c, "remote", "set-url", "origin", server.url("remote.git"))
        engine.pull(Store.discover(c), remote_of(Store.discover(c), "origin"))
    ha, hb = Liza.open(a, "planner-1"), Liza.open(b, "planner-1")
    k = [0]

    def one_sync() -> None:
        k[0] += 1
        hb.do(Note, message=f"b{k[0]}")
        engine.sync(hb.store, remote_of(hb.store, "origin"))
        ha.do(Note, message=f"a{k[0]}")
        t0 = time.perf_counter()
        engine.sync(ha.store, remote_of(ha.store, "origin"))  # brings b's op, replays a's, pushes
        spent[0] += time.perf_counter() - t0

    def bare_git() -> None:
        t0 = time.perf_counter()
        git(a, "fetch", "-q", "origin", "refs/liza/state")
        git(a, "push", "-q", "--force", "origin", "main:refs/heads/bench-probe")
        spent[1] += time.perf_counter() - t0
    spent = [0.0, 0.0]
    times: dict[str, list[float]] = {"sync": [], "floor": []}
    try:
        for _ in range(runs):
            for key, fn, slot in (("sync", one_sync, 0), ("floor", bare_git, 1)):
                before = spent[slot]
                fn()
                times[key].append(spent[slot] - before)
    finally:
        if server is not None:
            server.stop()
    return {k: statistics.median(v) for k, v in times.items()}


def _writer(args: tuple[str, int, int, Any]) -> tuple[list[float], int]:
    path, wid, ops, start = args
    from gitliza.services.api import Liza
    from gitliza.core.ops import Note
    from gitliza.errors import ConcurrencyConflict
    h = Liza.open(path, "planner-1")
    lat: list[float] = []
    gave_up = 0
    start.wait()
    for i in range(ops):
        t0 = time.perf_counter()
        try:
            h.do(Note, message=f"w{wid} {i}")
        except ConcurrencyConflict:
            gave_up += 1
        lat.append(time.perf_counter() - t0)
    return lat, gave_up


def bench_writers(root: Path, counts: list[int], ops: int) -> list[dict[str, float]]:
    out = []
    for w in counts:
        repo = root / f"writers-{w}"
        _init_board(repo)
        ctx = multiprocessing.get_context("fork")
        with ctx.Manager() as mgr:
            start = mgr.Event()
            with ctx.Pool(w) as pool:
                res = pool.map_async(_writer, [(str(repo), i, ops, start) for i in range(w)])
                time.sleep(0.5)
                t0 = time.perf_counter()
                start.set()
                results = res.get()
                wall = time.perf_counter() - t0
        lat = sorted(x for r in results for x in r[0])
        gave_up = sum(r[1] for r in results)
        out.append({"writers": w, "ops_per_s": (len(lat) - gave_up) / wall,
                    "p50_ms": lat[len(lat) // 2] * 1000, "p99_ms": lat[int(len(lat) * .99)] * 1000,
                    "gave_up": gave_up / len(lat)})
        assert pygit2.Repository(str(repo)).lookup_reference("refs/liza/state")
    return out
