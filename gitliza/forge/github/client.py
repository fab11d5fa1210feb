"""GitHub (github.com or GitHub Enterprise Server) behind the `Forge` interface, on githubkit
(docs/forge.md says why): its typed REST calls of API version 2022-11-28 build every request, and
its retry waits out a short rate limit; a longer one is raised as ForgeRateLimited with the time
the forge named, so the bridge waits without a thread asleep in a request. Each GET is a
conditional one (If-None-Match with the ETag of the last answer to that URL: a 304 costs no rate
limit on GitHub), from a small cache of our own (`Etags`), not githubkit's HTTP cache: hishel
1.4, under it, drops every stored answer when a 304 carries a weak ETag (GitHub's are weak,
W/"...") and more than one answer is stored, which happens after each change (a revalidation
answered 200 keeps the stale one), and then sends the request again unconditionally: two
requests, the second one counted, where one 304 was due (tests/forge/test_conditional.py).

Responses are read as JSON, not as githubkit's pydantic models: the bridge needs a few fields,
and a GHES version or a new field must not turn a good answer into an error.

Only these endpoints are used (the contract the tests hold the bridge to, docs/forge.md)."""
from __future__ import annotations

import time
from collections import OrderedDict
from datetime import timedelta
from typing import Any, Callable, Literal

from gitliza.core.forgerules import Check
from gitliza.errors import MissingDependency
from gitliza.forge import ForgeRateLimited, ForgeRefused, ForgeUnreachable, PullRequest, Review

try:
    import httpx
    from githubkit import GitHub
    from githubkit.exception import (GitHubException, GraphQLFailed, RateLimitExceeded,
                                     RequestFailed)
    from githubkit.retry import RetryOption
except ImportError as e:  # the optional extra (pyproject.toml `forge`)
    raise MissingDependency(f"the forge bridge needs githubkit ({e.name} is missing): "
                            "pip install 'gitliza[forge]'") from None

API_VERSION: Literal["2022-11-28"] = "2022-11-28"
SHORT_WAIT = 30.0  # a rate limit shorter than this is waited out in the request (one retry)
TIMEOUT = 20.0
ETAGS_MAX = 2000  # cached answers (a few per task the bridge watches), the oldest dropped first
_READY = ("mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) "
          "{ pullRequest { isDraft } } }")


def _retry(exc: GitHubException, count: int) -> RetryOption:
    """githubkit's retry, bounded: one short rate-limit wait, three 5xx retries (1, 4, 9 s)."""
    if isinstance(exc, RateLimitExceeded):
        wait = exc.retry_after.total_seconds()
        return RetryOption(count < 1 and wait <= SHORT_WAIT, exc.retry_after)
    if isinstance(exc, RequestFailed) and exc.response.status_code >= 500 and count < 3:
        return RetryOption(True, timedelta(seconds=(count + 1) ** 2))
    return RetryOption(False)


class Etags:
    """The last answer to each GET (by URL and query), with its ETag: the next GET of that URL
    sends If-None-Match, and a 304 is answered from here."""

    def __init__(self, size: int = ETAGS_MAX) -> None:
        self.size = size
        self._got: OrderedDict[str, tuple[str, Any]] = OrderedDict()

    def headers(self, key: str) -> dict[str, str]:
        got = self._got.get(key)
        return {"If-None-Match": got[0]} if got else {}

    def answer(self, key: str, raw: Any) -> Any:
        """The JSON of `raw` (an httpx response), or the stored one for a 304; stored again
        when it carries an ETag."""
        if raw.status_code == 304 and key in self._got:
            self._got.move_to_end(key)
            return self._got[key][1]
        data = raw.json() if raw.content else None
        etag = raw.headers.get("etag")
        if etag and raw.status_code == 200:
            self._got[key] = (etag, data)
            self._got.move_to_end(key)
            while len(self._got) > self.size:
                self._got.popitem(last=False)
        return data


class GitHubForge:
    """One repository on one GitHub, with one token (never logged, never on the board)."""

    def __init__(self, repo: str, token: str, api_url: str | None = None) -> None:
        self.owner, self.name = repo.split("/", 1)
        self.api_url = (api_url or "https://api.github.com").rstrip("/") + "/"
        self.gh: GitHub[Any] = GitHub(token, base_url=self.api_url, auto_retry=_retry,
                                      timeout=TIMEOUT, http_cache=False, user_agent="gitliza-forge")
        self.rest = self.gh.rest(API_VERSION)
        self.etags = Etags()
        self.requests = 0  # made by this process (the figures of docs/forge.md)
        self.not_modified = 0  # of which answered 304 (free on GitHub)

    def _get(self, what: str, key: str, fn: Callable[[dict[str, str]], object]) -> Any:
        """A conditional GET: `fn` makes the request with the headers it is given."""
        return self._call(what, lambda: fn(self.etags.headers(key)), key)

    def _call(self, what: str, fn: Callable[[], object], key: str | None = None) -> Any:
        """The JSON of the answer to `fn`'s request (None for an empty one), the faults mapped;
        `key`: a GET's, whose answer is cached with its ETag."""
        self.requests += 1
        try:
            got = fn()
            raw = getattr(got, "raw_response", None)
            if raw is None:
                return got  # GraphQL's data
            if raw.status_code == 304:
                self.not_modified += 1
            if key is not None:
                return self.etags.answer(key, raw)
            return raw.json() if raw.content else None
        except RateLimitExceeded as e:
            wait = max(1.0, e.retry_after.total_seconds())
            raise ForgeRateLimited(f"GitHub rate limit on {what}: waiting {int(wait)}s",
                                   time.time() + wait) from None
        except RequestFailed as e:
            status = e.response.status_code
            if status >= 500:
                raise ForgeUnreachable(f"GitHub answered {status} to {what}") from None
            raise ForgeRefused(f"GitHub refused {what}: {status} {_message(e)}") from None
        except GraphQLFailed as e:
            raise ForgeRefused(f"GitHub refused {what}: {_gql_message(e)}") from None
        except (GitHubException, httpx.HTTPError, ValueError) as e:  # ValueError: not JSON
            raise ForgeUnreachable(f"GitHub unreachable ({what}): {_cause(e)}") from None

    # -- the interface -----------------------------------------------------------------------
    def access(self) -> str:
        data = self._get("GET repository", "repo", lambda h: self.rest.repos.get(
            self.owner, self.name, headers=h))
        perms = data.get("permissions") or {}
        if perms and not perms.get("push"):
            raise ForgeRefused(f"the token cannot push to {data.get('full_name')}")
        return str(data.get("full_name") or f"{self.owner}/{self.name}")

    def find_pull(self, head: str) -> PullRequest | None:
        got = self._get("GET pulls", f"pulls?head={head}", lambda h: self.rest.pulls.list(
            self.owner, self.name, state="all", head=f"{self.owner}:{head}", per_page=100,
            headers=h))
        found = [p for p in got if (p.get("head") or {}).get("ref") == head]
        return _pull(min(found, key=lambda p: int(p["number"]))) if found else None

    def open_pull(self, *, title: str, head: str, base: str, body: str) -> PullRequest:
        return _pull(self._call("POST pull", lambda: self.rest.pulls.create(
            self.owner, self.name, title=title, head=head, base=base, body=body,
            draft=True)))

    def pull(self, number: int) -> PullRequest:
        return _pull(self._get(f"GET pull {number}", f"pull {number}",
                               lambda h: self.rest.pulls.get(self.owner, self.name, number,
                                                             headers=h)))

    def edit_pull(self, number: int, *, title: str | None = None, body: str | None = None,
                  state: str | None = None) -> None:
        fields: dict[str, Any] = {k: v for k, v in (("title", title), ("body", body),
                                                    ("state", state)) if v is not None}
        self._call(f"PATCH pull {number}", lambda: self.rest.pulls.update(
            self.owner, self.name, number, **fields))

    def ready_for_review(self, pr: PullRequest) -> None:
        self._call(f"ready pull {pr.number}", lambda: self.gh.graphql.request(
            _READY, {"id": pr.node_id}))

    def merge_pull(self, number: int, sha: str) -> str:
        data = self._call(f"PUT merge {number}", lambda: self.rest.pulls.merge(
            self.owner, self.name, number, sha=sha, merge_method="merge"))
        return str(data["sha"])

    def labels(self, number: int) -> set[str]:
        got = self._get(f"GET labels {number}", f"labels {number}",
                        lambda h: self.rest.issues.list_labels_on_issue(
                            self.owner, self.name, number, per_page=100, headers=h))
        return {str(x["name"]) for x in got}

    def add_labels(self, number: int, labels: list[str]) -> None:
        self._call(f"POST labels {number}", lambda: self.rest.issues.add_labels(
            self.owner, self.name, number, labels=labels))

    def remove_label(self, number: int, label: str) -> None:
        self._call(f"DELETE label {number}", lambda: self.rest.issues.remove_label(
            self.owner, self.name, number, label))

    def reviews(self, number: int) -> list[Review]:
        got = self._get(f"GET reviews {number}", f"reviews {number}",
                        lambda h: self.rest.pulls.list_reviews(
                            self.owner, self.name, number, per_page=100, headers=h))
        return [Review(id=int(r["id"]), user=str((r.get("user") or {}).get("login") or ""),
                       state=str(r.get("state") or ""), body=str(r.get("body") or ""),
                       commit=r.get("commit_id")) for r in got]

    def review_comments(self, number: int, review: int) -> tuple[tuple[str, int | None, str], ...]:
        got = self._get(f"GET review comments {number}", f"review comments {review}",
                        lambda h: self.rest.pulls.list_comments_for_review(
                            self.owner, self.name, number, review, per_page=100, headers=h))
        return tuple((str(c.get("path") or ""), c.get("line") or c.get("original_line"),
                      str(c.get("body") or "")) for c in got)

    def comment(self, number: int, commit: str, body: str) -> None:
        self._call(f"POST review {number}", lambda: self.rest.pulls.create_review(
            self.owner, self.name, number, commit_id=commit, body=body, event="COMMENT"))

    def checks(self, ref: str) -> list[Check]:
        runs = self._get("GET check-runs", f"check-runs {ref}",
                         lambda h: self.rest.checks.list_for_ref(
                             self.owner, self.name, ref, per_page=100, headers=h))
        out = [Check(str(r["name"]), str(r.get("status") or ""), r.get("conclusion"),
                     r.get("details_url") or r.get("html_url"))
               for r in sorted(runs.get("check_runs") or [], key=lambda r: int(r.get("id") or 0))]
        combined = self._get("GET status", f"status {ref}",
                             lambda h: self.rest.repos.get_combined_status_for_ref(
                                 self.owner, self.name, ref, headers=h))
        for s in reversed(combined.get("statuses") or []):  # newest first on GitHub
            state = str(s.get("state") or "pending")
            out.append(Check(str(s.get("context")), "pending" if state == "pending" else
                             "completed", None if state == "pending" else state,
                             s.get("target_url")))
        return out

    def rate_limit(self) -> tuple[int, int, float]:
        core = self._call("GET rate_limit", lambda: self.rest.rate_limit.get())
        r = (core.get("resources") or {}).get("core") or core.get("rate") or {}
        return int(r.get("remaining", 0)), int(r.get("limit", 0)), float(r.get("reset", 0))

    def close(self) -> None:
        pass


def _pull(p: dict[str, Any]) -> PullRequest:
    return PullRequest(number=int(p["number"]), node_id=str(p.get("node_id") or ""),
                       state=str(p.get("state") or "open"), draft=bool(p.get("draft")),
                       merged=bool(p.get("merged") or p.get("merged_at")),
                       head_sha=str((p.get("head") or {}).get("sha") or ""),
                       title=str(p.get("title") or ""), body=str(p.get("body") or ""),
                       merge_commit=p.get("merge_commit_sha"))


def _message(e: RequestFailed) -> str:
    try:
        data = e.response.json()
    except Exception:  # noqa: BLE001 - any body: the status says enough
        return ""
    msg = str(data.get("message") or "") if isinstance(data, dict) else ""
    errs = data.get("errors") if isinstance(data, dict) else None
    if errs:
        msg += f" ({errs[0].get('message') or errs[0]})" if isinstance(errs[0], dict) else ""
    return " ".join(msg.split())[:200]


def _gql_message(e: GraphQLFailed) -> str:
    errs = getattr(e.response, "errors", None) or []
    return " ".join(str(getattr(errs[0], "message", errs[0])).split())[:200] if errs else "error"


def _cause(e: BaseException) -> str:
    """The innermost reason (githubkit wraps httpx's error, whose text names the refusal: the
    user needs "connection refused", not "RequestError")."""
    while e.__cause__ is not None or e.__context__ is not None:
        e = e.__cause__ or e.__context__  # type: ignore[assignment]
    text = str(e).strip()
    return f"{type(e).__name__}: {text}" if text else type(e).__name__
