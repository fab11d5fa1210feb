"""`--sandbox model`: an agent that reaches its model's API and nothing else on the network.

The sandbox gets a network namespace of its own (bubblewrap's `--unshare-net`: a loopback
interface, no route out), so unsetting a proxy variable or opening a socket gets the agent
nowhere. Inside, netin.py listens on 127.0.0.1 (the agent's HTTPS_PROXY/HTTP_PROXY, and each
loopback endpoint on the allow-list as the same port) and relays every connection over a unix
socket to the `Gate` here, in the supervisor, which reads where the connection wants to go and
connects only to an allowed host:port:
- a CONNECT (HTTPS through the proxy) or an absolute-URI request (plain HTTP through the
  proxy) to an allowed host:port is connected; anything else is answered 403 and logged (the
  supervisor's log, once per host and session);
- a connection to a forwarded loopback port goes to the same port on this machine's loopback.

The allow-list (`allowed`, pure) is, per agent: its CLI's model API hosts (its profile's `hosts`
in gitliza/agentcli/, measured: docs/security.md "Network"), the hosts of the model endpoints
the agent's environment and its CLI's configuration name (ANTHROPIC_BASE_URL, a Codex
provider's base_url, Vibe's api_base ...), and what the human adds with LIZA_SANDBOX_ALLOW
(host:port, comma-separated). gitliza's own MCP server needs nothing: the agent reaches it
through its broker's socket.
"""
from __future__ import annotations

import re
import socket
import threading
from pathlib import Path
from typing import Callable, Iterable, Mapping
from urllib.parse import urlsplit

from gitliza import agentcli
from gitliza.sandbox.netin import pipe
from gitliza.sandbox.unixserver import UnixServer

ALLOW_ENV = "LIZA_SANDBOX_ALLOW"
SOCKET = "net"  # beside the broker's socket, in the directory mounted at BROKER_INSIDE
PROXY_PORT = 3128  # the agent's proxy inside (another if a forwarded port takes it)
MAX_HEAD = 64 * 1024  # bytes of a proxy request's head

LOOPBACK = ("127.0.0.1", "localhost", "::1")

Endpoint = tuple[str, int]
_HOST = re.compile(r"[A-Za-z0-9.:_-]+")  # what a host may hold (what the agent names is logged)
MAX_LOGGED = 20  # refused hosts logged per session (a rogue agent could name thousands)


def endpoint(text: str) -> Endpoint | None:
    """`host:port` or a URL, as (host, port); None if it names neither."""
    text = text.strip()
    if "://" in text:
        try:
            u = urlsplit(text)
            port = u.port or (443 if u.scheme == "https" else 80)
        except ValueError:
            return None
        host = u.hostname
        return (host.lower(), port) if host and _HOST.fullmatch(host) else None
    m = re.fullmatch(r"\[?([A-Za-z0-9.:_-]+?)\]?:(\d{1,5})", text)
    if m is None or not 0 < int(m[2]) < 65536:
        return None
    return m[1].lower(), int(m[2])


def hosts(cli: str | None) -> tuple[str, ...]:
    """The CLI's model API (and the login it refreshes): its profile's `hosts`. Nothing else: no
    telemetry, update checks, marketplaces or web tools (docs/security.md "Network")."""
    p = agentcli.find(cli)
    return p.hosts if p is not None else ()


def base_url_env() -> tuple[str, ...]:
    """The variables that name a model endpoint (whichever CLI reads them: every profile's)."""
    return tuple(dict.fromkeys(v for p in agentcli.profiles().values() for v in p.base_url_env))


def allowed(cli: str | None, env: Mapping[str, str],
            urls: Iterable[str] = ()) -> frozenset[Endpoint]:
    """The endpoints an agent of CLI `cli` may reach: its model's hosts, every endpoint its
    environment or configuration (`urls`) names, and LIZA_SANDBOX_ALLOW's."""
    texts = [*hosts(cli), *(env[k] for k in base_url_env() if env.get(k)), *urls,
             *(env.get(ALLOW_ENV) or "").split(",")]
    return frozenset(e for e in map(endpoint, texts) if e is not None)


def check_allow(env: Mapping[str, str]) -> None:
    """LIZA_SANDBOX_ALLOW, checked before anything starts: every entry a host:port."""
    from gitliza.errors import ValidationError
    for item in (env.get(ALLOW_ENV) or "").split(","):
        if item.strip() and endpoint(item) is None:
            raise ValidationError(f"{ALLOW_ENV}: {item.strip()!r} is not host:port or a URL",
                                  hint="e.g. LIZA_SANDBOX_ALLOW=mcp.example.com:443,"
                                       "registry.npmjs.org:443")


def loopback_ports(allow: Iterable[Endpoint]) -> list[int]:
    """The allowed endpoints on this machine's loopback: forwarded as the same port inside."""
    return sorted({port for host, port in allow if host in LOOPBACK})


# The first port a process of the sandbox can listen on: bubblewrap drops every capability
# (CAP_NET_BIND_SERVICE among them) and the sandbox's own network namespace starts with
# net.ipv4.ip_unprivileged_port_start at its default, 1024.
FIRST_FORWARDABLE = 1024


def forwardable(ports: Iterable[int]) -> tuple[list[int], list[int]]:
    """The loopback ports the sandbox can listen on as the same port inside, and those it cannot
    (below FIRST_FORWARDABLE: nothing is forwarded there, the agent's connections are refused,
    as to a server that is down)."""
    ports = sorted(set(ports))
    return ([p for p in ports if p >= FIRST_FORWARDABLE],
            [p for p in ports if p < FIRST_FORWARDABLE])


def unforwardable_line(port: int) -> str:
    return (f"sandbox: 127.0.0.1:{port} is not forwarded inside (a port below "
            f"{FIRST_FORWARDABLE}, which no process of the sandbox may listen on); the agent's "
            "connections to it are refused")


def proxy_port(forwarded: Iterable[int]) -> int:
    taken = set(forwarded)
    return next(p for p in range(PROXY_PORT, 65536) if p not in taken)


def proxy_env(port: int) -> dict[str, str]:
    """The agent's proxy variables inside (the loopback endpoints are reached directly)."""
    url = f"http://127.0.0.1:{port}"
    out = {k: url for k in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy",
                            "ALL_PROXY", "all_proxy")}
    out.update(NO_PROXY="127.0.0.1,localhost,::1", no_proxy="127.0.0.1,localhost,::1",
               NODE_USE_ENV_PROXY="1")  # Node's own fetch honours them too (Node 22.21+, 24.5+)
    return out


def config_urls(cli: str | None, home: Path) -> list[str]:
    """The model endpoints a CLI's configuration in `home` names (Codex's providers, Vibe's):
    its profile's `config_file`, read here, its `config_urls` parse."""
    p = agentcli.find(cli)
    if p is None or p.config_file is None or p.config_urls is None:
        return []
    f = home / p.config_file
    if not f.is_file():
        return []
    try:
        text = f.read_text()
    except (OSError, UnicodeDecodeError):
        return []
    return p.config_urls(text)


def request_target(head: bytes) -> tuple[str, Endpoint | None, bytes]:
    """A proxy request's method, the endpoint it wants, and the head to send on (an
    absolute-URI request rewritten to origin form; a CONNECT's is not sent on)."""
    line, _, rest = head.partition(b"\r\n")
    parts = line.decode("latin-1").split(" ")
    if len(parts) != 3:
        return "", None, b""
    method, target, version = parts
    if method.upper() == "CONNECT":
        return "CONNECT", endpoint(target), b""
    if not target.lower().startswith("http://"):
        return method, None, b""
    u = urlsplit(target)
    path = (u.path or "/") + (f"?{u.query}" if u.query else "")
    # One request per connection: a client keeps a proxy connection alive for its next request,
    # which may name another host, but the gate relays bytes once connected. So the request
    # asks the server to close after its answer, and the client opens a new connection (which
    # the gate judges again). The proxy's own headers stay here.
    fields, _, body = rest.partition(b"\r\n\r\n")  # what was read past the head goes on
    headers = [h for h in fields.split(b"\r\n") if h and not h.split(b":", 1)[0].strip().lower()
               in (b"connection", b"proxy-connection", b"keep-alive", b"proxy-authorization")]
    out = "\r\n".join([f"{method} {path} {version}", *(h.decode("latin-1") for h in headers),
                        "Connection: close", "", ""])
    return method, endpoint(target), out.encode("latin-1") + body


class Gate:
    """The supervisor's end: serves the unix socket `path` for one agent session."""

    def __init__(self, path: Path, allow: frozenset[Endpoint], proxy: int,
                 log: Callable[[str], None]) -> None:
        self.allow, self.proxy, self.log = allow, proxy, log
        self.forwarded = set(loopback_ports(allow))
        self.refused: set[Endpoint | None] = set()
        self._server = UnixServer(path, self._serve, "net-gate", backlog=64)

    def close(self) -> None:
        self._server.close()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            head = _read_until(conn, b"\n", 16)
            line, _, extra = head.partition(b"\n")
            try:
                port = int(line)
            except ValueError:
                return
            if self.proxy and port == self.proxy:  # 0: none (`on`'s forwarded ports only)
                self._proxy(conn, extra)
            elif port in self.forwarded:
                up = _connect(("127.0.0.1", port))
                if up is not None:
                    _relay(conn, up, extra)

    def _proxy(self, conn: socket.socket, head: bytes) -> None:
        head += _read_until(conn, b"\r\n\r\n", MAX_HEAD, have=head)
        method, target, send = request_target(head)
        up = _connect(target) if target in self.allow and target is not None else None
        if up is None:
            if target not in self.refused and len(self.refused) < MAX_LOGGED:
                self.refused.add(target)
                where = f"{target[0]}:{target[1]}" if target else "a malformed request"
                why = "is not on this agent's allow-list" if target not in self.allow \
                    else "cannot be reached"
                verb = method if method.isascii() and method.isalpha() else "?"
                self.log(f"sandbox network: refused {verb} to {where}: {why} "
                         f"(--sandbox model; add it with {ALLOW_ENV})")
            body = (f"gitliza sandbox: {target[0] if target else '?'} is not reachable from "
                    f"this agent (--sandbox model)\n").encode()
            try:
                conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n"
                             b"Connection: close\r\nContent-Length: " + str(len(body)).encode()
                             + b"\r\n\r\n" + body)
            except OSError:
                pass
            return
        if method == "CONNECT":
            try:
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            except OSError:
                up.close()
                return
        _relay(conn, up, send)


def _read_until(conn: socket.socket, end: bytes, limit: int, have: bytes = b"") -> bytes:
    """Bytes from `conn` until `end` is in `have` + them (or `limit`, or the end)."""
    out = b""
    while end not in have + out and len(have + out) < limit:
        try:
            chunk = conn.recv(1 if end == b"\n" else 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    return out


def _connect(target: Endpoint) -> socket.socket | None:
    try:
        return socket.create_connection(target, timeout=30)
    except OSError:
        return None


def _relay(a: socket.socket, b: socket.socket, first: bytes) -> None:
    """Bytes both ways until both ends close; `first` goes to `b` before."""
    b.settimeout(None)
    with b:
        try:
            if first:
                b.sendall(first)
        except OSError:
            return

        t = threading.Thread(target=pipe, args=(b, a), daemon=True)
        t.start()
        pipe(a, b)
        t.join()


def inside_command(python: str, socket_inside: str, proxy: int, forwarded: list[int],
                   command: list[str]) -> list[str]:
    """`command` behind the forwarder inside (python -I: nothing of the environment or the
    working directory decides which code runs)."""
    return [python, "-I", "-m", "gitliza.sandbox.netin", socket_inside, str(proxy),
            *map(str, forwarded), "--", *command]

