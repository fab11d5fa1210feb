"""`git liza web`: serve the board on a local port, Jupyter style (one printed URL with a random
token; gitliza/web/auth.py), and open the browser on it."""
from __future__ import annotations

import os
import signal
import socket
import sys
import threading
from typing import Any, Callable

from gitliza.errors import MissingDependency, ValidationError

INSTALL_HINT = "pip install 'gitliza[web]'"
DEFAULT_PORT = 7150
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def require_extra() -> None:
    """Exit 5 with what to install when the `web` extra is missing."""
    missing = []
    for module in ("starlette", "uvicorn", "markdown_it", "pygments"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        raise MissingDependency(f"git liza web needs {', '.join(missing)}", hint=INSTALL_HINT)


def bind(host: str, port: int | None) -> socket.socket:
    """A listening socket: `port`, or the default one (else any free one) when none was asked."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for candidate in ([port] if port is not None else [DEFAULT_PORT, 0]):
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, candidate))
        except OSError as err:
            sock.close()
            if port is not None:
                raise ValidationError(f"cannot listen on {host}:{port}: {err.strerror}") from None
            continue
        sock.listen(128)
        sock.set_inheritable(True)
        return sock
    raise ValidationError(f"cannot listen on {host}")  # pragma: no cover - port 0 always binds


def url(host: str, port: int, token: str) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/?token={token}"


def serve(open_liza: Callable[[], Any], host: str = "127.0.0.1", port: int | None = None, *,
          open_browser: bool = True, read_only: bool = False,
          say: Callable[[str], None] = lambda s: print(s, flush=True)) -> signal.Signals | None:
    """Serve until a signal; returns the first one (None: the server ended by itself). uvicorn
    re-raises it once shut down: a SIGINT with Python's default handler is a KeyboardInterrupt
    out of here, a SIGTERM ends the process, one the process ignores returns."""
    require_extra()
    from gitliza.git import longlived
    longlived.install()  # before uvicorn's threads: glibc's arenas, pack windows (longlived.py)
    import uvicorn

    from gitliza.web.app import build
    from gitliza.web.auth import new_token
    loopback = host in LOOPBACK
    if not loopback:
        sys.stderr.write(f"gitliza: warning: serving on {host}: anyone who can reach it and gets "
                         "the URL can act on this board as the human; prefer 127.0.0.1 and an "
                         "SSH tunnel\n")
    opened = open_liza()  # fails here (not in the server) when there is no repository
    del opened
    sock = bind(host, port)
    actual = sock.getsockname()[1]
    token = os.environ.get("GITLIZA_WEB_TOKEN") or new_token()
    app = build(open_liza, token, read_only=read_only, loopback=loopback,
                cookie=f"gitliza_web_{actual}")
    address = url("127.0.0.1" if host in ("0.0.0.0", "::") else host, actual, token)
    say(f"gitliza web: serving the board{' (read-only)' if read_only else ''} at\n    {address}")
    config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False,
                            timeout_graceful_shutdown=5)
    bus = app.app.state.bus

    got: list[signal.Signals] = []

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            # One stop per signal: through git, the group's SIGINT comes twice (git forwards the
            # one it got), which uvicorn would take for a second Ctrl-C, a forced exit that cuts
            # the lifespan's shutdown short with a traceback. The graceful shutdown is bounded
            # anyway (timeout_graceful_shutdown).
            if signal.Signals(sig) in got:
                return
            got.append(signal.Signals(sig))
            bus.shutdown()  # open pages' streams end, so the connections close and it can stop
            super().handle_exit(sig, frame)
    server = Server(config)
    if open_browser:
        threading.Timer(0.5, _open, args=(address,)).start()
    server.run(sockets=[sock])
    return got[0] if got else None


def _open(address: str) -> None:
    import webbrowser
    try:
        webbrowser.open(address)
    except Exception:  # no browser here: the printed URL is the way in
        pass
