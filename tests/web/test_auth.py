"""The server's door: no token, no page (401); a wrong one, 403; the printed URL sets a cookie and
drops the token from the address; a change needs the CSRF token and this server's origin; a
read-only board refuses every change. A refused change leaves refs/liza/state where it was."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.web.conftest import TOKEN, authed, client, csrf, state

PATHS = ["/", "/fragment/board", "/task/t1", "/log", "/pictures", "/api/board", "/api/task/t1",
         "/events", "/static/board.js", "/static/style.css", "/pygments.css",
         "/task/t1/log/0/stream"]


@pytest.mark.parametrize("path", PATHS)
def test_no_token_is_401_and_a_wrong_one_403(small: Path, path: str) -> None:
    with client(small) as c:
        r = c.get(path)
        assert r.status_code == 401
        assert r.text.startswith("gitliza: error: no token")
        assert c.get(path, headers={"Authorization": "Bearer nope"}).status_code == 403
        assert c.get(f"{path}{'&' if '?' in path else '?'}token=nope").status_code == 403
        c.cookies.set("gitliza_web", "nope")
        assert c.get(path).status_code == 403


def test_the_printed_url_sets_an_httponly_strict_cookie_and_drops_the_token(small: Path) -> None:
    with client(small) as c:
        r = c.get(f"/log?task=t1&token={TOKEN}", follow_redirects=False)
        assert r.status_code == 303
        assert r.headers["location"] == "/log?task=t1"
        cookie = r.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
        page = c.get("/log?task=t1")
        assert page.status_code == 200 and TOKEN not in page.text
        assert page.headers["x-frame-options"] == "DENY"


def test_a_foreign_host_name_is_refused_even_with_the_token(small: Path) -> None:
    """DNS rebinding: a page on evil.example resolving to 127.0.0.1 names its own host."""
    with client(small) as c:
        r = c.get("/", headers={"Authorization": f"Bearer {TOKEN}", "Host": "evil.example"})
        assert r.status_code == 403
        assert c.get("/", headers={"Authorization": f"Bearer {TOKEN}",
                                   "Host": "localhost:7150"}).status_code == 200


def test_changes_need_the_csrf_token_and_this_origin(small: Path) -> None:
    with client(small) as c:
        authed(c)
        good = csrf(c)
        assert good != TOKEN and TOKEN not in c.get("/").text
        before = state(small)
        for headers, data in (({}, {"reason": "x"}),
                              ({"X-CSRF-Token": "0" * 64}, {"reason": "x"}),
                              ({}, {"reason": "x", "csrf": "wrong"}),
                              ({"X-CSRF-Token": good, "Origin": "http://evil.example"},
                               {"reason": "x"})):
            r = c.post("/action/pause", data=data, headers=headers)
            assert r.status_code == 403, (headers, data)
            assert "CSRF" in r.text
        assert state(small) == before
        # The form field works as the header does (a page without script).
        assert c.post("/action/pause", data={"reason": "x", "csrf": good}).status_code == 200
        assert state(small) != before


def test_post_without_a_credential_is_401_before_anything_else(small: Path) -> None:
    with client(small) as c:
        before = state(small)
        assert c.post("/action/pause", data={"reason": "x"}).status_code == 401
        assert state(small) == before


def test_read_only_offers_no_action_and_refuses_one(small: Path) -> None:
    with client(small, read_only=True) as c:
        authed(c)
        for path in ("/", "/task/t1", "/task/t2"):
            page = c.get(path).text
            assert 'class="action"' not in page and "/action/" not in page
            assert "read-only" in page
        before = state(small)
        r = c.post("/action/pause", data={"reason": "x"}, headers={"X-CSRF-Token": csrf(c)})
        assert r.status_code == 403
        assert state(small) == before
