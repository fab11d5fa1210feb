"""The agent's end of its channel to the board (broker.py), run inside the sandbox as
`python -I -m gitliza.sandbox.client SOCKET [ARGS...]`: ARGS are a `git liza` command, sent to the
supervisor, whose answer (output, errors, exit code) is printed as its own; `--mcp` relays an
MCP session (standard input and output) instead. Standard library only: nothing of gitliza is
loaded inside the sandbox for a call.
"""
from __future__ import annotations

import json
import socket
import sys
import threading


def _connect(path: str) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
    except OSError as e:
        sys.stderr.write(f"gitliza sandbox: the supervisor's channel is gone ({e.strerror}); "
                         "is the supervisor still running?\n")
        raise SystemExit(5) from None
    return s


def command(path: str, argv: list[str]) -> int:
    s = _connect(path)
    with s:
        f = s.makefile("rwb")
        f.write(json.dumps({"argv": argv}).encode() + b"\n")
        f.flush()
        line = f.readline()
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
    s = _connect(path)
    s.sendall(b'{"mcp": true}\n')

    def up() -> None:
        for line in sys.stdin.buffer:
            s.sendall(line)
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    threading.Thread(target=up, daemon=True).start()
    out = sys.stdout.buffer
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return 0
        out.write(chunk)
        out.flush()


def main(argv: list[str]) -> int:
    if not argv:
        sys.stderr.write("usage: python -m gitliza.sandbox.client SOCKET [--mcp | ARGS...]\n")
        return 1
    if argv[1:] == ["--mcp"]:
        return mcp(argv[0])
    return command(argv[0], argv[1:])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
