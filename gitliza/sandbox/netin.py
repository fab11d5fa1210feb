"""The agent's end of `--sandbox model`'s network (net.py is the supervisor's), run inside the
sandbox as `python -I -m gitliza.sandbox.netin SOCKET PROXY_PORT [PORT...] -- COMMAND...`.

The sandbox has a network namespace of its own: only a loopback interface, no route out. This
listens on 127.0.0.1:PROXY_PORT (the agent's HTTPS_PROXY/HTTP_PROXY) and on 127.0.0.1:PORT for
each loopback endpoint forwarded as the same port (a model server on this machine), and relays
every connection, byte for byte, to the supervisor's unix socket SOCKET after one line naming
the port it came in on. It decides nothing: the supervisor's end checks the allow-list. Then it
runs COMMAND (exec: the agent keeps this process, its exit code is the sandbox's) and keeps
relaying in a process of its own, which dies with the sandbox's PID namespace.

Standard library only, and nothing of gitliza loaded: it runs inside, beside the agent.
"""
from __future__ import annotations

import os
import socket
import sys
import threading

from gitliza.sandbox import seccomp

BUF = 65536


def pipe(src: socket.socket, dst: socket.socket) -> None:
    """Bytes from `src` to `dst` until `src` ends; then `dst`'s writing end is shut."""
    try:
        while True:
            data = src.recv(BUF)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _relay(conn: socket.socket, path: str, port: int) -> None:
    up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        up.connect(path)
        up.sendall(f"{port}\n".encode())
    except OSError:
        conn.close()
        up.close()
        return
    t = threading.Thread(target=pipe, args=(up, conn), daemon=True)
    t.start()
    pipe(conn, up)
    t.join()
    conn.close()
    up.close()


def _serve(listener: socket.socket, path: str, port: int) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_relay, args=(conn, path, port), daemon=True).start()


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") < 2 or argv[-1] == "--":
        sys.stderr.write("usage: python -m gitliza.sandbox.netin SOCKET PROXY_PORT [PORT...] "
                         "-- COMMAND...\n")
        return 1
    cut = argv.index("--")
    path, ports, command = argv[0], [int(p) for p in argv[1:cut]], argv[cut + 1:]
    listeners = []
    for port in ports:
        if port == 0:  # no proxy (`--sandbox on`: forwarded ports only, usernet.py)
            continue
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError as e:
            # Never a port the sandbox cannot listen on (box.py leaves those out, net.forwardable,
            # and says so): whatever else fails here is the launch's end.
            sys.stderr.write(f"gitliza sandbox: cannot listen on 127.0.0.1:{port} inside "
                             f"({e.strerror})\n")
            return 5
        s.listen(64)
        listeners.append((s, port))
    # The relay in a grandchild (threads only after the forks), so that it is the sandbox's
    # init's child, not one the agent finds among its own.
    child = os.fork()
    if child == 0:
        if os.fork() != 0:
            os._exit(0)
        seccomp.undumpable()  # the relay keeps its unix socket: out of the agent's reach
        # Nothing of the agent's standard streams: whoever reads the agent's output sees its end
        # when the agent ends, not when the sandbox is torn down.
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        try:
            for s, port in listeners:
                threading.Thread(target=_serve, args=(s, path, port), daemon=True).start()
            threading.Event().wait()
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    for s, _ in listeners:  # the agent does not keep the listening sockets
        s.close()
    try:
        os.execvp(command[0], command)
    except OSError as e:
        sys.stderr.write(f"gitliza sandbox: cannot run {command[0]}: {e.strerror}\n")
        return 127


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
