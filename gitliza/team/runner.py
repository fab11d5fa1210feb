"""Starting the agent process, stopping it, and what its exit code means.

The agent runs in its own process group (a CLI agent starts tools, shells and test runners of its
own): stopping it sends SIGTERM to the whole group, then SIGKILL after a grace period, so nothing
it started keeps working on a task the supervisor gave away.
"""
from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Callable, Mapping, Sequence

from gitliza.errors import MissingDependency
from gitliza.services import procinfo

STOP_GRACE = 5.0  # seconds between SIGTERM and SIGKILL
# On SIGINT/SIGTERM the whole team must be gone within 5 s: the agent gets less.
SIGNAL_GRACE = 1.5


def require(executable: str) -> None:
    """Refuse (exit 5) an agent program that is neither on PATH nor a file."""
    if shutil.which(executable) is None and not Path(executable).is_file():
        raise MissingDependency(f"agent command {executable!r} not found on PATH",
                                hint="install the agent CLI, or pass `-- COMMAND ARGS`")


@dataclass
class AgentProcess:
    """One running agent session."""

    proc: subprocess.Popen[bytes]
    stopped_by: str | None = None  # why the supervisor stopped it (None: it exited by itself)
    group: bool = True  # the agent leads its own process group (not in an interactive session)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _timer: threading.Timer | None = None
    _kill_at: float = 0.0
    _done: bool = False

    @classmethod
    def start(cls, argv: Sequence[str], env: Mapping[str, str], cwd: Path,
              interactive: bool = False, stdin: Path | None = None,
              output: IO[bytes] | None = None) -> AgentProcess:
        """A batch agent gets its own session (its process group is killed as a whole) and
        `stdin` (the prompt file) or nothing as standard input; an interactive one keeps the
        terminal (stdin, and the foreground process group, which a new session would lose), so
        only its own pid can be signalled. `output`: the file that gets the agent's stdout and
        stderr (its log). Either way the agent dies with the thread that calls this
        (procinfo.with_parent_death)."""
        exe = argv[0] if os.path.isabs(argv[0]) or os.sep not in argv[0] else \
            os.path.join(cwd, argv[0])
        if shutil.which(exe) is None:  # behind setpriv it would only be an exit 126 or 127
            raise MissingDependency(f"cannot start agent {argv[0]!r}: not an executable file")
        run, preexec = procinfo.with_parent_death(argv)
        try:
            if interactive:
                proc = subprocess.Popen(run, env=dict(env), cwd=cwd, preexec_fn=preexec)
            else:
                with open(stdin if stdin is not None else os.devnull, "rb") as f:
                    proc = subprocess.Popen(run, env=dict(env), cwd=cwd,
                                            start_new_session=True, stdin=f, stdout=output,
                                            stderr=output, preexec_fn=preexec)
        except OSError as e:
            raise MissingDependency(f"cannot start agent {argv[0]!r}: {e.strerror}") from None
        return cls(proc, group=not interactive)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait(self, tick: Callable[[], None] | None = None, every: float = 1.0) -> int:
        """Wait for the agent to exit (its exit code), calling `tick` every `every` seconds
        meanwhile (the supervisor's watchdog stamp: the lease keeper renews only while it
        moves)."""
        # Reap only after the group is killed: once the leader is reaped its pid (the group id)
        # may be reused, and a late signal would hit a stranger.
        if self.group:
            _wait_exited(self.proc.pid, tick, every)
        else:
            while True:
                try:
                    self.proc.wait(every if tick is not None else None)
                    break
                except subprocess.TimeoutExpired:
                    assert tick is not None
                    tick()
        with self._lock:
            self._done = True
            if self._timer is not None:
                self._timer.cancel()
            if self.group:
                # Whatever the agent started (test runners, dev servers) must not outlive its
                # session, whether it exited by itself or was stopped.
                _killpg(self.proc.pid, signal.SIGKILL)
        return self.proc.wait()

    def stop(self, why: str, grace: float = STOP_GRACE) -> None:
        """SIGTERM to the agent's process group, SIGKILL after `grace` seconds (at once for 0; a
        later stop with a shorter grace brings the SIGKILL forward). Safe from any thread and
        more than once; a no-op once the agent has exited (its exit code stands)."""
        # Bounded: a stop past its deadline must not wait on a wedged holder of the lock.
        locked = self._lock.acquire(timeout=1.0)
        try:
            if self._done or self._exited():
                return
            if self.stopped_by is None:
                self.stopped_by = why
            if grace <= 0:
                self._signal(signal.SIGKILL)
                return
            self._signal(signal.SIGTERM)
            due = time.monotonic() + grace
            if self._timer is None or due < self._kill_at:
                if self._timer is not None:
                    self._timer.cancel()
                self._kill_at = due
                self._timer = threading.Timer(grace, self._kill)
                self._timer.daemon = True
                self._timer.start()
        finally:
            if locked:
                self._lock.release()

    def _exited(self) -> bool:
        """Whether the agent has exited, without reaping it (its pid must stay ours)."""
        if self.proc.returncode is not None:
            return True
        try:
            return os.waitid(os.P_PID, self.proc.pid,
                             os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True

    def _kill(self) -> None:
        with self._lock:
            if not self._done:
                self._signal(signal.SIGKILL)

    def _signal(self, sig: signal.Signals) -> None:
        if self.group:
            _killpg(self.proc.pid, sig)
        else:
            try:
                self.proc.send_signal(sig)
            except ProcessLookupError:
                pass


def _wait_exited(pid: int, tick: Callable[[], None] | None, every: float) -> None:
    """Block until child `pid` has exited, without reaping it: on its pidfd (Linux 5.3+) with a
    timeout for `tick`, else by waitid(WNOWAIT) (blocking when there is no tick, else a short
    poll)."""
    fd = -1
    poller = select.poll()  # not select(): it refuses a descriptor past 1023
    if tick is not None and hasattr(os, "pidfd_open"):
        try:
            fd = os.pidfd_open(pid)
            poller.register(fd, select.POLLIN)
        except OSError:
            fd = -1
    try:
        while True:
            if fd >= 0:
                if poller.poll(every * 1000):
                    return
            else:
                flags = os.WEXITED | os.WNOWAIT | (os.WNOHANG if tick is not None else 0)
                try:
                    if os.waitid(os.P_PID, pid, flags) is not None:
                        return
                except ChildProcessError:
                    return  # already reaped
                time.sleep(min(every, 0.1))
            if tick is not None:
                tick()
    finally:
        if fd >= 0:
            os.close(fd)


def _killpg(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # already gone
