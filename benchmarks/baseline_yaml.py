"""The original's design, for comparison: one `.liza/state.yaml` holding the whole board, changed
under an exclusive `flock` by reading the whole file, changing one task and writing the whole file
back (temp file + rename), as the seed's scripts do (scripts/*.sh with yq; here with the fastest
YAML Python has: ruamel.yaml's C loader and dumper, so the comparison favours the baseline).

    python benchmarks/baseline_yaml.py 1000     # one transition's median on a 1,000-task board
"""
from __future__ import annotations

import fcntl
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

T = "2025-01-17T14:00:00Z"


def _yaml() -> YAML:
    y = YAML(typ="safe", pure=False)
    y.default_flow_style = False
    return y


def make_board(path: Path, n: int) -> None:
    tasks = [{"id": f"task-{i}", "description": "benchmark task", "status": "UNCLAIMED",
              "created": T, "priority": 3, "spec_ref": "s", "done_when": "w", "scope": "x",
              "history": [{"time": T, "event": "created", "agent": "planner-1"}]}
             for i in range(n)]
    board = {"goal": {"id": "goal-1", "description": "bench", "status": "IN_PROGRESS"},
             "tasks": tasks, "agents": {"planner-1": {"role": "planner", "status": "ACTIVE"}},
             "discovered": [], "anomalies": [], "human_notes": []}
    buf = io.StringIO()
    _yaml().dump(board, buf)
    path.write_text(buf.getvalue())


def transition(path: Path, i: int) -> None:
    """Add one task: flock, read all, append, write all, rename, unlock."""
    y = _yaml()
    with open(str(path) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        board: Any = y.load(path.read_text())
        board["tasks"].append({"id": f"new-{i}", "description": "d", "status": "DRAFT",
                               "created": T, "priority": 3,
                               "history": [{"time": T, "event": "created",
                                            "agent": "planner-1"}]})
        buf = io.StringIO()
        y.dump(board, buf)
        tmp = Path(f"{path}.tmp")
        tmp.write_text(buf.getvalue())
        os.replace(tmp, path)
        fcntl.flock(lock, fcntl.LOCK_UN)


def median_ms(root: Path, n: int, runs: int) -> float:
    path = root / f"state-{n}.yaml"
    make_board(path, n)
    times = []
    for i in range(runs):
        t0 = time.perf_counter()
        transition(path, i)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


if __name__ == "__main__":
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    with tempfile.TemporaryDirectory() as d:
        print(f"yaml+flock transition at {size} tasks: {median_ms(Path(d), size, 9):.2f} ms")
