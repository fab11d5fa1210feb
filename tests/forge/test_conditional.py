"""Polling is conditional (gitliza/forge/github/client.py `Etags`, docs/forge.md "Faults"): every
GET of a URL the bridge fetched before carries the ETag of its last answer, a steady-state pass
is answered 304 throughout, and a 304 costs no rate limit (the stand-in counts as GitHub does:
x-ratelimit-remaining stays put). Against the stand-in through Prism's validating proxy."""
from __future__ import annotations

from pathlib import Path

from gitliza.forge.bridge import Bridge
from gitliza.forge.github.client import GitHubForge
from gitliza.services.api import Liza
from tests.cli.test_board import liza, ok
from tests.forge.front import Exchange
from tests.forge.standin import StandIn
from tests.forge.test_bridge_standin import forge_board, forge_env, pulls_of


def etag_sent(e: Exchange) -> str | None:
    return next((v for k, v in e.request_headers.items() if k.lower() == "if-none-match"), None)


def test_a_steady_poll_is_answered_304_and_costs_no_rate_limit(
        repo: Path, tmp_path: Path, github_standin: StandIn) -> None:
    s = github_standin
    forge_board(repo, tmp_path, s, "t1")
    ok(liza(repo, "config", "forge_required_checks", "ci", agent=None))
    g = GitHubForge(f"{s.owner}/{s.repo}", s.token, s.api_url)
    bridge = Bridge(Liza.open(repo, "human"), g, print, remote="forge")
    for _ in range(2):
        assert bridge.step().error is None
    [pr] = pulls_of(s, "liza/t1")
    s.add_review(pr["number"], "APPROVED", "ok")  # the reviews' answer changes: 200, then 304s
    for _ in range(3):  # the human's approval, the pull request mirrored, a first poll of checks
        assert bridge.step().error is None
    before = len(s.front.exchanges())
    for _ in range(3):  # steady: the task approved, its required check not reported yet
        assert bridge.step().error is None
    steady = s.front.exchanges()[before:]
    assert steady and {e.method for e in steady} == {"GET"}
    assert [e.status for e in steady] == [304] * len(steady), [(e.path, e.status) for e in steady]
    assert all(etag_sent(e) for e in steady)
    # A 304 costs no rate limit (GitHub's rule, which the stand-in keeps): remaining stays put.
    left = {e.response_headers.get("x-ratelimit-remaining") for e in steady}
    assert len(left) == 1, left
    assert g.not_modified >= len(steady)
    # Once fetched, a URL is never asked again without its ETag: a change is one 200 with the
    # new answer, never a 304 followed by a second, unconditional request (hishel 1.4's way).
    fetched: set[tuple[str, str]] = set()
    for e in s.front.exchanges():
        if e.method != "GET" or e.path.endswith("/graphql"):
            continue
        key = (e.path, e.query)
        assert key not in fetched or etag_sent(e), key
        fetched.add(key)
    # What `forge status` says of it: the requests and how many were 304s.
    out = ok(liza(repo, "forge", "status", agent=None, env=forge_env(s)))
    assert f"{g.requests} requests ({g.not_modified} answered 304)" in out, out
    assert s.validation_errors() == []
