"""`git liza forge serve`'s webhook receiver (docs/forge.md "Webhooks"): GitHub's
`pull_request_review`, `check_run`, `status` (and `pull_request`, `check_suite`) deliveries wake
the bridge at once instead of at its next poll.

A delivery is only a wake-up: its payload is never read for what it says (the bridge asks the
forge's API, with its own token, what happened), so a forged delivery could at most cause one
more poll, and even that needs the shared secret: `X-Hub-Signature-256` must be the HMAC-SHA256 of
the raw body under it (compared in constant time), else 401 and nothing wakes."""
from __future__ import annotations

import hashlib
import hmac
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

EVENTS = frozenset({"pull_request_review", "check_run", "status", "pull_request", "check_suite",
                    "ping"})
BODY_MAX = 1 << 20  # GitHub caps a delivery at 25 MB; the bridge needs none of it


def signed(secret: bytes, body: bytes, header: str | None) -> bool:
    """Whether `header` (X-Hub-Signature-256) is `sha256=` + the body's HMAC under `secret`."""
    if not header or not header.startswith("sha256="):
        return False
    want = hmac.new(secret, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(want, header[len("sha256="):].strip())


class Receiver:
    """An HTTP server on (host, port) in a daemon thread; `wake` is set by each good delivery."""

    def __init__(self, host: str, port: int, secret: bytes, wake: threading.Event,
                 log: Callable[[str], None]) -> None:
        self.wake, self.secret, self.log = wake, secret, log
        self.refused = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                size = int(self.headers.get("Content-Length") or 0)
                if not 0 <= size <= BODY_MAX:
                    self._answer(413)
                    return
                body = self.rfile.read(size)
                if not signed(receiver.secret, body, self.headers.get("X-Hub-Signature-256")):
                    receiver.refused += 1
                    receiver.log("forge: a webhook delivery with a bad signature refused")
                    self._answer(401)
                    return
                if self.headers.get("X-GitHub-Event", "") in EVENTS:
                    receiver.wake.set()
                self._answer(204)

            def _answer(self, code: int) -> None:
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass  # the bridge says what matters

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="liza-forge-hooks",
                                       daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}/"

    def start(self) -> Receiver:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
