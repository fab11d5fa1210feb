"""A real HTTP receiver on 127.0.0.1 for the escalation webhook: http.server in a thread, recording
each POST (its time of arrival, headers and JSON body); `answers` scripts the status codes."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Receiver:
    def __init__(self, answers: list[int] | None = None) -> None:
        self.posts: list[dict[str, Any]] = []
        self.arrivals: list[float] = []  # time.time() of each POST
        self.headers: list[dict[str, str]] = []
        self.answers = list(answers or [])
        self._cond = threading.Condition()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with outer._cond:
                    code = outer.answers.pop(0) if outer.answers else 200
                    outer.arrivals.append(time.time())
                    outer.headers.append(dict(self.headers.items()))
                    if code == 200:
                        outer.posts.append(json.loads(body))
                    outer._cond.notify_all()
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    def wait_for(self, n: int, timeout: float = 60.0) -> list[dict[str, Any]]:
        """The first `n` accepted posts, waiting for them (a hang guard, not a timing check)."""
        end = time.monotonic() + timeout
        with self._cond:
            while len(self.posts) < n:
                left = end - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{len(self.posts)} post(s) of {n} after {timeout} s")
                self._cond.wait(left)
            return list(self.posts[:n])
