#!/usr/bin/env python3
"""gitliza benchmarks (not part of the test suite). `python3 dev.py bench` runs them all.

    transition  one transition in-process (read tip, apply, write blobs/trees/commit, CAS the ref)
                on boards of 10 to 10,000 live tasks; median and p90 of many runs; and the
                original's design (benchmarks/baseline_yaml.py: flock + whole-file YAML)
    cli         CLI processes (add, heartbeat, status, --help, --version) on a 1,000-task board
                beside a bare `python -c "import pygit2"` (interleaved)
    hooks       client hooks on a commit; the server hook on a one-commit push (bench_paths.py)
    sync        a sync bringing one op at 10 and 1,000 open tasks, against git fetch + push
    writers     W processes writing one board: ops/s, p99, ops that gave up
    agents      the most agents one board serves: open-loop agent traffic at the config defaults,
                on one repository and through a shared remote (bench_agents.py)
    others      benchmarks/bench_*.py (lifecycle, verify, sync), each printing its own figures

Writes the figures into docs/performance.md (between its bench markers) and the plots into
docs/img/ (benchmarks/report.py); --no-write only prints.

Boards are written once with a bulk-load commit (a fixture, not a replayable op), then measured.
Each figure is given for the default temp dir (a real disk) and for /dev/shm (tmpfs) when it
exists, so that what the filesystem costs (a rename per ref update, a file per object) can be told
apart from what gitliza's code costs.
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from typing import Any

import pygit2

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gitliza.core.model import Task
from gitliza.core.ops import Add, Init, Register
from gitliza.core.states import TaskState
from gitliza.git.store import STATE_REF, Store

HERE = Path(__file__).resolve().parent
T = "2025-01-17T14:00:00Z"
SECTIONS = ["transition", "cli", "hooks", "sync", "writers", "agents", "others"]


def make_board(path: Path, n: int, signed: bool = False) -> Store:
    """A board of `n` live tasks and planner-1. `signed`: every commit signed (the human's key in
    git's user.signingkey, planner-1's generated), under `signatures = required`."""
    if path.exists():
        shutil.rmtree(path)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    repo = pygit2.Repository(str(path))
    store = Store(repo)
    key = None
    if signed:
        from gitliza.git import signing
        from gitliza.git.repository import common_dir
        human, key = signing.new_key(), signing.new_key()
        human_file = signing.save(common_dir(repo), "human-bench", human)
        repo.config["gpg.format"] = "ssh"
        repo.config["user.signingkey"] = str(human_file)
        signing.save(common_dir(repo), "planner-1", key)
    store.transact(lambda b, t: Init(actor="human", time=t, goal="bench"), lambda: T)
    if signed:
        from gitliza.core.ops import ConfigSet
        from gitliza.core.ops.keys import Rekey
        store.transact(lambda b, t: Rekey(actor="human", time=t, agent="human",
                                          key=human.public.line), lambda: T)
        store.transact(lambda b, t: ConfigSet(actor="human", time=t, key="signatures",
                                              value="required"), lambda: T)
    store.transact(lambda b, t: Register(actor="human", time=t, agent="planner-1",
                                         role="planner",
                                         key=None if key is None else key.public.line),
                   lambda: T)
    if n == 0:
        return store
    tip = store.tip()
    changes = {("tasks", f"task-{i}"): Task(id=f"task-{i}", description="benchmark task",
                                            status=TaskState.UNCLAIMED, created=T, spec_ref="s",
                                            done_when="w", scope="x") for i in range(n)}
    tree = store.build_tree(repo[tip].tree, changes)
    sig = pygit2.Signature("bench", "bench@liza.invalid", 0, 0)
    c = repo.create_commit(None, sig, sig, "bulk load (benchmark fixture)", tree, [tip])
    repo.lookup_reference(STATE_REF).set_target(c)
    return store


def bench_transition(root: Path, sizes: list[int], runs: int) -> list[tuple[int, float, float]]:
    out = []
    for n in sizes:
        store = make_board(root / f"board-{n}", n)
        # The fixture wrote the whole board (10,000 blobs...): let the disk write it out first,
        # or its write-back competes with the transitions being measured.
        os.sync()
        times = []
        for i in range(runs):
            t0 = time.perf_counter()
            store.transact(lambda b, t, i=i: Add(actor="planner-1", time=t, task=f"new-{i}",
                                                 description="d"), lambda: T)
            times.append(time.perf_counter() - t0)
        times.sort()
        out.append((n, statistics.median(times) * 1000, times[int(len(times) * 0.9)] * 1000))
    return out


def bench_signing(root: Path, sizes: list[int], runs: int) -> list[tuple[int, float, float]]:
    """(tasks, median ms signing off, median ms signing on): the same transition on two boards of
    the same size, one unsigned, one under `signatures = required` (each commit signed in process
    and checked signable), interleaved so that both see the same machine."""
    out = []
    for n in sizes:
        off = make_board(root / f"off-{n}", n)
        on = make_board(root / f"on-{n}", n, signed=True)
        os.sync()
        times: dict[bool, list[float]] = {False: [], True: []}
        for i in range(runs):
            for signed, store in ((False, off), (True, on)) if i % 2 else ((True, on), (False, off)):
                t0 = time.perf_counter()
                store.transact(lambda b, t, i=i: Add(actor="planner-1", time=t, task=f"new-{i}",
                                                     description="d"), lambda: T)
                times[signed].append(time.perf_counter() - t0)
        assert pygit2.Repository(str(root / f"on-{n}")).revparse_single(STATE_REF).read_raw() \
            .count(b"gpgsig -----BEGIN SSH SIGNATURE-----") == 1
        out.append((n, statistics.median(times[False]) * 1000,
                    statistics.median(times[True]) * 1000))
        shutil.rmtree(root / f"off-{n}")
        shutil.rmtree(root / f"on-{n}")
    return out


def bench_verify_signed(root: Path, sizes: list[int]) -> list[tuple[int, float, float]]:
    """(commits, verify commits/s unsigned, verify commits/s signed): `verify` replaying a history
    of `n` ops (add, claim, heartbeat... by planner-1), unsigned under `off` and signed under
    `required`, where every signature is checked."""
    from gitliza.services.verify.engine import replay
    out = []
    for n in sizes:
        rates = []
        for signed in (False, True):
            store = make_board(root / f"verify-{signed}", 0, signed=signed)
            for i in range(n):
                store.transact(lambda b, t, i=i: Add(actor="planner-1", time=t, task=f"v-{i}",
                                                     description="d"), lambda: T)
            best = 0.0
            for _ in range(3):
                report = replay(store, store.tip())
                assert report.signed == (report.commits - 2 if signed else 0), report.signed
                best = max(best, report.rate)
            rates.append(best)
            shutil.rmtree(root / f"verify-{signed}")
        out.append((n, rates[0], rates[1]))
    return out


def fs_floor(root: Path, runs: int) -> float:
    """Median ms of the file work a transition cannot avoid, done with bare system calls: the
    pack (created), its index (created, renamed into place) and the ref (its lock created, renamed
    over it), with the sizes a transition writes."""
    d = root / "fs-floor"
    d.mkdir()
    (d / "ref").write_text("0" * 40 + "\n")

    def put(path: Path, size: int, flags: int) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | flags, 0o444)
        os.write(fd, b"x" * size)
        os.close(fd)
    times = []
    for i in range(runs):
        t0 = time.perf_counter()
        put(d / f"pack-{i}.pack", 1300, os.O_EXCL)
        put(d / f"tmp-{i}.idx", 1240, os.O_TRUNC)
        os.rename(d / f"tmp-{i}.idx", d / f"pack-{i}.idx")
        put(d / "ref.lock", 41, os.O_EXCL)
        os.rename(d / "ref.lock", d / "ref")
        times.append(time.perf_counter() - t0)
    shutil.rmtree(d)
    return statistics.median(times) * 1000


def _median_process(cmd: list[str], runs: int, cwd: Path, env: dict[str, str]) -> float:
    times = []
    for i in range(runs):
        argv = [a.replace("{i}", str(i)) for a in cmd]
        t0 = time.perf_counter()
        subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def _cli_env() -> dict[str, str]:
    """As a new user has it: bytecode written and used (this machine's environment may set
    PYTHONDONTWRITEBYTECODE, which makes every start compile gitliza from source)."""
    bindir = Path(sys.executable).parent
    env = dict(os.environ, LIZA_AGENT_ID="planner-1",
               PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(HERE.parent / "gitliza")],
                   env=env, stdout=subprocess.DEVNULL, check=False)
    return env


def bench_cli(root: Path, runs: int) -> dict[str, float]:
    """Medians (ms) of interleaved process starts on a 1,000-task board."""
    make_board(root / "cli", 1_000)
    bindir = Path(sys.executable).parent
    env = _cli_env()
    liza = str(bindir / "git-liza")
    cmds = {"python -c pass": [sys.executable, "-c", "pass"],
            "python -c 'import pygit2'": [sys.executable, "-c", "import pygit2"],
            "add": [liza, "add", "cli-{i}", "--desc", "x"],
            "heartbeat": [liza, "heartbeat"],
            "status": [liza, "status"],
            "--version": [liza, "--version"],
            "--help": [liza, "--help"]}
    times: dict[str, list[float]] = {k: [] for k in cmds}
    for k, c in cmds.items():  # warm-up: caches (bytecode, the CLI spec, compiled classes)
        subprocess.run([a.replace("{i}", "w") for a in c], cwd=root / "cli", env=env,
                       stdout=subprocess.DEVNULL, check=True)
    for i in range(runs):
        for k, c in cmds.items():
            t0 = time.perf_counter()
            subprocess.run([a.replace("{i}", str(i)) for a in c], cwd=root / "cli", env=env,
                           stdout=subprocess.DEVNULL, check=True)
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) * 1000 for k, v in times.items()}


def bench_baseline(root: Path, sizes: list[int]) -> list[tuple[int, float]]:
    from baseline_yaml import median_ms
    return [(n, median_ms(root, n, 5 if n <= 1_000 else 1)) for n in sizes]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--runs", type=int, default=300, help="transitions per board size")
    ap.add_argument("--cli-runs", type=int, default=15)
    ap.add_argument("--only", choices=SECTIONS, action="append")
    ap.add_argument("--no-write", action="store_true", help="print only: leave docs/ alone")
    args = ap.parse_args()
    only = set(args.only or SECTIONS)
    home = tempfile.mkdtemp(prefix="gitliza-bench-home-")
    os.environ.update(HOME=home, GIT_CONFIG_GLOBAL=str(Path(home) / ".gitconfig"),
                      GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="bench",
                      GIT_AUTHOR_EMAIL="bench@example.invalid", GIT_COMMITTER_NAME="bench",
                      GIT_COMMITTER_EMAIL="bench@example.invalid")
    env_line = (f"python {platform.python_version()}, pygit2 {pygit2.__version__} (libgit2 "
                f"{pygit2.LIBGIT2_VERSION}), git {_git_version()}, {os.cpu_count()} cpus, load "
                f"{os.getloadavg()[0]:.1f} at start")
    print(f"gitliza benchmarks: {env_line}")
    res: dict[str, Any] = {"env": env_line}
    places = [("disk", Path(tempfile.gettempdir()))]
    if Path("/dev/shm").is_dir():
        places.append(("tmpfs", Path("/dev/shm")))
    sizes = [10, 100, 1_000, 3_000, 10_000]
    for label, base in places:
        root = Path(tempfile.mkdtemp(prefix="gitliza-bench-", dir=base))
        try:
            if "transition" in only:
                rows = bench_transition(root, sizes, args.runs)
                res[f"transition_{label}"] = rows
                res[f"fs_floor_{label}"] = fs_floor(root, args.runs)
                print(f"[{label}] the files of a transition, bare system calls: "
                      f"{res[f'fs_floor_{label}']:.3f} ms")
                for n, med, p90 in rows:
                    print(f"[{label}] transition at {n:>6} tasks: median {med:.3f} ms, "
                          f"p90 {p90:.3f} ms, {med / rows[0][1]:.2f}x the 10-task time")
                res[f"signing_{label}"] = bench_signing(root, [10, 10_000], args.runs)
                res["signing_env"] = env_line
                for n, off, on in res[f"signing_{label}"]:
                    print(f"[{label}] transition at {n:>6} tasks, signing off {off:.3f} ms, "
                          f"on {on:.3f} ms: {on / off:.2f}x")
                if label == "tmpfs" or len(places) == 1:
                    res["verify_signed"] = bench_verify_signed(root, [2_000])
                    for n, a, b in res["verify_signed"]:
                        print(f"[{label}] verify {n} commits: unsigned {a:.0f}/s, signed "
                              f"{b:.0f}/s ({b / a:.2f}x)")
                if label == "disk":
                    res["baseline"] = bench_baseline(root, [10, 100, 1_000, 3_000])
                    for n, med in res["baseline"]:
                        print(f"[{label}] yaml+flock baseline at {n:>6} tasks: {med:.1f} ms")
            if "cli" in only and label == "tmpfs":
                res["cli"] = bench_cli(root, args.cli_runs)
                floor = res["cli"]["python -c 'import pygit2'"]
                for k, v in res["cli"].items():
                    print(f"[{label}] {k}: {v:.1f} ms ({v / floor:.2f}x the pygit2 floor)")
            if "hooks" in only and label == "disk":
                import bench_paths
                res["hooks"] = bench_paths.bench_hooks(root, max(5, args.cli_runs // 2))
                print(f"[{label}] hooks: {res['hooks']}")
            if "sync" in only and label == "disk":
                import bench_paths
                res["sync"] = {n: bench_paths.bench_sync(root, n, 7) for n in (10, 1_000)}
                print(f"[{label}] sync: {res['sync']}")
                # The same through `git daemon` (git://): printed, not in the report's table.
                for n in (10, 1_000):
                    d = bench_paths.bench_sync(root, n, 7, daemon=True)
                    print(f"[{label}] sync over git daemon, {n} tasks: {d['sync'] * 1e3:.1f} ms, "
                          f"floor {d['floor'] * 1e3:.1f} ms ({d['sync'] / d['floor']:.2f}x)")
            if "writers" in only and label == "tmpfs":
                import bench_paths
                res["writers"] = bench_paths.bench_writers(root, [1, 2, 4, 8], 150)
                for row in res["writers"]:
                    print(f"[{label}] writers: {row}")
        finally:
            shutil.rmtree(root, ignore_errors=True)
    if "agents" in only:
        import bench_agents
        res["agents"] = bench_agents.bench()
    if "others" in only:
        for script in sorted(HERE.glob("bench_*.py")):
            if script.name in ("bench_paths.py", "bench_agents.py"):
                continue
            print(f"--- {script.name}", flush=True)
            subprocess.run([sys.executable, str(script)], check=False)
    if not args.no_write:
        import report
        report.write(report.merged(res))
    return 0


def _git_version() -> str:
    return subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.split()[-1]


if __name__ == "__main__":
    sys.exit(main())
