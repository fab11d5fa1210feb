"""No orphaned agents: an agent dies with its supervisor, and a new supervisor of an id stops
whatever the previous generation left running on this machine.

Two mechanisms, because neither covers everything:
- The parent-death signal (Linux `prctl(PR_SET_PDEATHSIG)`, set in the child before it execs the
  agent, by `setpriv --pdeathsig` or a preexec function: services/procinfo.py `with_parent_death`): the kernel SIGKILLs the agent when the
  thread that forked it dies, so the supervisor forks from the
  thread that then waits for the agent (the main thread under `git liza agent`). It reaches only
  the agent itself, not what the agent started (shells, test runners) in its process group.
- A record of the running agent, `.liza/agent-procs/<agent>.json` (pid, process group and the
  supervisor's generation), written when the agent starts and removed when its group is gone.
  A supervisor that takes an id (start after the token expired, a restart, or `--takeover`)
  stops that process group before it runs an agent of its own. It signals the group only after
  finding a live member that carries the recorded agent id and generation in its environment
  (`LIZA_AGENT_ID`, `LIZA_SUPERVISOR_GEN`), so a recycled pid is never hit.
"""
from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Callable

from gitliza import atomic
from gitliza.services.api import AGENT_ENV, GEN_ENV

PROCS_DIR = "agent-procs"
STOP_GRACE = 5.0


def record_path(liza_dir: Path, agent: str) -> Path:
    return liza_dir / PROCS_DIR / f"{agent}.json"


def record(liza_dir: Path, agent: str, generation: int, pid: int, task: str | None) -> None:
    """Note the running agent (its pid leads its own process group)."""
    d = atomic.inside(liza_dir, PROCS_DIR, mode=atomic.PRIVATE_DIR)  # never through a link
    data = {"agent": agent, "generation": generation, "pid": pid, "pgid": pid,
            "supervisor_pid": os.getpid(), "task": task}
    atomic.write(d, f"{agent}.json", (json.dumps(data) + "\n").encode(), atomic.PRIVATE_FILE)


def forget(liza_dir: Path, agent: str, generation: int) -> None:
    """Drop the record once the agent's group is gone (only our own generation's)."""
    path = record_path(liza_dir, agent)
    try:
        if json.loads(path.read_text()).get("generation") == generation:
            path.unlink()
    except (OSError, ValueError):
        pass


def stop_previous(liza_dir: Path, agent: str, generation: int,
                  log: Callable[[str], None]) -> int:
    """Stop the agent process group an earlier generation of `agent` left on this machine;
    how many of its processes were found alive."""
    path = record_path(liza_dir, agent)
    try:
        rec = json.loads(path.read_text())
        pgid, gen = int(rec["pgid"]), int(rec["generation"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0
    if gen == generation:
        return 0
    members = group_members(pgid, agent, gen)
    if members:
        log(f"stopping the agent of generation {gen} still running (process group {pgid}, "
            f"{len(members)} process{'es' if len(members) > 1 else ''}, task "
            f"{rec.get('task') or 'none'})")
        _kill_group(pgid, agent, gen)
    try:
        path.unlink()
    except OSError:
        pass
    return len(members)


def stop_recorded(liza_dir: Path, agent: str, sig: signal.Signals) -> int:
    """Send `sig` to the agent process group recorded for `agent` (whatever its generation:
    `git liza team` cleaning up after a supervisor it had to kill), if it is still verifiably
    that agent's; how many of its processes were alive."""
    try:
        rec = json.loads(record_path(liza_dir, agent).read_text())
        pgid, gen = int(rec["pgid"]), int(rec["generation"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0
    members = group_members(pgid, agent, gen)
    if members:
        _killpg(pgid, sig)
    return len(members)


def _kill_group(pgid: int, agent: str, gen: int) -> None:
    _killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE
    while time.monotonic() < deadline:
        if not group_members(pgid, agent, gen):
            return
        time.sleep(0.05)
    # Verified again just before: the group is still the agent's (a live member holds its id).
    if group_members(pgid, agent, gen):
        _killpg(pgid, signal.SIGKILL)


def group_members(pgid: int, agent: str, gen: int) -> list[int]:
    """Live processes of process group `pgid`, if at least one of them is verifiably the agent of
    `agent` generation `gen` (else [], whatever the group holds)."""
    members, verified = [], False
    want = {f"{AGENT_ENV}={agent}".encode(), f"{GEN_ENV}={gen}".encode()}
    if not os.path.isdir("/proc"):
        return []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_bytes()
            fields = stat[stat.rindex(b")") + 2:].split()
            if int(fields[2]) != pgid or fields[0] == b"Z":  # pgrp; a zombie is gone already
                continue
            members.append(int(entry.name))
            if not verified:
                env = set(Path(entry.path, "environ").read_bytes().split(b"\0"))
                verified = want <= env
        except (OSError, ValueError, IndexError):
            continue
    return members if verified else []


def _killpg(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
