"""The agent's end of its channel to the board (broker.py), run inside the sandbox as
`python -I -m gitliza.sandbox.client DIR [ARGS...]`: ARGS are a `git liza` command, sent to the
supervisor, whose answer (output, errors, exit code) is printed as its own; `--mcp` relays an
MCP session (standard input and output) instead. Standard library only: nothing of gitliza is
loaded inside the sandbox for a call.

The channel is a pair of FIFOs, not a socket (the sandbox's seccomp filter refuses every unix
socket): the client makes `NAME.up` and `NAME.down` in `DIR-conn`, writes NAME into `DIR/door`,
and the supervisor opens the other ends (fifos.py).
"""
from __future__ import annotations

import errno
import json
import os
import select
import stat
import sys
import threading
import time
from typing import BinaryIO

WAIT = 30.0  # seconds for the supervisor to open its ends
# The content `add --from FILE` may relay (broker.py reads one request line of at most 1 MiB;
# JSON escaping may double it): a task file is kilobytes.
MAX_FROM = 256 * 1024


def _readable(fd: int, timeout: float) -> bool:
    """poll, not select: select() refuses a descriptor past 1023, which a busy process has."""
    p = select.poll()
    p.register(fd, select.POLLIN)
    return bool(p.poll(timeout * 1000))


def _connect(directory: str) -> tuple[BinaryIO, BinaryIO | None]:
    """The two ends of a connection; no writing end when the supervisor answered at once
    (busy: fifos.py)."""
    name = os.urandom(16).hex()
    conn = directory.rstrip("/") + "-conn"
    up, down = f"{conn}/{name}.up", f"{conn}/{name}.down"
    try:
        os.mkfifo(up, 0o600)
        os.mkfifo(down, 0o600)
        r = os.open(down, os.O_RDONLY | os.O_NONBLOCK)
        door = os.open(f"{directory}/door", os.O_WRONLY | os.O_NONBLOCK)
        try:
            os.write(door, name.encode() + b"\n")
        finally:
            os.close(door)
        deadline = time.monotonic() + WAIT
        w: int | None = None
        while w is None:
            try:
                w = os.open(up, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as e:
                if e.errno != errno.ENXIO or time.monotonic() > deadline:
                    raise
                if _readable(r, 0.002):  # answered without waiting for us
                    break
    except OSError as e:
        sys.stderr.write(f"gitliza sandbox: the supervisor's channel is gone "
                         f"({e.strerror or e}); is the supervisor still running?\n")
        raise SystemExit(5) from None
    finally:
        for p in (up, down):
            try:
                os.unlink(p)
            except OSError:
                pass
    os.set_blocking(r, True)
    if w is None:
        return os.fdopen(r, "rb"), None
    os.set_blocking(w, True)
    return os.fdopen(r, "rb"), os.fdopen(w, "wb")


def _from_file(argv: list[str]) -> tuple[list[str], str | None]:
    """`add --from FILE` is read here, inside the agent's view, and its content relayed (the
    supervisor never opens a path the agent names: broker.py); the command becomes `--from -`.
    Only a regular file (a FIFO or a device would never end) and only MAX_FROM bytes."""
    for i, a in enumerate(argv):
        if a == "--from" and i + 1 < len(argv):
            name, rest = argv[i + 1], argv[:i] + ["--from", "-"] + argv[i + 2:]
        elif a.startswith("--from="):
            name, rest = a.split("=", 1)[1], argv[:i] + ["--from", "-"] + argv[i + 1:]
        else:
            continue
        if name == "-":
            data = sys.stdin.buffer.read(MAX_FROM + 1)
        else:
            fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as f:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise ValueError(f"--from {name}: not a regular file")
                data = f.read(MAX_FROM + 1)
        if len(data) > MAX_FROM:
            raise ValueError(f"--from {name}: over {MAX_FROM // 1024} KiB (split the tasks "
                             "into several files)")
        return rest, data.decode("utf-8", "replace")
    return argv, None


def command(path: str, argv: list[str]) -> int:
    try:
        argv, stdin = _from_file(argv)
    except (OSError, ValueError) as e:
        sys.stderr.write(f"gitliza: error: {e}\n")
        return 1
    request: dict[str, object] = {"argv": argv}
    if stdin is not None:
        request["stdin"] = stdin
    r, w = _connect(path)
    with r:
        try:
            if w is not None:
                with w:
                    w.write(json.dumps(request).encode() + b"\n")
                    w.flush()
        except BrokenPipeError:  # answered before it asked: busy (fifos.py)
            pass
        line = r.readline()
    try:
        answer = json.loads(line)
        out, err, code = str(answer["out"]), str(answer["err"]), int(answer["exit"])
    except (ValueError, KeyError, TypeError):
        sys.stderr.write("gitliza sandbox: no answer from the supervisor\n")
        return 5
    sys.stdout.write(out)
    sys.stdout.flush()
    sys.stderr.write(err)
    return code


def mcp(path: str) -> int:
    r, w = _connect(path)
    if w is None:  # busy: the answer says so
        sys.stderr.write(r.readline().decode(errors="replace"))
        return 5
    w.write(b'{"mcp": true}\n')
    w.flush()

    def up() -> None:
        assert w is not None
        try:
            for line in sys.stdin.buffer:
                w.write(line)
                w.flush()
            w.close()
        except OSError:
            pass

    threading.Thread(target=up, daemon=True).start()
    out = sys.stdout.buffer
    while True:
        chunk = os.read(r.fileno(), 65536)
        if not chunk:
            return 0
        out.write(chunk)
        out.flush()


def main(argv: list[str]) -> int:
    if not argv:
        sys.stderr.write("usage: python -m gitliza.sandbox.client DIR [--mcp | ARGS...]\n")
        return 1
    if argv[1:] == ["--mcp"]:
        return mcp(argv[0])
    return command(argv[0], argv[1:])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
