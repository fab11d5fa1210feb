"""A real `git daemon` for tests: git:// transport on 127.0.0.1, push enabled, hooks run.

    from tests.gitdaemon import GitDaemon, git_daemon   # the fixture, imported into the module

    def test_x(git_daemon: GitDaemon) -> None:
        bare = git_daemon.init_bare("remote.git")       # under git_daemon.base_path
        url = git_daemon.url("remote.git")              # git://127.0.0.1:<port>/remote.git

Every wait is bounded; a daemon that does not come up fails with its own stderr in the message.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Iterator

import pytest

READY = b"Ready to rumble"  # what `git daemon --verbose` logs once its socket is bound


class GitDaemonError(RuntimeError):
    pass


def _free_port() -> int:
    # Bind port 0 and let it go: another process may take the port before the daemon binds it,
    # which the caller detects (the daemon exits with "Address already in use") and retries.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class GitDaemon:
    """Context manager around one `git daemon` process serving every repository under base_path."""

    def __init__(self, base_path: Path, *, start_timeout: float = 10.0, attempts: int = 5) -> None:
        self.base_path = Path(base_path).resolve()
        self.start_timeout = start_timeout
        self.attempts = attempts
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    def __enter__(self) -> GitDaemon:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        last = ""
        for _ in range(self.attempts):
            self.port = _free_port()
            self._spawn()
            state = self._wait_ready(deadline)
            if state == "ready":
                return
            last = self.log()
            self.stop()
            if state == "timeout" or "already in use" not in last:
                break  # only a lost port race is worth another attempt
        raise GitDaemonError(f"git daemon did not start on 127.0.0.1 (last port {self.port}): {last!r}")

    def _spawn(self) -> None:
        self._log = tempfile.TemporaryFile()  # a file, not a pipe: a chatty daemon cannot block
        cmd = [
            "git", "daemon", "--verbose", "--informative-errors", "--reuseaddr",
            f"--base-path={self.base_path}", "--export-all", "--enable=receive-pack",
            "--listen=127.0.0.1", f"--port={self.port}", str(self.base_path),
        ]
        # Own session: `git daemon` forks git-daemon, which forks one child per connection;
        # stop() signals the whole group.
        self._proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._log,
            start_new_session=True,
        )

    def _wait_ready(self, deadline: float) -> str:
        """'ready' (bound, and a connection is accepted), 'exited' or 'timeout'."""
        assert self._proc is not None
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                return "exited"
            # The log line proves that *our* daemon bound the port (a connect alone could reach
            # whoever won the port race); the connect proves it is accepting.
            if READY in self._log_bytes() and self._accepts():
                return "ready"
            time.sleep(0.02)
        return "timeout"

    def _accepts(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1.0):
                return True
        except OSError:
            return False

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            # Signal the group while its leader is unreaped, so the group id cannot be anyone
            # else's: the daemon and its per-connection children go together.
            _signal_group(proc, signal.SIGTERM)
            try:
                proc.wait(5.0)
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
                proc.wait(5.0)
        if self._log is not None:
            self._log.close()
            self._log = None

    # -- use -------------------------------------------------------------------------------------

    def url(self, repo_name: str) -> str:
        if not self.port or self._proc is None:
            raise GitDaemonError("git daemon is not running")
        return f"git://127.0.0.1:{self.port}/{repo_name}"

    def init_bare(self, repo_name: str) -> Path:
        """Create an empty bare repository under base_path (served as url(repo_name))."""
        path = self.base_path / repo_name
        subprocess.run(
            ["git", "init", "-q", "--bare", "-b", "main", str(path)],
            check=True, capture_output=True, timeout=30,
        )
        return path

    def log(self) -> str:
        return self._log_bytes().decode("utf-8", "replace")

    def _log_bytes(self) -> bytes:
        if self._log is None:
            return b""
        self._log.flush()
        return os.pread(self._log.fileno(), 1 << 20, 0)


def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


@pytest.fixture
def git_daemon(tmp_path: Path) -> Iterator[GitDaemon]:
    """A running daemon serving tmp_path/daemon; stopped after the test."""
    base = tmp_path / "daemon"
    base.mkdir()
    with GitDaemon(base) as daemon:
        yield daemon
