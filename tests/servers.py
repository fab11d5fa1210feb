"""Real git servers for tests, from the distribution's packages: an OpenSSH server (ssh://) and
`git http-backend` behind nginx with fcgiwrap (smart HTTP), each on 127.0.0.1 on a free port,
under a temp dir, with throw-away keys. Both run whatever hooks the bare repositories have (the
gitliza server hook included), as a hosted server would.

    from tests.servers import ssh_server, http_server   # the fixtures

    def test_x(ssh_server: Server) -> None:
        bare = ssh_server.init_bare("remote.git")
        url = ssh_server.url("remote.git")         # ssh://user@127.0.0.1:PORT/.../remote.git
        # git finds the key through GIT_SSH_COMMAND, which the fixture sets for the test

Missing packages skip the test with one line (`.ci/run` installs them where it can). Running as
root needs care: sshd wants its privilege-separation directory and logs in root by key only,
nginx's workers would drop to `nobody` and could not reach a socket under a root-only temp dir.
Every wait is bounded; a server that does not come up fails with its own log in the message.
"""
from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest

from tests.gitdaemon import _free_port

HTTP_BACKEND = "/usr/lib/git-core/git-http-backend"
START_TIMEOUT = 15.0


class ServerError(RuntimeError):
    pass


class Server:
    """One running server: `root` holds the served bare repositories."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = 0
        self.env: dict[str, str] = {}  # what a client needs in its environment
        self._procs: list[subprocess.Popen[bytes]] = []
        self._logs: list[Path] = []

    def init_bare(self, name: str) -> Path:
        path = self.root / name
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True,
                       capture_output=True, timeout=30)
        return path

    def url(self, name: str) -> str:
        raise NotImplementedError

    def _spawn(self, args: list[str], log: Path) -> None:
        self._logs.append(log)
        with open(log, "ab") as out:
            self._procs.append(subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL,
                                                start_new_session=True))

    def _wait_port(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            for p in self._procs:
                if p.poll() is not None:
                    raise ServerError(f"{p.args[0]} exited {p.returncode}: {self.log()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        raise ServerError(f"nothing listens on 127.0.0.1:{self.port}: {self.log()}")

    def _listening(self) -> bool:
        """Whether the server just spawned listens on self.port; False when the port was taken
        meanwhile (the caller tries another), any other failure raised."""
        try:
            self._wait_port()
            return True
        except ServerError:
            if "Address already in use" not in self.log():
                raise
            return False

    def log(self) -> str:
        return " | ".join(p.read_text(errors="replace")[-2000:] for p in self._logs if p.exists())

    def stop(self) -> None:
        for p in reversed(self._procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait(timeout=5)
        self._procs.clear()


class SshServer(Server):
    """sshd -D on 127.0.0.1: this user logs in with a throw-away key; no password, no PAM."""

    def __init__(self, root: Path, state: Path) -> None:
        super().__init__(root)
        self.user = getpass.getuser()
        self.state = state
        state.mkdir(parents=True, exist_ok=True)
        for key in ("host_key", "user_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gitliza-test",
                            "-f", str(state / key)], check=True, capture_output=True, timeout=30)
        shutil.copy(state / "user_key.pub", state / "authorized_keys")
        self.env = {"GIT_SSH_COMMAND": (
            f"ssh -F /dev/null -i {state / 'user_key'} -o IdentitiesOnly=yes -o BatchMode=yes "
            "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR")}

    def start(self) -> None:
        if os.geteuid() == 0:
            # sshd refuses to start as root without its privilege-separation directory (the
            # package's service unit makes it at boot; a container has none).
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        for _attempt in range(5):
            self.port = _free_port()
            cfg = self.state / "sshd_config"
            cfg.write_text("\n".join([
                "ListenAddress 127.0.0.1", f"Port {self.port}",
                f"HostKey {self.state / 'host_key'}", f"PidFile {self.state / 'sshd.pid'}",
                f"AuthorizedKeysFile {self.state / 'authorized_keys'}",
                "PubkeyAuthentication yes", "PasswordAuthentication no",
                "KbdInteractiveAuthentication no", "PermitRootLogin prohibit-password",
                "StrictModes no", "UsePAM no", "PrintMotd no", "PrintLastLog no",
                f"AllowUsers {self.user}", "LogLevel ERROR", ""]))
            self._spawn(["/usr/sbin/sshd", "-D", "-e", "-f", str(cfg)], self.state / "sshd.log")
            if self._listening():
                return
            self.stop()
        raise ServerError(f"sshd could not bind a port: {self.log()}")

    def url(self, name: str) -> str:
        return f"ssh://{self.user}@127.0.0.1:{self.port}{self.root / name}"


class HttpServer(Server):
    """nginx (one worker) passing /<repo>/... to fcgiwrap running git http-backend: smart HTTP,
    push allowed (http.receivepack in each served repository)."""

    def __init__(self, root: Path, state: Path) -> None:
        super().__init__(root)
        self.state = state
        state.mkdir(parents=True, exist_ok=True)
        self.sock = state / "fcgiwrap.sock"

    def start(self, hook_env: dict[str, str] | None = None) -> None:
        self._spawn(["fcgiwrap", "-c", "4", "-s", f"unix:{self.sock}"], self.state / "fcgi.log")
        deadline = time.monotonic() + START_TIMEOUT
        while not self.sock.exists():
            if time.monotonic() > deadline or self._procs[0].poll() is not None:
                raise ServerError(f"fcgiwrap did not come up: {self.log()}")
            time.sleep(0.05)
        params = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.state),
                  **(hook_env or {})}
        extra = "".join(f"      fastcgi_param {k} \"{v}\";\n" for k, v in params.items())
        # As root the workers would run as `nobody`, which cannot reach the socket in a root-only
        # temp dir: keep them as root (a test server on 127.0.0.1, gone with the test).
        user = "user root root;\n" if os.geteuid() == 0 else ""
        for _attempt in range(5):
            self.port = _free_port()
            d = self.state
            cfg = d / "nginx.conf"
            cfg.write_text(
                f"daemon off;\nmaster_process on;\nworker_processes 1;\npid {d}/nginx.pid;\n{user}"
                f"error_log {d}/error.log;\nevents {{ worker_connections 64; }}\n"
                "http {\n  access_log off;\n"
                f"  client_body_temp_path {d}/body; fastcgi_temp_path {d}/fcgi;\n"
                f"  proxy_temp_path {d}/proxy; uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;\n"
                f"  server {{\n    listen 127.0.0.1:{self.port};\n    client_max_body_size 0;\n"
                "    location / {\n      include /etc/nginx/fastcgi_params;\n"
                f"      fastcgi_param SCRIPT_FILENAME {HTTP_BACKEND};\n"
                f"      fastcgi_param GIT_PROJECT_ROOT {self.root};\n"
                "      fastcgi_param GIT_HTTP_EXPORT_ALL \"\";\n"
                "      fastcgi_param PATH_INFO $uri;\n" + extra +
                f"      fastcgi_pass unix:{self.sock};\n    }}\n  }}\n}}\n")
            self._spawn(["nginx", "-c", str(cfg), "-p", str(d), "-e", str(d / "error.log")],
                        d / "nginx.log")
            if self._listening():
                return
            self._procs.pop().wait(timeout=5)
        raise ServerError(f"nginx could not bind a port: {self.log()}")

    def init_bare(self, name: str) -> Path:
        path = super().init_bare(name)
        # http-backend enables push for an authenticated REMOTE_USER; nginx's stock fastcgi_params
        # already send an empty one, so say it in the repository, as a server admin would.
        subprocess.run(["git", "-C", str(path), "config", "http.receivepack", "true"], check=True,
                       capture_output=True, timeout=30)
        return path

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"


def _need(*programs: str) -> None:
    missing = [p for p in programs if shutil.which(p) is None and not Path(p).exists()]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (Debian: openssh-server, nginx, "
                    "fcgiwrap; .ci/run installs them where it can)")


@pytest.fixture
def ssh_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SshServer]:
    _need("/usr/sbin/sshd", "ssh", "ssh-keygen")
    server = SshServer(tmp_path / "srv", tmp_path / "sshd")
    server.root.mkdir()
    try:
        server.start()
    except ServerError as e:
        server.stop()
        pytest.fail(f"sshd: {e}")
    for k, v in server.env.items():
        monkeypatch.setenv(k, v)
    yield server
    server.stop()


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[HttpServer]:
    _need("nginx", "fcgiwrap", HTTP_BACKEND)
    server = HttpServer(tmp_path / "srv", tmp_path / "http")
    server.root.mkdir()
    try:
        server.start({"GITLIZA_HOOK_TRACE": str(tmp_path / "hook-trace")})
    except ServerError as e:
        server.stop()
        pytest.fail(f"nginx/fcgiwrap: {e}")
    yield server
    server.stop()
