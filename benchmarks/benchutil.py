"""Helpers shared by the benchmark scripts (run as `python benchmarks/bench_*.py`, so this
directory is on sys.path)."""
from __future__ import annotations

import os
import statistics
import subprocess
from pathlib import Path

GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV}).stdout.strip()


def show(name: str, ms: list[float], digits: int = 1) -> float:
    """Print the median, p90 and max of `ms` (milliseconds); returns the median."""
    ms = sorted(ms)
    p90 = ms[min(len(ms) - 1, int(len(ms) * 0.9))]
    med = statistics.median(ms)
    d = digits
    print(f"{name:<44} n={len(ms):<4} median {med:7.{d}f} ms   p90 {p90:7.{d}f} ms   "
          f"max {ms[-1]:7.{d}f} ms")
    return med
