"""A unix socket served by a thread per connection: the broker's (broker.py) and the network
gate's (net.py), both in the directory an agent's sandbox mounts at BROKER_INSIDE."""
from __future__ import annotations

import socket
import threading
from pathlib import Path
from typing import Callable


class UnixServer:
    """Listens on `path` and calls `serve(conn)` in a thread of its own for each connection;
    `close` stops accepting and removes the socket."""

    def __init__(self, path: Path, serve: Callable[[socket.socket], None], name: str,
                 backlog: int = 16) -> None:
        self.path, self._serve = path, serve
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(str(path))
        self._sock.listen(backlog)
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name=name).start()

    def close(self) -> None:
        self._closed = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        try:
            self.path.unlink()
        except OSError:
            pass

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()
