"""Helpers shared by the benchmark scripts (run as `python benchmarks/bench_*.py`, so this
directory is on sys.path)."""
from __future__ import annotations

import os
import statistics
import subprocess
from pathlib import Path
from typing import Any

GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV}).stdout.strip()


def remote_and_seed(tmp: Path) -> tuple[Path, Path]:
    """A bare remote `tmp/remote.git` and its first clone `tmp/seed`, one commit on `main`
    pushed: where the sync benchmarks put their board."""
    bare, seed = tmp / "remote.git", tmp / "seed"
    git(tmp, "init", "-q", "--bare", "-b", "main", str(bare))
    seed.mkdir()
    git(seed, "init", "-q", "-b", "main")
    (seed / "README").write_text("x\n")
    git(seed, "add", "README")
    git(seed, "commit", "-q", "-m", "initial")
    git(seed, "remote", "add", "origin", str(bare))
    git(seed, "push", "-q", "origin", "main")
    return bare, seed


def project(repo: Path, files: dict[str, str] | None = None) -> Any:
    """A small project (50 source files: checkout cost is part of a claim, plus `files`) with a
    board on it: returns the human's `Liza`, the integration branch made."""
    from gitliza.services.lifecycle.integration import ensure_integration_branch
    from gitliza.services.api import Liza
    from gitliza.core.ops import Init

    git(repo, "init", "-q", "-b", "main")
    for i in range(50):
        (repo / "src" / f"m{i}.py").parent.mkdir(exist_ok=True)
        (repo / "src" / f"m{i}.py").write_text(f"x = {i}\n" * 40)
    for name, text in (files or {}).items():
        (repo / name).write_text(text)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "initial")
    human = Liza.open(repo, "human")
    done = human.do(Init, goal="bench")
    ensure_integration_branch(human, done.outcome.board.config.integration_branch)
    return human


def show(name: str, ms: list[float], digits: int = 1) -> float:
    """Print the median, p90 and max of `ms` (milliseconds); returns the median."""
    ms = sorted(ms)
    p90 = ms[min(len(ms) - 1, int(len(ms) * 0.9))]
    med = statistics.median(ms)
    d = digits
    print(f"{name:<44} n={len(ms):<4} median {med:7.{d}f} ms   p90 {p90:7.{d}f} ms   "
          f"max {ms[-1]:7.{d}f} ms")
    return med


def remote_of(where: Any, name: Any = None) -> Any:
    """As a command line does before it syncs: `name` (None: the configured remote, else origin)
    resolved once in the repository `where` (a path or a Store); sync is handed the `Remote`."""
    from gitliza.git.remotes.remote import Remote, resolve
    from gitliza.git.repository import repo_path
    if isinstance(name, Remote):
        return name
    return resolve(where if isinstance(where, (str, os.PathLike)) else repo_path(where.repo), name)
