"""A stateful stand-in for GitHub's REST API: exactly the endpoints the forge bridge uses (listed
in docs/forge.md, "How this is tested"), with GitHub's semantics, over a real bare git repository.

    bridge -> front (front.py) -> real `prism proxy --errors` (GitHub's description)
                                   -> StandInServer
                   \\-> /graphql -> StandInServer directly (GraphQL is not in the REST description)

What it keeps and does, as github.com does:
- pull requests: one number sequence per repository, `node_id`, draft, state/merged, head.sha
  following the branch in the bare repository while open; 422 when the head (or base) branch is
  not in the bare repository, when an open PR exists for the same head and base, or when the head
  has no commits the base lacks; list filtered by state and `head=owner:branch` (a head without
  `owner:` filters nothing, as on GitHub), newest first, paginated with a Link header;
- PATCH title/body/state (a merged PR cannot be reopened);
- PUT .../merge: 405 for a draft, closed or conflicting PR, 409 when `sha` is not the head;
  `merge` writes a real merge commit (git merge-tree + commit-tree) on the base branch of the bare
  repository, `squash` a single-parent one; the PR is then closed, merged, with merge_commit_sha;
- labels on the PR's issue (POST adds, creating unknown labels; DELETE removes, 404 if absent),
  reviews (the token's user cannot approve or request changes on its own PR: 422) with line
  comments, check runs per sha (the latest per name, as `filter=latest`), commit statuses and
  the combined status per sha;
- GraphQL: only `markPullRequestReadyForReview(input: {pullRequestId})` on the PR's node_id;
- ETag on every 200 GET and 304 for a matching If-None-Match (a 304 costs no rate limit);
  x-ratelimit-* headers on every answer; 401 for a missing or wrong token;
- switches: `rate_limited(n, kind)` (the stand-in refuses the next n requests as GitHub's limiter
  does; ratelimit.py), `down(seconds)`/`up()` (the front refuses connections).
Every JSON answer is built over a sample of the description's own schema for that response
(description.py), so it carries every field the schema requires; Prism's proxy checks it.
"""
from __future__ import annotations

import copy
import hashlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qs, unquote

from tests.forge import ratelimit, tools
from tests.forge.description import Description
from tests.forge.graphql import not_answered as graphql_not_answered
from tests.forge.graphql import ready_for_review as graphql_ready
from tests.forge.prism import Prism
from tests.forge.world import BOT, DOCS, GitHubError, Json, Reply, World, merge_into

__all__ = ["StandIn", "StandInServer", "World"]


# -- the HTTP side ---------------------------------------------------------------------------------

Route = Callable[[World, "re.Match[str]", dict[str, str], Json, str], Reply]
_ROUTES: list[tuple[str, re.Pattern[str], Route]] = []
_REPO = r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)"


def route(method: str, pattern: str) -> Callable[[Route], Route]:
    def add(fn: Route) -> Route:
        _ROUTES.append((method, re.compile(pattern + r"$"), fn))
        return fn
    return add


def paginate(w: World, items: list[Json], q: dict[str, str], path: str) -> Reply:
    per = max(1, min(100, int(q.get("per_page") or 30)))
    page = max(1, int(q.get("page") or 1))
    last = max(1, (len(items) + per - 1) // per)
    headers = {}
    if page < last:
        base = f"{w.api}{path}?per_page={per}"
        headers["Link"] = f'<{base}&page={page + 1}>; rel="next", <{base}&page={last}>; rel="last"'
    return Reply(200, items[(page - 1) * per: page * per], headers)


@route("GET", r"^/rate_limit")
def _rate_limit(w: World, m: re.Match[str], q: dict[str, str], body: Json, user: str) -> Reply:
    reset = int(time.time()) + 3600
    core = {"limit": ratelimit.LIMIT, "remaining": w.remaining,
            "used": ratelimit.LIMIT - w.remaining, "reset": reset}
    search = {"limit": 30, "remaining": 30, "used": 0, "reset": reset}
    graphql = dict(core)
    return Reply(200, w.fill("rate-limit-overview", {
        "resources": {"core": core, "search": search, "graphql": graphql}, "rate": core}))


@route("GET", _REPO)
def _get_repo(w: World, m: re.Match[str], q: dict[str, str], body: Json, user: str) -> Reply:
    return Reply(200, merge_into(w.repository("full-repository"),
                                 {"network_count": 0, "subscribers_count": 0}))


@route("GET", _REPO + r"/pulls")
def _list_pulls(w: World, m: re.Match[str], q: dict[str, str], body: Json, user: str) -> Reply:
    return paginate(w, w.list_prs(q), q, f"/repos/{w.owner}/{w.repo}/pulls")


@route("POST", _REPO + r"/pulls")
def _create_pull(w: World, m: re.Match[str], q: dict[str, str], body: Json, user: str) -> Reply:
    return w.create_pr(body or {}, user)


@route("GET", _REPO + r"/pulls/(?P<n>\d+)")
def _get_pull(w: World, m: re.Match[str], q: dict[str, str], body: Json, user: str) -> Reply:
    w.pr(int(m["n"]))  # 404 when there is none
    return Reply(200, w.pr_view(int(m["n"])))


@route("PATCH", _REPO + r"/pulls/(?P<n>\d+)")
def _patch_pull(w: World, m: re.Match[str], q: dict[str, str], body: Json, user: str) -> Reply:
    return w.update_pr(int(m["n"]), body or {})


@route("PUT", _REPO + r"/pulls/(?P<n>\d+)/merge")
def _merge_pull(w: World, m: re.Match[str], q: dict[str, str], body: Json, user: str) -> Reply:
    return w.merge_pr(int(m["n"]), body or {}, user)


@route("GET", _REPO + r"/issues/(?P<n>\d+)/labels")
def _labels(w: World, m: re.Match[str], q: dict[str, str], body: Json, user: str) -> Reply:
    n = int(m["n"])
    w.pr(n)
    return paginate(w, [w.label(x) for x in w.issue_labels.get(n, [])], q,
                    f"/repos/{w.owner}/{w.repo}/issues/{n}/labels")


@route("POST", _REPO + r"/issues/(?P<n>\d+)/labels")
def _add_labels(w: World, m: re.Match[str], q: dict[str, str], body: Json, user: str) -> Reply:
    names = body.get("labels", []) if isinstance(body, dict) else body
    names = [x["name"] if isinstance(x, dict) else str(x) for x in names or []]
    return Reply(200, w.add_labels(int(m["n"]), names))


@route("DELETE", _REPO + r"/issues/(?P<n>\d+)/labels/(?P<name>[^/]+)")
def _del_label(w: World, m: re.Match[str], q: dict[str, str], body: Json, user: str) -> Reply:
    return Reply(200, w.remove_label(int(m["n"]), unquote(m["name"])))


@route("GET", _REPO + r"/pulls/(?P<n>\d+)/reviews")
def _reviews(w: World, m: re.Match[str], q: dict[str, str], body: Json, user: str) -> Reply:
    n = int(m["n"])
    w.pr(n)
    return paginate(w, w.reviews.get(n, []), q, f"/repos/{w.owner}/{w.repo}/pulls/{n}/reviews")


EVENTS = {"COMMENT": "COMMENTED", "APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED"}


@route("POST", _REPO + r"/pulls/(?P<n>\d+)/reviews")
def _post_review(w: World, m: re.Match[str], q: dict[str, str], body: Json, user: str) -> Reply:
    n = int(m["n"])
    p = w.pr(n)
    body = body or {}
    event = body.get("event")
    doc = f"{DOCS}/pulls/reviews#create-a-review-for-a-pull-request"
    if event in ("APPROVE", "REQUEST_CHANGES") and p["user"] == user:
        verb = "approve" if event == "APPROVE" else "request changes on"
        raise GitHubError(422, "Unprocessable Entity",
                          [f"Review Can not {verb} your own pull request"], doc)
    if event in ("COMMENT", "REQUEST_CHANGES") and not body.get("body"):
        raise GitHubError(422, "Unprocessable Entity",
                          [f"Review body is required for {event} events"], doc)
    if body.get("commit_id") and not w.commit_exists(body["commit_id"]):
        raise GitHubError(422, "Unprocessable Entity", ["Commit SHA does not exist"], doc)
    comments = [(c.get("path", ""), int(c.get("line") or c.get("position") or 1),
                 c.get("body", "")) for c in body.get("comments") or []]
    state = EVENTS.get(str(event), "PENDING")
    return Reply(200, w.review(n, user, state, str(body.get("body") or ""),
                               body.get("commit_id"), comments))


@route("GET", _REPO + r"/pulls/(?P<n>\d+)/reviews/(?P<rid>\d+)/comments")
def _review_comments(w: World, m: re.Match[str], q: dict[str, str], body: Json,
                     user: str) -> Reply:
    n, rid = int(m["n"]), int(m["rid"])
    w.pr(n)
    if not any(rv["id"] == rid for rv in w.reviews.get(n, [])):
        raise GitHubError(404, "Not Found")
    return paginate(w, w.review_comments.get(rid, []), q,
                    f"/repos/{w.owner}/{w.repo}/pulls/{n}/reviews/{rid}/comments")


@route("GET", _REPO + r"/commits/(?P<ref>.+)/check-runs")
def _check_runs(w: World, m: re.Match[str], q: dict[str, str], body: Json, user: str) -> Reply:
    sha = w.resolve_ref(unquote(m["ref"]))
    runs = w.check_runs.get(sha, [])
    if q.get("filter", "latest") == "latest":
        latest: dict[str, Json] = {}
        for run in runs:
            latest[run["name"]] = run
        runs = list(latest.values())
    if q.get("check_name"):
        runs = [r for r in runs if r["name"] == q["check_name"]]
    if q.get("status"):
        runs = [r for r in runs if r["status"] == q["status"]]
    page = paginate(w, list(reversed(runs)), q,
                    f"/repos/{w.owner}/{w.repo}/commits/{m['ref']}/check-runs")
    page.body = {"total_count": len(runs), "check_runs": page.body}
    return page


@route("GET", _REPO + r"/commits/(?P<ref>.+)/status")
def _status(w: World, m: re.Match[str], q: dict[str, str], body: Json, user: str) -> Reply:
    return Reply(200, w.combined_status(w.resolve_ref(unquote(m["ref"]))))


def graphql(w: World, body: Json, user: str) -> Reply:
    """POST /graphql: the one mutation the bridge uses (REST cannot take a PR out of draft)."""
    ready, node = graphql_ready(body)
    if not ready:
        return Reply(200, graphql_not_answered())
    pr = next((p for p in w.prs.values() if p["node_id"] == node), None)
    if pr is None:
        return Reply(200, {"data": {"markPullRequestReadyForReview": None}, "errors": [{
            "type": "NOT_FOUND", "path": ["markPullRequestReadyForReview"],
            "locations": [{"line": 1, "column": 1}],
            "message": f"Could not resolve to a node with the global id of '{node}'"}]})
    if pr["state"] == "open":
        pr["draft"] = False
        pr["updated"] = time.time()
    return Reply(200, {"data": {"markPullRequestReadyForReview": {"pullRequest": {
        "id": pr["node_id"], "number": pr["number"], "isDraft": pr["draft"]}}}})


class StandInServer:
    """The HTTP server (one per pytest process, behind the process's Prism proxy); it serves
    the World attached to it, one test at a time."""

    def __init__(self) -> None:
        self.world: World | None = None
        self.seen: list[tuple[str, str, int]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _any(self) -> None:
                server._handle(self)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.1},
                         daemon=True, name="github-standin").start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("content-length") or 0)
        raw = h.rfile.read(length) if length else b""
        path, _, query = h.path.partition("?")
        q = {k: v[-1] for k, v in parse_qs(query).items()}
        w = self.world
        if w is None:
            reply = Reply(503, {"message": "no stand-in attached", "documentation_url": DOCS})
        else:
            with w.lock:
                reply = self._answer(w, h, path, q, raw)
        self.seen.append((h.command, path, reply.status))
        data = b"" if reply.body is None else json.dumps(reply.body).encode()
        try:
            h.send_response(reply.status)
            for k, v in reply.headers.items():
                h.send_header(k, v)
            if reply.body is not None:
                h.send_header("Content-Type", "application/json; charset=utf-8")
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
        except OSError:
            pass

    def _answer(self, w: World, h: BaseHTTPRequestHandler, path: str, q: dict[str, str],
                raw: bytes) -> Reply:
        auth = h.headers.get("authorization", "")
        scheme, _, token = auth.partition(" ")
        if scheme.lower() not in ("bearer", "token") or token.strip() != w.token:
            return Reply(401, {"message": "Bad credentials" if auth else
                               "Requires authentication", "documentation_url": DOCS,
                               "status": "401"})
        if w.refusals:
            kind, code, reset_in, retry_after = w.refusals.popleft()
            status, headers, refusal = ratelimit.refusal(kind, code, reset_in=reset_in,
                                                         retry_after=retry_after)
            headers.pop("content-type", None)
            return Reply(status, json.loads(refusal), headers)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            return Reply(400, {"message": "Problems parsing JSON", "documentation_url": DOCS})
        user = BOT
        if path in ("/graphql", "/api/graphql") and h.command == "POST":
            reply = graphql(w, body, user)
        else:
            reply = self._route(w, h.command, path, q, body, user)
        if h.command == "GET" and reply.status == 200:
            data = json.dumps(reply.body, sort_keys=True).encode()
            etag = f'W/"{hashlib.sha256(data).hexdigest()[:40]}"'
            reply.headers.update({"ETag": etag, "Cache-Control": "private, max-age=60, s-maxage=60",
                                  "Vary": "Accept, Authorization, Cookie, X-GitHub-OTP"})
            if etag in [t.strip() for t in h.headers.get("if-none-match", "").split(",")]:
                # GitHub: a 304 does not count against the rate limit
                reply = Reply(304, None, {"ETag": etag})
                reply.headers.update(ratelimit.ok_headers(w.remaining))
                return reply
        w.remaining = max(0, w.remaining - 1)
        reply.headers.update(ratelimit.ok_headers(w.remaining))
        reply.headers.setdefault("X-GitHub-Api-Version-Selected", "2022-11-28")
        return reply

    def _route(self, w: World, method: str, path: str, q: dict[str, str], body: Json,
               user: str) -> Reply:
        for m, rx, fn in _ROUTES:
            if m != method:
                continue
            found = rx.match(path)
            if found is None:
                continue
            if "owner" in found.groupdict() and (found["owner"], found["repo"]) != (w.owner,
                                                                                    w.repo):
                return Reply(404, {"message": "Not Found", "documentation_url": DOCS,
                                   "status": "404"})
            try:
                return fn(w, found, q, body, user)
            except GitHubError as e:
                return copy.deepcopy(e.reply)
        return Reply(404, {"message": "Not Found", "documentation_url": DOCS, "status": "404"})


# -- what a test holds -----------------------------------------------------------------------------

class StandIn:
    """The `github_standin` fixture's object: the forge as the bridge sees it (`api_url`, through
    the front and a real Prism proxy; `graphql_url`, straight to the stand-in), and the world's
    hands (checks, statuses, human reviews, switches). `bare` is the bare repository backing
    the forge repository: empty at first (push `main` and the head branches to it)."""

    def __init__(self, server: StandInServer, proxy: Prism, description: Description, bare: Path,
                 owner: str = "liza-org", repo: str = "project",
                 token: str = "ghp_standin_token") -> None:
        from tests.forge.front import Front
        self.bare, self.owner, self.repo, self.token = bare, owner, repo, token
        self._prism = proxy
        self._mark = proxy.mark()
        self.front = Front(proxy.url, graphql_target=server.url)
        self.api_url = self.front.url
        self.graphql_url = f"{self.front.url}/graphql"
        self.ghes_api_url = self.front.ghes_url  # GHES's layout: REST /api/v3, /api/graphql
        self.world = World(description, bare, owner, repo, token, self.api_url)
        if server.world is not None:
            raise RuntimeError("one github_standin at a time per pytest process")
        self._server = server
        server.world = self.world

    # -- the world acting --------------------------------------------------------------------------

    def add_check_run(self, sha: str, name: str, status: str = "completed",
                      conclusion: str | None = "success", details_url: str | None = None) -> Json:
        with self.world.lock:
            run = self.world.check_run(sha, name, status, conclusion, details_url)
            payload = {"action": "completed" if status == "completed" else "created",
                       "check_run": run, **self._common()}
        self.world.deliver("check_run", f"webhook-check-run-{payload['action']}", payload)
        return run

    def set_status(self, sha: str, context: str, state: str, target_url: str | None = None,
                   description: str | None = None) -> Json:
        with self.world.lock:
            st = self.world.status(sha, context, state, target_url, description)
            payload = {"id": st["id"], "sha": sha, "name": f"{self.owner}/{self.repo}",
                       "target_url": target_url, "context": context, "description": description,
                       "state": state, "commit": self.world.commit_of(sha), "branches": [],
                       "created_at": st["created_at"], "updated_at": st["updated_at"],
                       **self._common()}
        self.world.deliver("status", "webhook-status", payload)
        return st

    def add_review(self, number: int, state: str = "COMMENTED", body: str = "",
                   comments: list[tuple[str, int, str]] | tuple[()] = (),
                   user: str = "human") -> Json:
        """A review by `user` (not the token's user): state APPROVED, CHANGES_REQUESTED or
        COMMENTED; comments are (path, line, body) line comments."""
        with self.world.lock:
            rv = self.world.review(number, user, state, body, None, list(comments))
            # A webhook's review.state is lower case ("changes_requested"), the REST API's
            # upper case ("CHANGES_REQUESTED"), as on github.com.
            payload = {"action": "submitted", "review": {**rv, "state": rv["state"].lower()},
                       "pull_request": self.world.pr_view(number, "pull-request-simple"),
                       **self._common(user)}
        self.world.deliver("pull_request_review", "webhook-pull-request-review-submitted",
                           payload)
        return rv

    def webhook(self, url: str, secret: str) -> None:
        """Deliver pull_request_review, check_run and status events to `url` from now on, signed
        with `secret` (X-Hub-Signature-256), synchronously; `.world.deliveries` records the
        receiver's answers (0: unreachable)."""
        with self.world.lock:
            self.world.webhooks.append((url, secret))

    def _common(self, sender: str = "ci-bot[bot]") -> Json:
        return {"repository": self.world.repository(), "sender": self.world.user(sender)}

    # -- switches ----------------------------------------------------------------------------------

    def rate_limited(self, n: int = 1, kind: str = "primary", *, reset_in: float = 3.0,
                     retry_after: int = 1) -> None:
        """The next n requests that reach the stand-in are refused as GitHub's rate limiter
        refuses (403 + x-ratelimit-remaining 0 + x-ratelimit-reset; 429 + retry-after)."""
        code, _, _ = ratelimit.answer(kind)  # a wrong kind fails here, in the test
        with self.world.lock:
            self.world.refusals.extend((kind, code, reset_in, retry_after) for _ in range(n))

    def server_error(self, n: int = 1, code: int = 502) -> None:
        """The next n requests that reach the stand-in fail with `code` and GitHub's JSON."""
        with self.world.lock:
            self.world.refusals.extend(("server", code, 0.0, 0) for _ in range(n))

    def down(self, seconds: float | None = None) -> None:
        """Connections to api_url/graphql_url are refused (for `seconds`; None: until up())."""
        self.front.down(seconds)

    def up(self) -> None:
        self.front.up()

    # -- what happened -----------------------------------------------------------------------------

    def pulls(self) -> list[Json]:
        with self.world.lock:
            return [self.world.pr_view(n) for n in sorted(self.world.prs)]

    def requests(self) -> list[tuple[str, str, int]]:
        """Every request the client made (method, path without query, status it got),
        the ones Prism refused and the GraphQL ones included."""
        return [(e.method, e.path, e.status) for e in self.front.exchanges()]

    def validation_errors(self) -> list[str]:
        """Prism's log lines at level error since this stand-in began (request and response
        violations, requests Prism refused), with the details of its 500 VIOLATIONS answers."""
        return self._prism.errors(self._mark) + self.front.errors(tools.npm_root())

    def validation_warnings(self) -> list[str]:
        return list(self._prism.warnings(self._mark))

    def webhook_errors(self) -> list[str]:
        """What the description's x-webhooks schemas find wrong in the payloads sent so far
        (Prism never sees them): the harness's own check of its events."""
        with self.world.lock:
            sent = list(self.world.sent)
        return [f"{event}: {e}" for event, schema, payload in sent
                for e in self.world.d.errors(schema, payload)]

    def close(self) -> None:
        self.front.close()
        if self._server.world is self.world:
            self._server.world = None
