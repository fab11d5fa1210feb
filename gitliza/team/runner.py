"""Starting the agent process, stopping it, and what its exit code means.

The agent runs in its own process group (a CLI agent starts tools, shells and test runners of its
own): stopping it sends SIGTERM to the whole group, then SIGKILL after a grace period, so nothing
it started keeps working on a task the supervisor gave away.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Mapping, Sequence

from gitliza.errors import MissingDependency, ValidationError

EXIT_RESTART = 42  # the agent stopped gracefully (pause, stand down, context): restart it
STOP_GRACE = 5.0  # seconds between SIGTERM and SIGKILL

# How the reference (liza-agent.sh) runs each agent CLI: the executable, and the words before
# the prompt in a non-interactive run.
CLIS: dict[str, tuple[str, tuple[str, ...]]] = {
    "claude": ("claude", ("-p",)),
    "codex": ("codex", ("exec",)),
    "gemini": ("gemini", ("-p",)),
    "mistral": ("vibe", ("-p",)),
}


class Outcome(Enum):
    DONE = "done"  # exit 0: look for more work
    RESTART = "restart"  # exit 42: graceful, restart after restart_delay
    CRASH = "crash"  # anything else: restart after a backed-off delay


def classify(code: int) -> Outcome:
    if code == 0:
        return Outcome.DONE
    if code == EXIT_RESTART:
        return Outcome.RESTART
    return Outcome.CRASH


def crash_delay(base: int, cap: int, crashes: int) -> float:
    """The delay after the `crashes`-th crash in a row: base, 2 x base, 4 x base ... up to cap."""
    if crashes <= 0:
        return 0.0
    return float(min(cap, base * 2 ** min(crashes - 1, 30)))


def command_for(cli: str | None, command: Sequence[str], prompt: str,
                interactive: bool) -> list[str]:
    """The argv that runs the agent: `-- COMMAND ARGS` with the prompt appended as the last
    argument, or the named CLI as the reference runs it. Interactive: no prompt argument (the
    user pastes it from the saved file)."""
    if command:
        argv = list(command)
    else:
        name = cli or "claude"
        if name not in CLIS:
            raise ValidationError(f"--cli must be one of {', '.join(CLIS)}, got {name!r}")
        exe, words = CLIS[name]
        argv = [exe] if interactive else [exe, *words]
    if not interactive:
        argv.append(prompt)
    if shutil.which(argv[0]) is None and not Path(argv[0]).is_file():
        raise MissingDependency(f"agent command {argv[0]!r} not found on PATH",
                                hint="install the agent CLI, or pass `-- COMMAND ARGS`")
    return argv


@dataclass
class AgentProcess:
    """One running agent session."""

    proc: subprocess.Popen[bytes]
    stopped_by: str | None = None  # why the supervisor stopped it (None: it exited by itself)

    @classmethod
    def start(cls, argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> AgentProcess:
        try:
            proc = subprocess.Popen(list(argv), env=dict(env), cwd=cwd, start_new_session=True,
                                    stdin=subprocess.DEVNULL)
        except OSError as e:
            raise MissingDependency(f"cannot start agent {argv[0]!r}: {e.strerror}") from None
        return cls(proc)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait(self) -> int:
        return self.proc.wait()

    def stop(self, why: str, grace: float = STOP_GRACE) -> None:
        """SIGTERM to the agent's process group, SIGKILL after `grace` seconds. Safe from any
        thread and more than once."""
        if self.stopped_by is None:
            self.stopped_by = why
        _killpg(self.proc.pid, signal.SIGTERM)
        timer = threading.Timer(grace, self._kill)
        timer.daemon = True
        timer.start()

    def _kill(self) -> None:
        _killpg(self.proc.pid, signal.SIGKILL)


def _killpg(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # already gone
