"""The harness itself: Prism's mock and validation really catch what they must, the front's
switches do what they say, the stand-in keeps GitHub's semantics and validates."""
from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.conftest import git
from tests.forge.description import load
from tests.forge.harness import PrismGitHub, tools_or_skip_reason
from tests.forge.standin import StandIn, World

HEADERS = {"Authorization": "Bearer t", "Accept": "application/vnd.github+json",
           "X-GitHub-Api-Version": "2022-11-28"}


def client(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers=HEADERS, timeout=60, trust_env=False)


def test_mock_reports_a_request_that_violates_the_description(prism_github: PrismGitHub) -> None:
    with client(prism_github.api_url) as c:
        r = c.post("/repos/o/r/pulls", json={"title": "t", "base": "main"})  # no head
    assert r.status_code == 422
    errors = prism_github.validation_errors()
    assert any("required property 'head'" in e for e in errors), errors
    assert "POST /repos/o/r/pulls: request.body Request body must have required property " \
           "'head'" in errors  # the request named


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


@pytest.mark.parametrize("path,by", [("/repos/o/r/pulls/1", "prism"),  # declares 503
                                     ("/repos/o/r/issues/1/labels", "front")])  # does not
def test_mock_server_errors(prism_github: PrismGitHub, path: str, by: str) -> None:
    prism_github.server_error(2, 503)
    with client(prism_github.api_url) as c:
        assert [c.get(path).status_code for _ in range(3)] == [503, 503, 200]
    assert [e.answered_by for e in prism_github.exchanges()] == [by, by, "prism"]
    assert prism_github.validation_errors() == []


def test_tools_say_in_one_line_why_they_are_missing(tmp_path: Path) -> None:
    """Without npm the install says why in one line and exits 0 (CI goes on; the forge tests
    skip with that line)."""
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path),
           "GITLIZA_FORGE_TOOLS_CACHE": str(tmp_path / "cache")}
    r = subprocess.run([sys.executable, "-m", "tests.forge.tools"], env=env, text=True,
                       capture_output=True, timeout=60, cwd=Path(__file__).parents[2])
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("\n") == 1 and "needs node and npm" in r.stdout, r.stdout
    assert "@stoplight/prism-cli 5.16.0" in r.stdout


def test_mock_answers_the_ready_for_review_mutation(prism_github: PrismGitHub) -> None:
    """GraphQL is not in the description: the mock's front answers the one mutation itself, so a
    bridge using it leaves nothing in Prism's log; anything else is a GraphQL error."""
    with client(prism_github.api_url) as c:
        r = c.post(prism_github.graphql_url, json={
            "query": "mutation($input: MarkPullRequestReadyForReviewInput!) { "
                     "markPullRequestReadyForReview(input: $input) { pullRequest { isDraft } } }",
            "variables": {"input": {"pullRequestId": "PR_x"}}})
        assert r.json()["data"]["markPullRequestReadyForReview"]["pullRequest"]["id"] == "PR_x"
        assert "errors" in c.post(prism_github.graphql_url,
                                  json={"query": "{ viewer { login } }"}).json()
    assert prism_github.validation_errors() == []
    assert [e.answered_by for e in prism_github.exchanges()] == ["graphql", "graphql"]


def test_graphql_requests_are_checked_against_githubs_schema(prism_github: PrismGitHub) -> None:
    """Prism cannot check GraphQL; GitHub's published GraphQL schema can: a field PullRequest
    does not have, or a variable of the wrong type, is a validation error."""
    mutation = ("mutation($input: MarkPullRequestReadyForReviewInput!) { "
                "markPullRequestReadyForReview(input: $input) { pullRequest { %s } } }")
    with client(prism_github.api_url) as c:
        c.post(prism_github.graphql_url, json={"query": mutation % "isDraft",
                                              "variables": {"input": {"pullRequestId": "PR_1"}}})
        assert prism_github.validation_errors() == []
        c.post(prism_github.graphql_url, json={"query": mutation % "draft",
                                              "variables": {"input": {"pullRequestId": "PR_1"}}})
        c.post(prism_github.graphql_url, json={"query": mutation % "isDraft",
                                              "variables": {"input": {"id": "PR_1"}}})
    errors = prism_github.validation_errors()
    assert all(e.startswith("POST /graphql: GraphQL: ") for e in errors), errors
    assert 'Cannot query field "draft" on type "PullRequest"' in errors[0]
    assert any('Field "id" is not defined by type "MarkPullRequestReadyForReviewInput"' in e
               for e in errors[1:]), errors


def test_mock_down_refuses_connections_then_comes_back(prism_github: PrismGitHub) -> None:
    with client(prism_github.api_url) as c:
        assert c.get("/rate_limit").status_code == 200
        prism_github.down()
        with pytest.raises(httpx.ConnectError):
            c.get("/rate_limit")
        prism_github.up()
        assert c.get("/rate_limit").status_code == 200


# -- the stand-in behind Prism's proxy -------------------------------------------------------------

def push_branch(bare: Path, branch: str, files: dict[str, str], base: str | None = None) -> str:
    """Commit `files` on `branch` (from `base`, or a root commit) in a scratch clone and push it
    to `bare`; the new commit's sha."""
    work = bare.parent / f"work-{branch.replace('/', '-')}"
    if not work.exists():
        git(bare.parent, "clone", "-q", str(bare), str(work))
    git(work, "fetch", "-q", "origin")
    if base is None:
        git(work, "checkout", "-q", "--orphan", branch)
        git(work, "rm", "-rqf", "--ignore-unmatch", ".")
    else:
        git(work, "checkout", "-q", "-B", branch, f"origin/{base}")
    for name, text in files.items():
        (work / name).write_text(text)
        git(work, "add", name)
    git(work, "commit", "-q", "-m", f"{branch}: {', '.join(files)}")
    git(work, "push", "-q", "-f", "origin", f"HEAD:refs/heads/{branch}")
    return git(work, "rev-parse", "HEAD")


def standin_client(s: StandIn) -> httpx.Client:
    return httpx.Client(base_url=s.api_url, timeout=60, trust_env=False, headers={**HEADERS,
                        "Authorization": f"Bearer {s.token}"})


def test_standin_scripted_sequence_validates(github_standin: StandIn) -> None:
    s = github_standin
    push_branch(s.bare, "main", {"README.md": "project\n"})
    head = push_branch(s.bare, "liza/t-1", {"a.txt": "a\n"}, base="main")
    repo = f"/repos/{s.owner}/{s.repo}"
    by_head: dict[str, str | int] = {"state": "all", "head": f"{s.owner}:liza/t-1",
                                    "per_page": 100}
    with standin_client(s) as c:
        assert c.get(repo).json()["full_name"] == f"{s.owner}/{s.repo}"
        assert c.get("/rate_limit").json()["resources"]["core"]["limit"] == 5000
        assert c.get(f"{repo}/pulls", params=by_head).json() == []
        r = c.post(f"{repo}/pulls", json={"title": "t-1", "head": "liza/t-1", "base": "main",
                                          "body": "the task", "draft": True})
        assert r.status_code == 201, r.text
        pr = r.json()
        assert (pr["number"], pr["draft"], pr["head"]["sha"], pr["state"]) == (1, True, head,
                                                                                "open")
        assert [p["number"] for p in c.get(f"{repo}/pulls", params=by_head).json()] == [1]
        assert c.get(f"{repo}/pulls", params={**by_head, "head": f"{s.owner}:other"}).json() == []
        labels = c.post(f"{repo}/issues/1/labels", json={"labels": ["liza:submitted",
                                                                     "liza: in review"]})
        assert [x["name"] for x in labels.json()] == ["liza:submitted", "liza: in review"]
        gone = c.delete(f"{repo}/issues/1/labels/{quote('liza: in review', safe='')}")
        assert [x["name"] for x in gone.json()] == ["liza:submitted"]
        assert c.delete(f"{repo}/issues/1/labels/liza:submitted").status_code == 200
        assert c.delete(f"{repo}/issues/1/labels/liza:submitted").status_code == 404
        assert c.get(f"{repo}/issues/1/labels").json() == []
        ready = c.post(s.graphql_url, json={
            "query": "mutation($id: ID!) { markPullRequestReadyForReview(input: "
                     "{pullRequestId: $id}) { pullRequest { isDraft } } }",
            "variables": {"id": pr["node_id"]}})
        assert ready.json()["data"]["markPullRequestReadyForReview"]["pullRequest"][
            "isDraft"] is False
        assert c.get(f"{repo}/pulls/1").json()["draft"] is False
        s.add_check_run(head, "ci/test", conclusion="failure", details_url="https://ci/log/1")
        s.add_check_run(head, "ci/test", conclusion="success")  # the latest per name counts
        s.set_status(head, "ci/lint", "success", "https://ci/lint/1")
        runs = c.get(f"{repo}/commits/{head}/check-runs", params={"per_page": 100}).json()
        assert [(x["name"], x["conclusion"]) for x in runs["check_runs"]] == [
            ("ci/test", "success")]
        assert c.get(f"{repo}/commits/{head}/status").json()["state"] == "success"
        s.add_review(1, "CHANGES_REQUESTED", "please fix", comments=[("a.txt", 1, "typo")])
        r = c.post(f"{repo}/pulls/1/reviews", json={"commit_id": head, "body": "verdict",
                                                     "event": "COMMENT"})
        assert r.status_code == 200, r.text
        reviews = c.get(f"{repo}/pulls/1/reviews", params={"per_page": 100}).json()
        assert [(x["user"]["login"], x["state"]) for x in reviews] == [
            ("human", "CHANGES_REQUESTED"), ("liza-bot", "COMMENTED")]
        comments = c.get(f"{repo}/pulls/1/reviews/{reviews[0]['id']}/comments").json()
        assert [(x["path"], x["line"], x["body"]) for x in comments] == [("a.txt", 1, "typo")]
        assert c.patch(f"{repo}/pulls/1", json={"title": "t-1 (approved)"}).json()[
            "title"] == "t-1 (approved)"
        r = c.put(f"{repo}/pulls/1/merge", json={"sha": head, "merge_method": "merge"})
        assert r.status_code == 200, r.text
        merge = r.json()["sha"]
        after = c.get(f"{repo}/pulls/1").json()
        assert (after["merged"], after["state"], after["merge_commit_sha"]) == (True, "closed",
                                                                                 merge)
        ghes = c.get(f"{s.ghes_api_url}{repo}/pulls/1")  # GHES's layout reaches the same
        assert ghes.json()["merged"] is True
        again = c.post(f"{s.ghes_api_url.removesuffix('/v3')}/graphql", json={
            "query": f'mutation {{ markPullRequestReadyForReview(input: {{pullRequestId: '
                     f'"{pr["node_id"]}"}}) {{ pullRequest {{ isDraft }} }} }}'})
        assert again.json()["data"]["markPullRequestReadyForReview"]["pullRequest"][
            "isDraft"] is False
    assert git(s.bare, "rev-parse", "main") == merge
    assert git(s.bare, "rev-list", "--parents", "-n", "1", merge).split()[2] == head
    assert s.validation_errors() == []
    statuses = [st for _, _, st in s.requests()]
    assert statuses.count(404) == 1 and all(st < 300 for st in statuses if st != 404), statuses
    # every status the stand-in answered is one the description declares for its operation
    assert [w for w in s.validation_warnings() if "Unable to match" in w] == [], \
        s.validation_warnings()


def test_standin_answer_that_violates_the_description_is_reported(
        github_standin: StandIn, monkeypatch: pytest.MonkeyPatch) -> None:
    """Prism's proxy validates the stand-in's answers too: a pull request without `node_id`
    (required by GitHub's schema) is reported, and the client gets Prism's 500."""
    s = github_standin
    push_branch(s.bare, "main", {"README.md": "project\n"})
    push_branch(s.bare, "liza/t-1", {"a.txt": "a\n"}, base="main")
    real = World.pr_view

    def broken(self: World, n: int, schema: str = "pull-request") -> object:
        view = real(self, n, schema)
        del view["node_id"]
        return view

    monkeypatch.setattr(World, "pr_view", broken)
    with standin_client(s) as c:
        r = c.post(f"/repos/{s.owner}/{s.repo}/pulls", json={"title": "t", "head": "liza/t-1",
                                                             "base": "main"})
    assert r.status_code == 500
    assert f"POST /repos/{s.owner}/{s.repo}/pulls: response.body Response body must have " \
           "required property 'node_id'" in s.validation_errors(), s.validation_errors()


def test_standin_request_that_violates_the_description_is_reported(
        github_standin: StandIn) -> None:
    s = github_standin
    with standin_client(s) as c:
        r = c.post(f"/repos/{s.owner}/{s.repo}/pulls", json={"title": "t", "base": "main"})
    assert r.status_code == 422
    assert f"POST /repos/{s.owner}/{s.repo}/pulls: request.body Request body must have " \
           "required property 'head'" in s.validation_errors(), s.validation_errors()
    assert s.world.prs == {}  # Prism refused it: the stand-in never saw it


def opened(s: StandIn, c: httpx.Client, branch: str = "liza/t-1") -> Any:
    """main and `branch` pushed, and a draft PR opened for `branch`: its JSON."""
    push_branch(s.bare, "main", {"README.md": "project\n"})
    push_branch(s.bare, branch, {"a.txt": "a\n"}, base="main")
    r = c.post(f"/repos/{s.owner}/{s.repo}/pulls", json={"title": "t", "head": branch,
                                                         "base": "main", "draft": True})
    assert r.status_code == 201, r.text
    return r.json()


def test_standin_etag_gives_304_until_the_pull_request_changes(github_standin: StandIn) -> None:
    s = github_standin
    with standin_client(s) as c:
        opened(s, c)
        url = f"/repos/{s.owner}/{s.repo}/pulls/1"
        first = c.get(url)
        etag = first.headers["etag"]
        again = c.get(url, headers={"If-None-Match": etag})
        assert again.status_code == 304 and again.content == b""
        c.post(f"/repos/{s.owner}/{s.repo}/issues/1/labels", json={"labels": ["liza:review"]})
        changed = c.get(url, headers={"If-None-Match": etag})
        assert changed.status_code == 200 and changed.headers["etag"] != etag
        assert [x["name"] for x in changed.json()["labels"]] == ["liza:review"]
        listed = c.get(f"/repos/{s.owner}/{s.repo}/pulls", params={"state": "all"})
        assert c.get(f"/repos/{s.owner}/{s.repo}/pulls", params={"state": "all"}, headers={
            "If-None-Match": listed.headers["etag"]}).status_code == 304
    assert s.validation_errors() == []


@pytest.mark.parametrize("kind,status,header", [("primary", 403, "x-ratelimit-reset"),
                                                ("secondary", 429, "retry-after")])
def test_standin_rate_limit_switch(github_standin: StandIn, kind: str, status: int,
                                   header: str) -> None:
    s = github_standin
    with standin_client(s) as c:
        opened(s, c)
        s.rate_limited(2, kind)
        url = f"/repos/{s.owner}/{s.repo}/pulls"
        for _ in range(2):
            r = c.get(url, params={"state": "all"})
            assert r.status_code == status
            assert header in r.headers and "rate limit" in r.json()["message"]
            if kind == "primary":
                assert r.headers["x-ratelimit-remaining"] == "0"
        ok = c.get(url, params={"state": "all"})
        assert ok.status_code == 200 and int(ok.headers["x-ratelimit-remaining"]) > 0
    s.server_error(1, 502)
    with standin_client(s) as c:
        assert c.get(f"/repos/{s.owner}/{s.repo}/pulls/1").status_code == 502
    # The refusals went through Prism's proxy: GET /pulls declares neither 403 nor 429, which
    # Prism's proxy says as a warning (an undeclared 2xx would be an error).
    assert s.validation_errors() == []
    assert any("Unable to match the returned status code" in w
               for w in s.validation_warnings()), s.validation_warnings()


def test_standin_down_refuses_connections_and_comes_back(github_standin: StandIn) -> None:
    s = github_standin
    with standin_client(s) as c:
        opened(s, c)
        s.down()
        with pytest.raises(httpx.ConnectError):
            c.get(f"/repos/{s.owner}/{s.repo}/pulls/1")
        with pytest.raises(httpx.ConnectError):
            c.post(s.graphql_url, json={"query": "{ viewer { login } }"})
        s.up()
        assert c.get(f"/repos/{s.owner}/{s.repo}/pulls/1").status_code == 200
        s.down(0.5)  # back by itself
        for _ in range(600):
            try:
                r = c.get(f"/repos/{s.owner}/{s.repo}/pulls/1")
                break
            except httpx.ConnectError:
                threading.Event().wait(0.1)
        assert r.status_code == 200
    assert s.validation_errors() == []


def test_standin_refuses_what_github_refuses(github_standin: StandIn) -> None:
    s = github_standin
    pulls = f"/repos/{s.owner}/{s.repo}/pulls"
    with standin_client(s) as c:
        pr = opened(s, c)
        missing = c.post(pulls, json={"title": "t", "head": "liza/nowhere", "base": "main"})
        assert missing.status_code == 422
        assert missing.json()["errors"][0]["field"] == "head"
        twice = c.post(pulls, json={"title": "t", "head": "liza/t-1", "base": "main"})
        assert twice.status_code == 422 and "already exists" in twice.text
        assert c.put(f"{pulls}/1/merge", json={"sha": pr["head"]["sha"]}).status_code == 405
        own = c.post(f"{pulls}/1/reviews", json={"event": "APPROVE", "body": "ok"})
        assert own.status_code == 422
        with httpx.Client(base_url=s.api_url, headers={**HEADERS,
                          "Authorization": "Bearer wrong"}, timeout=60, trust_env=False) as bad:
            assert bad.get(f"/repos/{s.owner}/{s.repo}").status_code == 401
        assert c.get(f"/repos/{s.owner}/other").status_code == 404
    assert [n for n in s.world.prs] == [1]
    assert s.validation_errors() == []


def test_standin_merge_refuses_a_stale_sha_and_merges_the_head(github_standin: StandIn) -> None:
    s = github_standin
    pulls = f"/repos/{s.owner}/{s.repo}/pulls"
    with standin_client(s) as c:
        pr = opened(s, c)
        old = str(pr["head"]["sha"])
        ready = c.post(s.graphql_url, json={"query": 'mutation { markPullRequestReadyForReview('
                                            f'input: {{pullRequestId: "{pr["node_id"]}"}}) '
                                            "{ pullRequest { isDraft } } }"})
        assert ready.json()["data"]["markPullRequestReadyForReview"]["pullRequest"] == {
            "id": pr["node_id"], "number": 1, "isDraft": False}
        new = push_branch(s.bare, "liza/t-1", {"b.txt": "b\n"}, base="liza/t-1")
        assert c.get(f"{pulls}/1").json()["head"]["sha"] == new  # follows the branch
        assert c.put(f"{pulls}/1/merge", json={"sha": old}).status_code == 409
        r = c.put(f"{pulls}/1/merge", json={"sha": new, "merge_method": "squash"})
        assert r.status_code == 200
        assert git(s.bare, "rev-list", "--parents", "-n", "1", "main").split()[1:] == [
            git(s.bare, "rev-parse", "main~1")]  # squash: one parent
        assert git(s.bare, "show", "main:b.txt") == "b"
        assert c.put(f"{pulls}/1/merge", json={"sha": new}).status_code == 405  # merged already
        assert c.patch(f"{pulls}/1", json={"state": "open"}).status_code == 422
    assert s.validation_errors() == []


def test_standin_webhooks_are_signed(github_standin: StandIn) -> None:
    s = github_standin
    got: list[tuple[str, bytes, str]] = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            got.append((self.headers["x-github-event"], body,
                        self.headers["x-hub-signature-256"]))
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        with standin_client(s) as c:
            pr = opened(s, c)
        s.webhook(f"http://127.0.0.1:{httpd.server_address[1]}/hook", "sekret")
        sha = str(pr["head"]["sha"])
        s.add_check_run(sha, "ci/test", conclusion="failure")
        s.set_status(sha, "ci/lint", "error")
        s.add_review(1, "CHANGES_REQUESTED", "no", comments=[("a.txt", 1, "why")])
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert [e for e, _, _ in got] == ["check_run", "status", "pull_request_review"]
    for _, body, sig in got:
        assert sig == "sha256=" + hmac.new(b"sekret", body, hashlib.sha256).hexdigest()
    assert json.loads(got[2][1])["review"]["state"] == "changes_requested"  # as webhooks say
    assert json.loads(got[0][1])["check_run"]["conclusion"] == "failure"
    assert s.webhook_errors() == []
    assert s.world.deliveries == [("check_run", 204), ("status", 204),
                                  ("pull_request_review", 204)]


CONTRACT = [
    ("get", "/repos/{owner}/{repo}"), ("get", "/rate_limit"),
    ("get", "/repos/{owner}/{repo}/pulls"), ("post", "/repos/{owner}/{repo}/pulls"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("patch", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("put", "/repos/{owner}/{repo}/pulls/{pull_number}/merge"),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}/labels"),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/labels"),
    ("delete", "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews"),
    ("post", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/comments"),
    ("get", "/repos/{owner}/{repo}/commits/{ref}/check-runs"),
    ("get", "/repos/{owner}/{repo}/commits/{ref}/status"),
]


def test_what_the_description_declares_for_rate_limits() -> None:
    """Why the fronts add GitHub's rate-limit headers themselves: the description puts them on no
    refusal of the contract's endpoints, and declares 429 on none of them (if a new
    @octokit/openapi changes that, this test says so and front.py/ratelimit.py can lean on it)."""
    got = tools_or_skip_reason()
    if isinstance(got, str):
        pytest.skip(got)
    d = load(got[1])
    ops = {(m, t): d.operation(m, t.replace("{", "x").replace("}", "")) for m, t in CONTRACT}
    assert all(op is not None and op.template == t for (m, t), op in ops.items()), ops
    declared = {t: op.responses for (m, t), op in ops.items() if op is not None}
    assert not any("429" in r for r in declared.values())
    assert not any("x-ratelimit-remaining" in h or "retry-after" in h
                   for r in declared.values() for code, h in r.items() if code != "200")
    assert "x-ratelimit-remaining" in declared["/rate_limit"]["200"]
    with_403 = sorted(f"{m.upper()} {t}" for (m, t), op in ops.items()
                      if op is not None and op.declares(403))
    assert with_403 == ["GET /repos/{owner}/{repo}", "PATCH /repos/{owner}/{repo}/pulls/"
                        "{pull_number}", "POST /repos/{owner}/{repo}/pulls", "POST /repos/"
                        "{owner}/{repo}/pulls/{pull_number}/reviews", "PUT /repos/{owner}/"
                        "{repo}/pulls/{pull_number}/merge"]
