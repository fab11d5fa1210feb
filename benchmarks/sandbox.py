#!/usr/bin/env python3
"""What the agent sandbox costs per agent run (not part of `dev.py bench`; docs/security.md
quotes its figures). On a fresh repository with a claimed task, medians of N runs:

    exec          the agent (`true`) started directly, as with --sandbox off
    bwrap         the same inside the coder's bubblewrap view (`on`: since issue 46 a network
                  namespace of its own, slirp4netns attached, the agent started once its route is
                  up)
    bwrap-ports   the same with a host port forwarded (sandbox_host_ports: the forwarder in
                  front, one more Python start)
    bwrap-model   the same with --sandbox model: a network namespace of its own, the gate, and
                  the forwarder started in front of the agent (python -I)
    box           a session's sandbox made and closed (private home and tmp, the coder's own git
                  dir, the broker's socket), nothing committed
    import        bringing one new commit of the coder onto its task branch (fetch + CAS)
    status        `git liza status` run directly
    status-broker the same through the broker, as an agent inside calls it

Usage: python3 benchmarks/sandbox.py [N]   (default 20)
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

import pygit2

from gitliza.core.states import Role
from gitliza.sandbox.box import Box, Session
from gitliza.sandbox.bwrap import require

BIN = Path(sys.executable).parent
IDENTITY = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
            "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}


def timed(n: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def launch(box: Box, argv: list[str], env: dict[str, str], quiet: bool = False) -> None:
    """As a supervisor starts an agent: the process, then its sandbox told (its network)."""
    out = subprocess.DEVNULL if quiet else None
    p = subprocess.Popen(argv, env=env, stdout=out, stderr=out)
    started = getattr(box, "started", None)  # (the code before issue 46 has none)
    if started is not None:
        started(p.pid, lambda _why: p.kill())
    if p.wait() != 0:
        raise SystemExit(f"{argv[-1]} exited {p.returncode}")


def main(n: int) -> None:
    exe = require()
    d = Path(tempfile.mkdtemp(prefix="sandbox-bench-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIZA_")}
    env.update(IDENTITY, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    repo = d / "repo"
    repo.mkdir()

    def run(*args: str, cwd: Path = repo) -> str:
        return subprocess.run(args, cwd=cwd, env=env, check=True, capture_output=True,
                              text=True).stdout
    run("git", "init", "-q", "-b", "main")
    (repo / "README.md").write_text("bench\n")
    run("git", "add", ".")
    run("git", "commit", "-qm", "init")
    run("git", "liza", "init", "sandbox bench")
    run("git", "liza", "register", "coder-1", "--role", "coder")
    run("git", "liza", "add", "t1", "--desc", "d", "--spec-ref", "README.md", "--done-when",
        "x", "--scope", "s", "--ready")
    run("git", "liza", "claim", "t1", "--agent", "coder-1")
    wt = repo / ".worktrees" / "t1"
    r = pygit2.Repository(str(repo))
    session = Session(agent="coder-1", role=Role.CODER, worktree=wt, task="t1", main=repo,
                      repo=r, common=repo / ".git", cli=None,
                      env={**env, "LIZA_AGENT_ID": "coder-1"},
                      gitliza=(sys.executable, "-m", "gitliza"), mcp=None,
                      refused=lambda _l, _a: None)
    box = Box(exe, session)
    argv, benv = box.wrap(["true"], env)
    rows = {
        "exec": timed(n, lambda: subprocess.run(["true"], check=True)),
        "bwrap": timed(n, lambda: launch(box, argv, benv)),
    }
    try:
        ported = Box(exe, replace(session, host_ports=(11434,)))
    except TypeError:  # the code before issue 46: no such thing
        ported = None
    if ported is not None:
        pargv, penv = ported.wrap(["true"], env)
        rows["bwrap-ports"] = timed(n, lambda: launch(ported, pargv, penv))
        ported.close()
    model = Box(exe, replace(session, network="model", cli="claude"))
    margv, menv = model.wrap(["true"], env)
    rows["bwrap-model"] = timed(n, lambda: launch(model, margv, menv))
    model.close()
    status = [*box.wrap([*box.gitliza_inside, "status"], benv)[0]]
    rows["status"] = timed(n, lambda: run("git", "liza", "status", cwd=wt))
    rows["status-broker"] = timed(n, lambda: launch(box, status, benv, quiet=True))
    box.close()
    rows["box"] = timed(n, lambda: Box(exe, session).close())

    def one_commit() -> None:
        b = Box(exe, session)
        a, e = b.wrap(["sh", "-c", "date +%s%N > f.txt && git add f.txt && "
                       "git commit -qm step"], env)
        launch(b, a, e, quiet=True)
        t = time.perf_counter()
        b.close()
        times.append(time.perf_counter() - t)
    times: list[float] = []
    for _ in range(n):
        one_commit()
    rows["import"] = statistics.median(times) * 1000
    for k, v in rows.items():
        print(f"{k:14} {v:8.1f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
