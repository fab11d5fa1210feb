"""The harness itself: Prism's mock and validation really catch what they must, the front's
switches do what they say, the stand-in keeps GitHub's semantics and validates."""
from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.conftest import git
from tests.forge.harness import PrismGitHub
from tests.forge.standin import StandIn, World

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
    return httpx.Client(base_url=s.api_url, timeout=60, headers={**HEADERS,
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
        labels = c.post(f"{repo}/issues/1/labels", json={"labels": ["liza:submitted", "x"]})
        assert [x["name"] for x in labels.json()] == ["liza:submitted", "x"]
        assert [x["name"] for x in c.delete(f"{repo}/issues/1/labels/x").json()] == [
            "liza:submitted"]
        assert c.delete(f"{repo}/issues/1/labels/x").status_code == 404
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
    assert git(s.bare, "rev-parse", "main") == merge
    assert git(s.bare, "rev-list", "--parents", "-n", "1", merge).split()[2] == head
    assert s.validation_errors() == []
    statuses = [st for _, _, st in s.requests()]
    assert statuses.count(404) == 1 and all(st < 300 for st in statuses if st != 404), statuses
    print("\n".join(s.validation_warnings()))


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
    assert any("node_id" in e for e in s.validation_errors()), s.validation_errors()


def test_standin_request_that_violates_the_description_is_reported(
        github_standin: StandIn) -> None:
    s = github_standin
    with standin_client(s) as c:
        r = c.post(f"/repos/{s.owner}/{s.repo}/pulls", json={"title": "t", "base": "main"})
    assert r.status_code == 422
    assert any("required property 'head'" in e for e in s.validation_errors()), \
        s.validation_errors()
    assert s.world.prs == {}  # Prism refused it: the stand-in never saw it
