"""Whether a supervisor recorded on the board is still alive on this host.

A supervisor's token carries its host, pid and the process's start time (`/proc/PID/stat`, field
22, in clock ticks since boot). On the same host, a pid that no longer exists, or that now names a
process started at another time (the pid was reused), is a dead supervisor: a new one may take
its id at once instead of waiting for the token to expire. On another host nothing can be known
from here (`--takeover` is the human's word for it).
"""
from __future__ import annotations

import os
import socket
from pathlib import Path


def host() -> str:
    return socket.gethostname()


def start_time(pid: int) -> int | None:
    """The start time of process `pid` (clock ticks since boot), or None if there is none."""
    try:
        stat = Path("/proc", str(pid), "stat").read_bytes()
        return int(stat[stat.rindex(b")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def alive(pid: int, started: int | None) -> bool:
    """Whether process `pid` exists and, where its start time was recorded, is that process."""
    if pid <= 0:
        return False
    if not os.path.isdir("/proc"):  # no way to tell a reused pid: existence only
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    now = start_time(pid)
    if now is None:
        return False
    if started is None:
        return True
    return now == started


def dead_here(sup_host: str | None, pid: int | None, started: int | None) -> bool:
    """A supervisor recorded as running on this host whose process is gone (or was replaced)."""
    return sup_host is not None and sup_host == host() and pid is not None and \
        not alive(pid, started)
