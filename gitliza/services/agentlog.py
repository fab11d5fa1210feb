"""Per-run files under `.liza/`: each agent run's output log and prompt, named by agent, task and
time, rotated so that a supervisor restarting an agent all day never fills the disk.

    .liza/agent-logs/<agent>--<task>--<time>.log     stdout and stderr of one run
    .liza/agent-prompts/<agent>--<time>.txt          the prompt of one run

Ids are kebab-case (single dashes), so `--` separates the parts unambiguously. A run in `-p` mode
prints little more than its final answer (a permission denial shows only in the CLI's own
transcript), so the log's first line also says where that CLI keeps its transcript.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Mapping, Sequence

from gitliza import agentcli, atomic

LOGS_DIR = "agent-logs"
PROMPTS_DIR = "agent-prompts"
KEEP = 50  # newest files of each kind kept per agent
NO_TASK = "planning"


def _unique(d: Path, stem: str, suffix: str) -> Path:
    path, n = d / f"{stem}{suffix}", 1
    while path.exists():
        n += 1
        path = d / f"{stem}-{n}{suffix}"
    return path


def stamp(now: str) -> str:
    return now.replace(":", "-")


def prompt_path(d: Path, agent: str, now: str) -> Path:
    return _unique(d, f"{agent}--{stamp(now)}", ".txt")


def log_path(d: Path, agent: str, task: str | None, now: str) -> Path:
    return _unique(d, f"{agent}--{task or NO_TASK}--{stamp(now)}", ".log")


def rotate(d: Path, agent: str, suffix: str, keep: int = KEEP) -> None:
    """Delete all but the newest `keep` files of `agent`."""
    mine = sorted(d.glob(f"{agent}--*{suffix}"), key=_by_time)
    for old in mine[:max(0, len(mine) - keep)]:
        try:
            old.unlink()
        except OSError:
            pass


def open_log(path: Path, header: str) -> IO[bytes]:
    """The log file the agent writes to (its stdout and stderr), after a header line: readable by
    the user alone (it holds what the agent saw), never opened through a link."""
    f = atomic.open_file(path, append=True)
    f.write(header.encode() + b"\n")
    f.flush()
    return f


def for_task(liza_dir: Path, task: str) -> list[Path]:
    """The logs of every run on `task` kept on this machine, oldest first."""
    d = liza_dir / LOGS_DIR
    if not d.is_dir():
        return []
    return sorted(d.glob(f"*--{task}--*.log"), key=_by_time)


def _by_time(p: Path) -> tuple[str, str]:
    """The time is the name's last part (`-2` after it for a second file in the same second)."""
    return p.stem.rsplit("--", 1)[-1], p.name


def transcript(argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> str | None:
    """Where the agent CLI keeps its own transcript of a run in `cwd`, or None for a program that
    keeps none we know of. Each CLI's profile says (gitliza/agentcli/; docs/agents.md)."""
    p = agentcli.for_command(argv[0]) if argv else None
    if p is None or p.transcript is None:
        return None
    return p.transcript(env, env.get("HOME") or os.path.expanduser("~"), cwd)
