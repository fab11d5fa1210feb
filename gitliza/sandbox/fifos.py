"""The supervisor's end of an agent's channel, over FIFOs: an agent has no unix socket of its own
(seccomp.py), so its client (client.py) asks for a connection by writing a random name into the
door (a FIFO in the broker's directory, read-only inside) after making two FIFOs of that name in
its connection directory (`<broker dir>-conn`, the one place of the channel it may write):
`NAME.up` (client -> supervisor) and `NAME.down` (supervisor -> client).

The names come from the agent, so they are opened as it cannot turn them elsewhere: only
`[0-9a-f]{32}`, relative to the connection directory held open, never through a link
(O_NOFOLLOW), non-blocking, and used only if they are FIFOs. A connection that never speaks is
dropped after CONNECT_WAIT; at most MAX_CONNECTIONS are served at once (the others are answered
with one line saying so).
"""
from __future__ import annotations

import json
import os
import re
import select
import shutil
import stat
import threading
from pathlib import Path
from typing import Any, BinaryIO, Callable

from gitliza.sandbox.policy import CONN_SUFFIX

DOOR = "door"
MAX_CONNECTIONS = 16
CONNECT_WAIT = 30.0  # seconds a client has to open its end and speak
_NAME = re.compile(rb"[0-9a-f]{32}")
BUSY = json.dumps({"out": "", "err": f"gitliza sandbox: more than {MAX_CONNECTIONS} calls at "
                   "once; retry when one has ended\n", "exit": 75}).encode() + b"\n"


class Duplex:
    """One connection: reads from `up`, writes to `down` (the broker's file object)."""

    def __init__(self, up: int, down: int) -> None:
        self.r: BinaryIO = os.fdopen(up, "rb")
        self.w: BinaryIO = os.fdopen(down, "wb")

    def readline(self, limit: int = -1) -> bytes:
        return self.r.readline(limit)

    def write(self, data: bytes) -> Any:
        return self.w.write(data)

    def flush(self) -> None:
        self.w.flush()

    def close(self) -> None:
        for f in (self.w, self.r):
            try:
                f.close()
            except OSError:
                pass


class FifoServer:
    """Serves the door in `directory` (connections in `directory` + CONN_SUFFIX): `serve(conn)`
    in a thread of its own per connection; `close` stops accepting."""

    def __init__(self, directory: Path, serve: Callable[[Duplex], None], name: str) -> None:
        self.door = directory / DOOR
        self.conn = Path(str(directory) + CONN_SUFFIX)
        self.conn.mkdir(mode=0o700)
        os.mkfifo(self.door, 0o600)
        self._serve = serve
        self._fd = os.open(self.door, os.O_RDWR | os.O_CLOEXEC)  # never at its end
        self._dir = os.open(self.conn, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name=name).start()

    def close(self) -> None:
        self._closed = True
        try:
            os.write(self._fd, b"\n")  # wakes the accepting thread, which closes the door
        except OSError:
            pass
        try:
            self.door.unlink()
        except OSError:
            pass
        shutil.rmtree(self.conn, ignore_errors=True)  # links planted there are removed, not followed

    def _accept(self) -> None:
        door = os.fdopen(self._fd, "rb", buffering=0)
        pending = b""
        try:
            while not self._closed:
                chunk = door.read(4096)
                if not chunk:
                    return
                pending += chunk
                *lines, pending = pending.split(b"\n")
                pending = pending[-64:]  # a name is 32 bytes: no more is kept
                for line in lines:
                    if not _NAME.fullmatch(line) or self._closed:
                        continue
                    if self._slots.acquire(blocking=False):
                        threading.Thread(target=self._connect, args=(line.decode(),),
                                         daemon=True).start()
                    else:
                        self._busy(line.decode())
        finally:
            door.close()
            os.close(self._dir)

    def _connect(self, name: str) -> None:
        """Serve one connection; its slot was taken for it and is given back here."""
        fds: list[int] = []
        try:
            fds.append(self._open(name + ".down", os.O_WRONLY))
            fds.append(self._open(name + ".up", os.O_RDONLY))
            down, up = fds
            poller = select.poll()  # not select(): it refuses a descriptor past 1023
            poller.register(up, select.POLLIN)
            ready = poller.poll(CONNECT_WAIT * 1000)
            for fd in fds:
                os.set_blocking(fd, True)
            conn, fds = Duplex(up, down), []
            try:
                if ready:
                    self._serve(conn)
            finally:
                conn.close()
        except OSError:  # not a FIFO, a link, no reader: not a connection; or a broken pipe
            pass
        finally:
            for fd in fds:
                os.close(fd)
            self._slots.release()

    def _busy(self, name: str) -> None:
        """Both ends opened (the client's open returns), the answer written, both closed."""
        fds = []
        try:
            fds.append(self._open(name + ".down", os.O_WRONLY))
            fds.append(self._open(name + ".up", os.O_RDONLY))
            os.write(fds[0], BUSY)
        except OSError:
            pass
        finally:
            for fd in fds:
                os.close(fd)

    def _open(self, name: str, mode: int) -> int:
        fd = os.open(name, mode | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=self._dir)
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            os.close(fd)
            raise OSError(f"{name} is not a FIFO")
        return fd
