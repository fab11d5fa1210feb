"""A zombie is dead: a process that exited but was not reaped (where PID 1 does not reap, a
SIGKILLed supervisor stays one) must not hold its id or its task as a live supervisor."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from gitliza.services import procinfo

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc")


def _state(pid: int) -> bytes:
    stat = Path("/proc", str(pid), "stat").read_bytes()
    return stat[stat.rindex(b")") + 2:].split()[0]


def test_a_killed_unreaped_process_is_dead_though_proc_still_lists_it() -> None:
    pid = os.fork()
    if pid == 0:  # the child: wait to be killed
        while True:
            time.sleep(1)
    try:
        started = procinfo.start_time(pid)
        assert started is not None and procinfo.alive(pid, started)
        assert not procinfo.dead_here(procinfo.host(), pid, started)
        os.kill(pid, signal.SIGKILL)
        # Wait for its exit without reaping it (WNOWAIT): /proc keeps the entry, pid and start
        # time, as where PID 1 does not reap; no clock involved.
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        assert _state(pid) == b"Z"
        assert Path("/proc", str(pid)).exists()
        assert not procinfo.alive(pid, started)
        assert not procinfo.alive(pid, None)
        assert procinfo.dead_here(procinfo.host(), pid, started)
    finally:
        os.waitpid(pid, 0)
