"""The harness's tiny HTTP front: what the bridge talks to, in front of a real Prism.

    client -> Front (127.0.0.1, free port) -> Prism (mock, or proxy -> stand-in)
                    \\-> /graphql, /api/graphql -> the stand-in directly, or answered by the
                                                 front for the mock (graphql.py: GraphQL is
                                                 not in the REST description)

It records every exchange (method, path, status, and Prism's `sl-violations` header, the
violations of that very request as JSON), and does what a test asks of "the network":
- `prefer(code, n, dynamic=...)`: the next n requests carry Prism's `Prefer: code=NNN` (a Prism
  mock then answers that response of the description, or says it has none; `dynamic=true`: a
  body generated at random from the schema);
- `rate_limited(n, kind)`: the next n requests are refused as GitHub's rate limiter refuses
  (ratelimit.py): where the operation declares the status, Prism is asked for it (`Prefer`) and
  the front adds GitHub's rate-limit headers the description does not declare; elsewhere the front
  answers itself (Prism would only say the code is not in the document). Used with the mock; the
  stand-in refuses by itself, behind Prism's proxy;
- `server_error(n, code)`: the same for a 5xx (Prism's where declared, else GitHub's JSON);
- `down(seconds)` / `up()`: the listening socket is closed and open connections are cut, so a
  client gets "connection refused", as when the forge is unreachable.
It also serves GitHub Enterprise Server's layout (`ghes_url`: REST under /api/v3, GraphQL at
/api/graphql), so a test can give a client a GHES-style base URL.
With `rewrite_accept` (the mock), GitHub's media type `application/vnd.github+json` (which GitHub
tells clients to send, and answers with `application/json`) is sent to Prism as
`application/json`: the description declares only `application/json`, and Prism's mock answers
406 to any other Accept. Prism's proxy does not negotiate, so the stand-in's front leaves it alone.
"""
from __future__ import annotations

import http.client
import json
import socket
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import urlsplit

from tests.forge import graphql, ratelimit
from tests.forge.description import Description

HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer",
       "upgrade", "content-length", "host", "date", "server"}
GRAPHQL_PATHS = ("/graphql", "/api/graphql")
GHES_PREFIX = "/api/v3"
FORWARD_TIMEOUT = 120.0


@dataclass
class Exchange:
    method: str
    path: str  # without the query
    query: str
    status: int
    violations: str = ""  # Prism's sl-violations header (JSON), when it sent one
    problems: list[str] = field(default_factory=list)  # from Prism's problem body, one a line
    answered_by: str = "prism"  # "prism", "front" (refused here), "graphql" (not Prism)
    request_headers: dict[str, str] = field(default_factory=dict)
    response_headers: dict[str, str] = field(default_factory=dict)
    request_body: bytes = b""  # kept for GraphQL requests (checked against GitHub's schema)


@dataclass
class _Injection:
    code: int
    dynamic: bool = False
    kind: str | None = None  # "primary"/"secondary"/"server": GitHub's refusal (ratelimit.py)
    reset_in: float = 3.0
    retry_after: int = 1


class Front:
    def __init__(self, target: str, *, graphql_target: str | None = None,
                 graphql_answer: Callable[[bytes], tuple[int, dict[str, str], bytes]]
                 | None = None,
                 description: Description | None = None, rewrite_accept: bool = False,
                 on_exchange: Callable[[Exchange], None] | None = None) -> None:
        self._target = urlsplit(target)
        self._graphql = urlsplit(graphql_target) if graphql_target else None
        self._graphql_answer = graphql_answer
        self._description = description
        self._rewrite_accept = rewrite_accept
        self._on_exchange = on_exchange
        self._lock = threading.Lock()
        self._queue: deque[_Injection] = deque()
        self._exchanges: list[Exchange] = []
        self._conns: set[socket.socket] = set()
        self._server: ThreadingHTTPServer | None = None
        self._timer: threading.Timer | None = None
        self.port = 0
        self._serve()
        self.url = f"http://127.0.0.1:{self.port}"
        self.ghes_url = f"{self.url}{GHES_PREFIX}"

    # -- what a test asks --------------------------------------------------------------------------

    def prefer(self, code: int, n: int = 1, dynamic: bool = False) -> None:
        with self._lock:
            self._queue.extend(_Injection(code, dynamic) for _ in range(n))

    def rate_limited(self, n: int = 1, kind: str = "primary", *, reset_in: float = 3.0,
                     retry_after: int = 1, status: int | None = None) -> None:
        code, _, _ = ratelimit.answer(kind, status=status)
        with self._lock:
            self._queue.extend(_Injection(code, False, kind, reset_in, retry_after)
                               for _ in range(n))

    def server_error(self, n: int = 1, code: int = 502) -> None:
        """The next n requests fail with `code`: Prism's answer where the operation declares
        it, else GitHub's JSON for a server error, from the front."""
        with self._lock:
            self._queue.extend(_Injection(code, False, "server") for _ in range(n))

    def down(self, seconds: float | None = None) -> None:
        """Refuse connections (for `seconds`, then up again by itself; None: until `up()`)."""
        with self._lock:
            if self._timer:
                self._timer.cancel()
                self._timer = None
            server, self._server = self._server, None
            conns = list(self._conns)
        if server is not None:
            server.shutdown()
            server.server_close()
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if seconds is not None:
            timer = threading.Timer(seconds, self.up)
            timer.daemon = True
            with self._lock:
                self._timer = timer
            timer.start()

    def up(self) -> None:
        with self._lock:
            if self._timer:
                self._timer.cancel()
                self._timer = None
            if self._server is not None:
                return
        self._serve()

    @property
    def is_down(self) -> bool:
        return self._server is None

    def exchanges(self) -> list[Exchange]:
        with self._lock:
            return list(self._exchanges)

    def errors(self, npm_root: Path | None = None) -> list[str]:
        """Per request, "METHOD /path: location message" for each violation of severity Error
        Prism reported to the client (its `sl-violations` header and the problem body of its
        422/500 answers): what Prism's log says, with the request named. With `npm_root`, also
        what GitHub's GraphQL schema finds wrong in each GraphQL request."""
        out = []
        exchanges = self.exchanges()
        for e in exchanges:
            seen = set()
            for v in _header_violations(e.violations) + e.problems:
                if v not in seen:
                    seen.add(v)
                    out.append(f"{e.method} {e.path}: {v}")
        if npm_root is not None:
            asked = [e for e in exchanges if e.answered_by == "graphql"]
            for e, found in zip(asked, graphql.check(npm_root, [e.request_body for e in asked])):
                out.extend(f"{e.method} {e.path}: GraphQL: {msg}" for msg in found)
        return out

    def close(self) -> None:
        self.down()

    # -- serving -----------------------------------------------------------------------------------

    def _serve(self) -> None:
        front = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                with front._lock:
                    front._conns.add(self.connection)

            def finish(self) -> None:
                with front._lock:
                    front._conns.discard(self.connection)
                try:
                    super().finish()
                except OSError:
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _any(self) -> None:
                front._handle(self)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _any

        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        self.port = server.server_address[1]
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                         daemon=True, name=f"front-{self.port}").start()
        with self._lock:
            self._server = server

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("content-length") or 0)
        body = h.rfile.read(length) if length else b""
        target_path = h.path
        if target_path.startswith(GHES_PREFIX + "/"):
            # GitHub Enterprise Server's layout: REST under /api/v3, GraphQL at /api/graphql
            target_path = target_path[len(GHES_PREFIX):]
        path, _, query = target_path.partition("?")
        headers = {k: v for k, v in h.headers.items() if k.lower() not in HOP}
        graphql = path in GRAPHQL_PATHS and (self._graphql is not None
                                             or self._graphql_answer is not None)
        inj: _Injection | None = None
        if not graphql:
            with self._lock:
                inj = self._queue.popleft() if self._queue else None
        ex = Exchange(h.command, path, query, 0, request_headers=dict(headers),
                      request_body=body if graphql else b"")
        if inj is not None and inj.kind and not self._declared(h.command, path, inj.code):
            status, rheaders, rbody = ratelimit.refusal(inj.kind, inj.code,
                                                        reset_in=inj.reset_in,
                                                        retry_after=inj.retry_after)
            ex.answered_by = "front"
        elif graphql and self._graphql_answer is not None:
            status, rheaders, rbody = self._graphql_answer(body)
            ex.answered_by = "graphql"
        else:
            if inj is not None:
                headers = {k: v for k, v in headers.items() if k.lower() != "prefer"}
                headers["Prefer"] = f"code={inj.code}" + (", dynamic=true" if inj.dynamic else "")
            if self._rewrite_accept and not graphql:
                headers = {k: (_json_accept(v) if k.lower() == "accept" else v)
                           for k, v in headers.items()}
            target = self._graphql if graphql and self._graphql else self._target
            status, rheaders, rbody = _forward(target, h.command, target_path, headers, body)
            if graphql:
                ex.answered_by = "graphql"
            if inj is not None and inj.kind in ("primary", "secondary"):
                _, extra, _ = ratelimit.refusal(inj.kind, inj.code, reset_in=inj.reset_in,
                                                retry_after=inj.retry_after)
                extra.pop("content-type", None)
                rheaders.update(extra)
        ex.status = status
        ex.violations = next((v for k, v in rheaders.items() if k.lower() == "sl-violations"), "")
        ex.response_headers = dict(rheaders)
        ex.problems = _violations_problem(rheaders, rbody)
        with self._lock:
            self._exchanges.append(ex)
        if self._on_exchange is not None:
            self._on_exchange(ex)
        try:
            h.send_response(status)
            for k, v in rheaders.items():
                if k.lower() not in HOP:
                    h.send_header(k, v)
            h.send_header("Content-Length", str(len(rbody)))
            h.end_headers()
            if h.command != "HEAD":
                h.wfile.write(rbody)
        except OSError:
            pass  # the client went away (or `down()` cut it)

    def _declared(self, method: str, path: str, code: int) -> bool:
        if self._description is None:
            return False
        op = self._description.operation(method, path)
        return op is not None and op.declares(code)


def _header_violations(header: str) -> list[str]:
    try:
        found = json.loads(header) if header.startswith("[") else []
    except ValueError:
        return []
    return [f"{'.'.join(map(str, v.get('location', [])))} {v.get('message', '')}"
            for v in found if isinstance(v, dict) and v.get("severity") == "Error"]


def _violations_problem(headers: dict[str, str], body: bytes) -> list[str]:
    """The violations in Prism's `--errors` answer to an invalid response, or the proxy's to an
    invalid request (its log says only "Request/Response not valid" or "Invalid request"; the
    problem's body says which)."""
    ctype = next((v for k, v in headers.items() if k.lower() == "content-type"), "")
    if "problem+json" not in ctype:
        return []
    try:
        problem = json.loads(body)
    except ValueError:
        return []
    kinds = ("VIOLATIONS", "UNPROCESSABLE_ENTITY")  # an invalid response; an invalid request
    if not isinstance(problem, dict) or not str(problem.get("type", "")).endswith(kinds):
        return []
    out = []
    for v in problem.get("validation", []):
        if isinstance(v, dict):
            where = [str(x) for x in v.get("location", [])]
            if where[:1] not in (["request"], ["response"]):
                where.insert(0, "request")  # the proxy's 422 leaves the side out
            out.append(f"{'.'.join(where)} {v.get('message', '')}")
    return out


def _json_accept(value: str) -> str:
    parts = [p.strip() for p in value.split(",")]
    out = ["application/json" if p.split(";")[0].strip().startswith("application/vnd.github")
           else p for p in parts]
    return ", ".join(dict.fromkeys(out))


def _forward(target: Any, method: str, path: str, headers: dict[str, str],
             body: bytes) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection(target.hostname, target.port, timeout=FORWARD_TIMEOUT)
    try:
        conn.request(method, path, body=body if body or method in ("POST", "PUT", "PATCH")
                     else None, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, {k: v for k, v in resp.getheaders() if k.lower() not in HOP}, data
    except OSError as e:
        # The upstream (Prism, or the stand-in for GraphQL) is not there: a gateway error.
        return 502, {"content-type": "text/plain"}, f"front: upstream unreachable: {e}".encode()
    finally:
        conn.close()
