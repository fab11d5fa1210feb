"""Running the `git` executable for the transport: bounded, quiet, and never waiting for a human.

No terminal prompts (GIT_TERMINAL_PROMPT=0), no stdin, its own session (nothing can ask a terminal
for a password), and a timeout that kills the whole process group (git spawns ssh, remote
helpers, pack-objects). git's messages are kept untranslated (LC_ALL=C) because callers parse
them; its stderr lines can be handed, as they come, to a `Progress` callback.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable

from gitliza.errors import GitFailure, MissingDependency

Progress = Callable[[str], None]
"""Receives each line git writes on stderr (progress, `remote:` lines), from a reader thread."""

PROGRESS_LINE = re.compile(r"\d+% \(\d+/\d+\)")
_KILL_GRACE = 5.0  # seconds to reap a killed git before giving up on it
_READER_GRACE = 1.0  # seconds to drain pipes after git exits (a detached ssh master may hold them)


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str


def _git_env() -> dict[str, str]:
    env = dict(os.environ)
    env["GIT_TERMINAL_PROMPT"] = "0"  # fail instead of asking for a username/password
    env["LC_ALL"] = "C"  # we parse git's messages: keep them untranslated
    env.pop("LANGUAGE", None)
    return env


def git_executable() -> str:
    exe = shutil.which("git")
    if exe is None:
        raise MissingDependency("the git executable was not found on PATH", hint="install git >= 2.29")
    return exe


def _pump(stream: IO[bytes], sink: list[bytes], progress: Progress | None) -> None:
    """Copy a pipe into `sink`; hand complete lines (split on CR or LF) to `progress`."""
    pending = b""
    fd = stream.fileno()
    # os.read returns what is there now: progress lines arrive as git writes them.
    for chunk in iter(lambda: os.read(fd, 65536), b""):
        sink.append(chunk)
        if progress is None:
            continue
        *lines, pending = re.split(rb"[\r\n]", pending + chunk)
        try:
            for line in filter(bytes.strip, lines):
                progress(line.decode("utf-8", "replace"))
        except Exception:
            progress = None  # a broken callback must not stop the draining (git would block)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    # git spawns helpers (ssh, remote-helpers, pack-objects): kill them all, not just git.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        proc.wait(_KILL_GRACE)
    except subprocess.TimeoutExpired:
        pass


def run_git(
    repo_path: Path | str, args: list[str], *, timeout: float, progress: Progress | None = None,
    env: dict[str, str] | None = None,
) -> Run:
    """Run git in `repo_path`; bounded by `timeout`; never raises for a non-zero exit. `env`:
    variables set on top of the usual environment."""
    cmd = [git_executable(), *args]
    try:
        proc = subprocess.Popen(
            cmd, cwd=repo_path, env={**_git_env(), **(env or {})}, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,  # no controlling terminal, and one group to kill on timeout
        )
    except FileNotFoundError as exc:
        raise MissingDependency(f"cannot run git: {exc}", hint="install git >= 2.29") from exc
    assert proc.stdout is not None and proc.stderr is not None
    out: list[bytes] = []
    err: list[bytes] = []
    # Threads rather than communicate(): an ssh ControlPersist master can inherit the pipes and
    # keep them open after git exits; we wait for git, then drain the pipes for a bounded time.
    readers = [
        threading.Thread(target=_pump, args=(proc.stdout, out, None), daemon=True),
        threading.Thread(target=_pump, args=(proc.stderr, err, progress), daemon=True),
    ]
    for t in readers:
        t.start()
    # A waiter thread blocks in waitpid and sets an event the moment git exits: `Popen.wait(timeout)`
    # polls with sleeps doubling up to 50 ms, which noticed a ~50 ms git fetch ~13 ms late, every
    # time. On the timeout the group is killed and waited for a bounded time, as before.
    exited = threading.Event()

    def wait() -> None:
        proc.wait()
        exited.set()
    threading.Thread(target=wait, daemon=True).start()
    if not exited.wait(timeout):
        _kill_group(proc)
        raise GitFailure(
            f"git {args[0]} timed out after {timeout:g} s", hint="check the network and the remote"
        ) from None
    for t in readers:
        t.join(_READER_GRACE)
    return Run(proc.returncode, _decode(out), _decode(err))


def _decode(chunks: list[bytes]) -> str:
    return b"".join(chunks).decode("utf-8", "replace")


def local_git(repo_path: Path | str, *args: str, env: dict[str, str] | None = None) -> Run:
    """A local (non-network) git command: short timeout, same hygiene."""
    return run_git(repo_path, list(args), timeout=30.0, env=env)


def error_line(stderr: str) -> str:
    """The one line of git's stderr that says what went wrong."""
    lines = [ln.strip() for ln in re.split(r"[\r\n]", stderr) if ln.strip()]
    for ln in lines:
        if ln.startswith(("fatal:", "error:")):
            return ln
    return lines[-1] if lines else "no message"


def progress_flag(progress: Progress | None) -> list[str]:
    # stderr is a pipe, so git stays quiet unless asked; the callback decides what to show.
    return ["--progress"] if progress is not None else []


def print_progress(line: str) -> None:
    """A ready-made Progress: git's lines on our stderr, overwriting in place on a terminal."""
    end = "\r" if sys.stderr.isatty() and PROGRESS_LINE.search(line) else "\n"
    sys.stderr.write(line + end)
    sys.stderr.flush()
