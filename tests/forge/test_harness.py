"""The harness itself: Prism's mock and validation really catch what they must, the front's
switches do what they say, the stand-in keeps GitHub's semantics and validates."""
from __future__ import annotations

import json

import httpx
import pytest

from tests.forge.harness import PrismGitHub

HEADERS = {"Authorization": "Bearer t", "Accept": "application/vnd.github+json",
           "X-GitHub-Api-Version": "2022-11-28"}


def client(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers=HEADERS, timeout=60)


def test_mock_reports_a_request_that_violates_the_description(prism_github: PrismGitHub) -> None:
    with client(prism_github.api_url) as c:
        r = c.post("/repos/o/r/pulls", json={"title": "t", "base": "main"})  # no head
    assert r.status_code == 422
    errors = prism_github.validation_errors()
    assert any("required property 'head'" in e for e in errors), errors


def test_mock_answers_a_valid_request_without_errors(prism_github: PrismGitHub) -> None:
    with client(prism_github.api_url) as c:
        r = c.post("/repos/o/r/pulls", json={"title": "t", "head": "o:liza/t-1", "base": "main",
                                             "body": "b", "draft": True})
        assert r.status_code == 201, r.text
        assert "number" in r.json() and "node_id" in r.json()
        r = c.get("/repos/o/r/pulls", params={"state": "all", "head": "o:liza/t-1",
                                              "per_page": 100})
        assert r.status_code == 200 and isinstance(r.json(), list)
    assert prism_github.validation_errors() == []
    assert [(m, s) for m, _, s in prism_github.requests()] == [("POST", 201), ("GET", 200)]


def test_mock_is_made_to_answer_a_declared_status(prism_github: PrismGitHub) -> None:
    with client(prism_github.api_url) as c:
        prism_github.prefer(503)
        assert c.get("/repos/o/r/pulls/1").status_code == 503  # declared there
        assert c.get("/repos/o/r/pulls/1").status_code == 200  # only the next request
    assert prism_github.validation_errors() == []


@pytest.mark.parametrize("kind,path,status,by", [
    ("primary", "/repos/o/r/pulls", 403, "front"),   # GET /pulls declares no 403
    ("primary", "/repos/o/r", 403, "prism"),          # GET /repos/{o}/{r} does
    ("secondary", "/repos/o/r", 429, "front"),        # nothing here declares 429
])
def test_mock_rate_limits_with_githubs_headers(prism_github: PrismGitHub, kind: str, path: str,
                                               status: int, by: str) -> None:
    prism_github.rate_limited(1, kind)
    with client(prism_github.api_url) as c:
        r = c.get(path)
        assert r.status_code == status
        if kind == "primary":
            assert r.headers["x-ratelimit-remaining"] == "0"
            assert int(r.headers["x-ratelimit-reset"]) > 0
        else:
            assert int(r.headers["retry-after"]) >= 1
        assert "message" in r.json()
        assert c.get(path).status_code == 200
    assert prism_github.exchanges()[0].answered_by == by
    assert prism_github.validation_errors() == []


def test_mock_down_refuses_connections_then_comes_back(prism_github: PrismGitHub) -> None:
    with client(prism_github.api_url) as c:
        assert c.get("/rate_limit").status_code == 200
        prism_github.down()
        with pytest.raises(httpx.ConnectError):
            c.get("/rate_limit")
        prism_github.up()
        assert c.get("/rate_limit").status_code == 200
