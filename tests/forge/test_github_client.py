"""The GitHub client (gitliza/forge/github/client.py) against Prism's mock of GitHub's published
description (`prism_github`: `--errors`, every request validated): each call the bridge makes is
a request the description accepts, each answer Prism gives (its examples, its errors, GitHub's
rate-limit refusals) is read or turned into the bridge's faults; and against the stand-in, the
bridge honours a rate limit without hammering."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from gitliza.forge import ForgeRateLimited, ForgeRefused, ForgeUnreachable
from gitliza.forge.bridge import Bridge
from gitliza.forge.github.client import GitHubForge
from gitliza.services.api import Liza
from tests.forge.harness import PrismGitHub
from tests.forge.standin import StandIn
from tests.forge.test_bridge_standin import forge_board, pulls_of

SHA = "6dcb09b5b57875f334f61aebed695e2e4193db5e"


def client(p: PrismGitHub) -> GitHubForge:
    return GitHubForge("octocat/hello-world", p.token, p.api_url)


def test_every_call_validates_against_the_description_and_its_answers_are_read(
        prism_github: PrismGitHub) -> None:
    g = client(prism_github)
    assert g.access()
    g.find_pull("liza/t1")
    pr = g.open_pull(title="[liza t1] do it", head="liza/t1", base="integration", body="b")
    assert pr.number > 0
    g.pull(pr.number)
    g.edit_pull(pr.number, title="t", body="b")
    g.edit_pull(pr.number, state="closed")
    g.labels(pr.number)
    g.add_labels(pr.number, ["liza:approved"])
    g.remove_label(pr.number, "liza:ready_for_review")
    reviews = g.reviews(pr.number)
    g.review_comments(pr.number, reviews[0].id if reviews else 1)
    g.comment(pr.number, SHA, "<!-- liza:t1:3:approved -->\napproved")
    g.checks(SHA)
    assert g.merge_pull(pr.number, SHA)
    remaining, limit, reset = g.rate_limit()
    assert limit >= remaining >= 0
    assert prism_github.validation_errors() == [], prism_github.validation_errors()
    assert g.requests == len(prism_github.requests())


@pytest.mark.parametrize("code,fault", [(404, ForgeRefused), (422, ForgeRefused),
                                        (500, ForgeUnreachable)])
def test_prisms_errors_are_the_bridges_faults(prism_github: PrismGitHub, code: int,
                                              fault: type[Exception]) -> None:
    g = client(prism_github)
    prism_github.prefer(code, n=4)  # a 5xx is retried (three times) before it is a fault
    with pytest.raises(fault):
        g.pull(1)


def test_a_long_rate_limit_is_raised_with_its_reset_not_slept_in_the_request(
        prism_github: PrismGitHub) -> None:
    g = client(prism_github)
    prism_github.rate_limited(1, "primary", reset_in=600)
    asked = int(time.time())
    with pytest.raises(ForgeRateLimited) as got:
        g.pull(1)
    answered = time.time()
    # The forge's reset (its answer's time plus 600 s, whole seconds), for the bridge to wait;
    # bracketed by the request's own times, whatever the machine's speed.
    assert asked + 600 - 1 <= got.value.until <= answered + 600 + 1
    assert len(prism_github.requests()) == 1  # one refusal, no retry against it
    prism_github.rate_limited(1, "secondary", retry_after=1)
    assert g.pull(1).number > 0  # a short one is waited out in the request, once
    assert [s for _m, _p, s in prism_github.requests()][1:] == [429, 200]
    assert prism_github.validation_errors() == []


def test_the_bridge_waits_out_a_rate_limit_and_never_hammers(
        repo: Path, tmp_path: Path, github_standin: StandIn) -> None:
    s = github_standin
    forge_board(repo, tmp_path, s, "t1")
    liza = Liza.open(repo, "human")
    lines: list[str] = []
    bridge = Bridge(liza, GitHubForge(f"{s.owner}/{s.repo}", s.token, s.api_url), lines.append,
                    remote="forge")
    s.rate_limited(1, "primary", reset_in=40)  # longer than a request waits: the bridge waits
    first = bridge.step()
    assert first.error is not None and "rate limit" in first.error
    sent = len(s.requests())
    for _ in range(20):  # passes while the limit holds send nothing
        assert bridge.step().error == first.error
    assert len(s.requests()) == sent and pulls_of(s, "liza/t1") == []
    bridge.paused_until = 0  # the reset came (the stand-in's limit is spent)
    done = bridge.step()
    assert done.error is None and done.opened == ["t1"]
    assert len(pulls_of(s, "liza/t1")) == 1
    assert s.validation_errors() == []
    assert any("rate limit" in line for line in lines)


def test_polling_is_conditional_an_unchanged_pull_request_is_a_304(
        repo: Path, tmp_path: Path, github_standin: StandIn) -> None:
    s = github_standin
    forge_board(repo, tmp_path, s, "t1")
    bridge = Bridge(Liza.open(repo, "human"),
                    GitHubForge(f"{s.owner}/{s.repo}", s.token, s.api_url), print, remote="forge")
    for _ in range(3):
        assert bridge.step().error is None
    gets = [st for m, p, st in s.requests() if m == "GET" and p.endswith("/pulls/1/reviews")]
    assert gets[0] == 200 and gets[1:] == [304, 304], gets  # revalidated with its ETag
    assert s.validation_errors() == []


def test_github_enterprise_servers_layout(repo: Path, tmp_path: Path,
                                          github_standin: StandIn) -> None:
    """REST under /api/v3, GraphQL at /api/graphql (githubkit derives it from the REST base)."""
    s = github_standin
    forge_board(repo, tmp_path, s, "t1")
    g = GitHubForge(f"{s.owner}/{s.repo}", s.token, s.ghes_api_url)
    bridge = Bridge(Liza.open(repo, "human"), g, print, remote="forge")
    assert bridge.step().opened == ["t1"]
    [pr] = pulls_of(s, "liza/t1")
    s.add_review(pr["number"], "APPROVED", "ok")
    bridge.step()  # the human's approval
    bridge.step()  # out of draft, through /api/graphql
    [pr] = pulls_of(s, "liza/t1")
    assert pr["draft"] is False
    assert any(p.endswith("/api/graphql") for _m, p, _s in s.requests())
    assert s.validation_errors() == []
