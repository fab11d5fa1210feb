"""Whether a supervisor recorded on the board is still alive on this host, and how a process
started here dies with the thread that started it (the parent-death signal).

A supervisor's token carries its host, pid and the process's start time (`/proc/PID/stat`, field
22, in clock ticks since boot). On the same host, a pid that no longer exists, or that now names a
process started at another time (the pid was reused), or a zombie (exited, not yet reaped), is a
dead supervisor: a new one may take
its id at once instead of waiting for the token to expire. On another host nothing can be known
from here (`--takeover` is the human's word for it).
"""
from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

PR_SET_PDEATHSIG = 1


def host(repo: Any = None) -> str:
    """This machine's name as the board records it: `git config liza.machine` of `repo` (a
    pygit2 Repository) when set, else the host name. The setting makes several clones on one
    host count as several machines (`git liza machines`), or keeps a machine's name across a new
    host name."""
    if repo is not None:
        try:
            name = str(repo.config["liza.machine"]).strip()
        except (KeyError, ValueError, OSError):
            name = ""
        if name:
            return name
    return socket.gethostname()


def start_time(pid: int) -> int | None:
    """The start time of process `pid` (clock ticks since boot), or None if there is none or it
    is a zombie: a process that has exited but was not reaped (its parent, or a PID 1 that does
    not reap, as in a container started without an init) is dead, whatever /proc still lists."""
    try:
        stat = Path("/proc", str(pid), "stat").read_bytes()
        fields = stat[stat.rindex(b")") + 2:].split()
        if fields[0] in (b"Z", b"X"):  # zombie, dead
            return None
        return int(fields[19])
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


def dead_here(sup_host: str | None, pid: int | None, started: int | None,
              repo: Any = None) -> bool:
    """A supervisor recorded as running on this machine (`host(repo)`) whose process is gone (or
    was replaced)."""
    return sup_host is not None and sup_host == host(repo) and pid is not None and \
        not alive(pid, started)


def with_parent_death(argv: Sequence[str], sig: signal.Signals = signal.SIGKILL
                      ) -> tuple[list[str], Callable[[], None] | None]:
    """The argv and `preexec_fn` that start `argv` with the parent-death signal `sig`: through
    util-linux `setpriv --pdeathsig` (it sets the signal and execs the program: about 1 ms), or,
    where there is no setpriv, a `preexec_fn` (which makes Python fork instead of vfork: about
    25 ms more per launch)."""
    if sys.platform.startswith("linux"):
        setpriv = shutil.which("setpriv")
        if setpriv is not None:
            return [setpriv, "--pdeathsig", sig.name.removeprefix("SIG"), "--", *argv], None
    return list(argv), parent_death_signal(sig)


def parent_death_signal(sig: signal.Signals = signal.SIGKILL) -> Callable[[], None] | None:
    """A `preexec_fn` that sends the child `sig` when the thread that forks it dies, or None
    where the platform has no such thing. The libc function is looked up here, in the parent:
    the child between fork and exec calls it and nothing else."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()
    signum = int(sig)

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)
        if os.getppid() != parent:  # the supervisor died before the signal was armed
            os._exit(1)
    return preexec
