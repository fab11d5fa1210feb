"""GitHub's side of one test, for the stand-in (standin.py): one repository over a real bare git
repository, its pull requests, labels, reviews, check runs and statuses, and GitHub's rules for
them. Every object is built over a sample of the description's own schema (description.py), so
it carries every field GitHub's schemas require; the stand-in's HTTP side serves it."""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tests.forge import ratelimit
from tests.forge.description import Description
from tests.forge.prism import DIRECT

Json = Any
DOCS = "https://docs.github.com/rest"
BOT = "liza-bot"  # the login the token belongs to
GIT_ENV = {"GIT_COMMITTER_NAME": "GitHub", "GIT_COMMITTER_EMAIL": "noreply@github.com",
           "GIT_AUTHOR_NAME": "GitHub", "GIT_AUTHOR_EMAIL": "noreply@github.com"}


def iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def merge_into(base: Json, over: Json) -> Json:
    """`over` written onto `base`, dictionaries merged key by key."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = merge_into(base.get(k), v) if k in base else v
        return out
    return over


@dataclass
class Reply:
    status: int
    body: Json = None
    headers: dict[str, str] = field(default_factory=dict)


class GitHubError(Exception):
    def __init__(self, status: int, message: str, errors: list[Json] | None = None,
                 doc: str = DOCS) -> None:
        super().__init__(message)
        body: dict[str, Json] = {"message": message, "documentation_url": doc,
                                 "status": str(status)}
        if errors is not None:
            body["errors"] = errors
        self.reply = Reply(status, body)


def _git(bare: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(["git", "-C", str(bare), *args], capture_output=True, text=True,
                       env={**os.environ, **GIT_ENV}, timeout=60)
    if check and r.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {r.stderr.strip()}")
    return r


class World:
    """GitHub's side of one test: one repository, its PRs, labels, reviews, checks."""

    def __init__(self, description: Description, bare: Path, owner: str, repo: str,
                 token: str, api_url: str) -> None:
        self.d = description
        self.bare = bare
        self.owner, self.repo, self.token = owner, repo, token
        self.api = api_url.rstrip("/")
        self.lock = threading.RLock()
        self.repo_id = 700000 + (int(hashlib.sha256(f"{owner}/{repo}".encode()).hexdigest(), 16)
                                 % 100000)
        self.created = time.time()
        head = _git(bare, "symbolic-ref", "--short", "HEAD", check=False).stdout.strip()
        self.default_branch = head or "main"
        self._ids = 1000
        self.next_number = 1
        self.prs: dict[int, dict[str, Json]] = {}
        self.repo_labels: dict[str, Json] = {}
        self.issue_labels: dict[int, list[str]] = {}
        self.reviews: dict[int, list[Json]] = {}
        self.review_comments: dict[int, list[Json]] = {}  # review id -> its comments
        self.check_runs: dict[str, list[Json]] = {}  # sha -> in order added
        self.statuses: dict[str, list[Json]] = {}
        self.remaining = ratelimit.LIMIT
        self.refusals: deque[tuple[str, int, float, int]] = deque()  # kind, code, reset, retry
        self.webhooks: list[tuple[str, str]] = []
        self.deliveries: list[tuple[str, int]] = []  # (event, status the receiver answered)
        self.sent: list[tuple[str, str, Json]] = []  # (event, its schema, payload)

    # -- small builders ----------------------------------------------------------------------------

    def new_id(self) -> int:
        self._ids += 1
        return self._ids

    def node_id(self, prefix: str, n: int) -> str:
        raw = f"{self.repo_id}:{n}".encode()
        return f"{prefix}_kwDO{base64.b64encode(raw).decode().rstrip('=')}"

    def fill(self, schema: str, values: Json, objects: bool = False) -> Json:
        return merge_into(self.d.sample(self.d.schema(schema), objects=objects), values)

    def user(self, login: str) -> Json:
        uid = 1 + int(hashlib.sha256(login.encode()).hexdigest(), 16) % 10_000_000
        is_bot = login.endswith("[bot]") or login == BOT
        u = f"{self.api}/users/{login}"
        return self.fill("simple-user", {
            "login": login, "id": uid, "node_id": self.node_id("U", uid),
            "avatar_url": f"https://avatars.githubusercontent.com/u/{uid}?v=4", "gravatar_id": "",
            "url": u, "html_url": f"https://github.com/{login}",
            "followers_url": f"{u}/followers", "following_url": f"{u}/following{{/other_user}}",
            "gists_url": f"{u}/gists{{/gist_id}}", "starred_url": f"{u}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{u}/subscriptions", "organizations_url": f"{u}/orgs",
            "repos_url": f"{u}/repos", "events_url": f"{u}/events{{/privacy}}",
            "received_events_url": f"{u}/received_events",
            "type": "Bot" if is_bot else "User", "site_admin": False,
        })

    def repository(self, schema: str = "repository") -> Json:
        r = f"{self.api}/repos/{self.owner}/{self.repo}"
        html = f"https://github.com/{self.owner}/{self.repo}"
        urls = {k: f"{r}/{k[:-4]}" for k in (
            "forks_url", "keys_url", "collaborators_url", "teams_url", "hooks_url",
            "issue_events_url", "events_url", "assignees_url", "branches_url", "tags_url",
            "blobs_url", "git_tags_url", "git_refs_url", "trees_url", "statuses_url",
            "languages_url", "stargazers_url", "contributors_url", "subscribers_url",
            "subscription_url", "commits_url", "git_commits_url", "comments_url",
            "issue_comment_url", "contents_url", "compare_url", "merges_url", "archive_url",
            "downloads_url", "issues_url", "pulls_url", "milestones_url", "notifications_url",
            "labels_url", "releases_url", "deployments_url")}
        open_prs = sum(1 for p in self.prs.values() if p["state"] == "open")
        return self.fill(schema, {
            **urls, "id": self.repo_id, "node_id": self.node_id("R", self.repo_id),
            "name": self.repo, "full_name": f"{self.owner}/{self.repo}",
            "owner": self.user(self.owner), "private": True, "html_url": html,
            "description": None, "fork": False, "url": r, "homepage": None,
            "git_url": f"git://github.com/{self.owner}/{self.repo}.git",
            "ssh_url": f"git@github.com:{self.owner}/{self.repo}.git",
            "clone_url": f"{html}.git", "svn_url": html, "mirror_url": None,
            "default_branch": self.default_branch, "created_at": iso(self.created),
            "updated_at": iso(self.created), "pushed_at": iso(self.created),
            "open_issues": open_prs, "open_issues_count": open_prs, "size": 1,
            "forks": 0, "forks_count": 0, "watchers": 0, "watchers_count": 0,
            "stargazers_count": 0, "has_issues": True, "has_projects": False,
            "has_wiki": False, "has_pages": False, "has_downloads": True,
            "has_discussions": False, "archived": False, "disabled": False,
            "license": None, "language": None,
            "permissions": {"admin": False, "maintain": False, "push": True, "triage": True,
                            "pull": True},
        })

    def label(self, name: str) -> Json:
        if name not in self.repo_labels:
            lid = self.new_id()
            self.repo_labels[name] = {
                "id": lid, "node_id": self.node_id("LA", lid),
                "url": f"{self.api}/repos/{self.owner}/{self.repo}/labels/"
                       + quote(name, safe=""),
                # "" rather than GitHub's usual null: the description allows null in `label`
                # but not in the labels of `pull-request-simple` (Prism's proxy said so)
                "name": name, "description": "",
                "color": hashlib.sha256(name.encode()).hexdigest()[:6], "default": False}
        return self.repo_labels[name]

    def branch_sha(self, branch: str) -> str | None:
        r = _git(self.bare, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}",
                 check=False)
        return r.stdout.strip() if r.returncode == 0 else None

    def commit_of(self, sha: str) -> Json:
        """The commit as a webhook carries it (the `status` event's `commit`)."""
        r = _git(self.bare, "log", "-1", "--format=%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%T"
                 "%x00%B", sha, check=False)
        parts = r.stdout.split("\0") if r.returncode == 0 else []
        if len(parts) < 8:
            return {"sha": sha}
        an, ae, ad, cn, ce, cd, tree, message = parts[:8]
        url = f"{self.api}/repos/{self.owner}/{self.repo}"
        return {"sha": sha, "node_id": self.node_id("C", int(sha[:7], 16)),
                "url": f"{url}/commits/{sha}",
                "html_url": f"https://github.com/{self.owner}/{self.repo}/commit/{sha}",
                "commit": {"author": {"name": an, "email": ae, "date": ad},
                           "committer": {"name": cn, "email": ce, "date": cd},
                           "message": message.strip(), "tree": {"sha": tree,
                                                                "url": f"{url}/git/trees/{tree}"},
                           "url": f"{url}/git/commits/{sha}", "comment_count": 0}}

    def commit_exists(self, sha: str) -> bool:
        return _git(self.bare, "cat-file", "-e", f"{sha}^{{commit}}", check=False).returncode == 0

    def resolve_ref(self, ref: str) -> str:
        if re.fullmatch(r"[0-9a-f]{40}", ref):
            return ref
        sha = self.branch_sha(ref)
        if sha is None:
            r = _git(self.bare, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}",
                     check=False)
            if r.returncode != 0:
                raise GitHubError(422, f"No commit found for SHA: {ref}")
            sha = r.stdout.strip()
        return sha

    # -- pull requests -----------------------------------------------------------------------------

    def pr_view(self, n: int, schema: str = "pull-request") -> Json:
        p = self.prs[n]
        if p["state"] == "open":  # head.sha follows the branch while the PR is open
            sha = self.branch_sha(p["head_ref"])
            if sha:
                p["head_sha"] = sha
            base = self.branch_sha(p["base_ref"])
            if base:
                p["base_sha"] = base
        r = f"{self.api}/repos/{self.owner}/{self.repo}"
        url = f"{r}/pulls/{n}"
        html = f"https://github.com/{self.owner}/{self.repo}/pull/{n}"
        repo = self.repository()

        def side(ref: str, sha: str) -> Json:
            return {"label": f"{self.owner}:{ref}", "ref": ref, "sha": sha,
                    "user": self.user(self.owner), "repo": repo}

        labels = [self.label(x) for x in self.issue_labels.get(n, [])]
        values = {
            "url": url, "id": p["id"], "node_id": p["node_id"], "html_url": html,
            "diff_url": f"{html}.diff", "patch_url": f"{html}.patch",
            "issue_url": f"{r}/issues/{n}", "commits_url": f"{url}/commits",
            "review_comments_url": f"{url}/comments",
            "review_comment_url": f"{r}/pulls/comments{{/number}}",
            "comments_url": f"{r}/issues/{n}/comments",
            "statuses_url": f"{r}/statuses/{p['head_sha']}",
            "number": n, "state": p["state"], "locked": False, "title": p["title"],
            "user": self.user(p["user"]), "body": p["body"], "labels": labels,
            "milestone": None, "active_lock_reason": None,
            "created_at": iso(p["created"]), "updated_at": iso(p["updated"]),
            "closed_at": iso(p["closed"]) if p["closed"] else None,
            "merged_at": iso(p["merged_at"]) if p["merged_at"] else None,
            "merge_commit_sha": p["merge_commit_sha"], "assignee": None, "assignees": [],
            "requested_reviewers": [], "requested_teams": [],
            "head": side(p["head_ref"], p["head_sha"]), "base": side(p["base_ref"], p["base_sha"]),
            "_links": {k: {"href": v} for k, v in {
                "self": url, "html": html, "issue": f"{r}/issues/{n}",
                "comments": f"{r}/issues/{n}/comments", "review_comments": f"{url}/comments",
                "review_comment": f"{r}/pulls/comments{{/number}}",
                "commits": f"{url}/commits", "statuses": f"{r}/statuses/{p['head_sha']}"}.items()},
            "author_association": "CONTRIBUTOR", "auto_merge": None, "draft": p["draft"],
        }
        if schema == "pull-request":
            values.update({
                "merged": p["merged"], "mergeable": None if p["state"] != "open"
                else self.mergeable(p), "rebaseable": None,
                "mergeable_state": "unknown" if p["state"] != "open"
                else ("draft" if p["draft"] else ("clean" if self.mergeable(p) else "dirty")),
                "merged_by": self.user(p["merged_by"]) if p["merged_by"] else None,
                "comments": 0, "review_comments": sum(
                    len(self.review_comments.get(rv["id"], [])) for rv in self.reviews.get(n, [])),
                "maintainer_can_modify": False, "commits": p["commits"],
                "additions": 0, "deletions": 0, "changed_files": 0,
            })
        return self.fill(schema, values)

    def mergeable(self, p: Json) -> bool:
        r = _git(self.bare, "merge-tree", "--write-tree", p["base_sha"], p["head_sha"],
                 check=False)
        return r.returncode == 0

    def create_pr(self, body: Json, user: str) -> Reply:
        doc = f"{DOCS}/pulls/pulls#create-a-pull-request"
        head = str(body.get("head", ""))
        owner, _, branch = head.rpartition(":")
        base = str(body.get("base", ""))
        if owner and owner != self.owner:
            raise GitHubError(422, "Validation Failed", [
                {"resource": "PullRequest", "field": "head", "code": "invalid"}], doc)
        head_sha = self.branch_sha(branch)
        if head_sha is None:
            raise GitHubError(422, "Validation Failed", [
                {"resource": "PullRequest", "field": "head", "code": "invalid"}], doc)
        base_sha = self.branch_sha(base)
        if base_sha is None:
            raise GitHubError(422, "Validation Failed", [
                {"resource": "PullRequest", "field": "base", "code": "invalid"}], doc)
        for p in self.prs.values():
            if p["state"] == "open" and p["head_ref"] == branch and p["base_ref"] == base:
                raise GitHubError(422, "Validation Failed", [
                    {"resource": "PullRequest", "code": "custom",
                     "message": f"A pull request already exists for {self.owner}:{branch}."}],
                    doc)
        ahead = _git(self.bare, "rev-list", "--count", f"{base_sha}..{head_sha}").stdout.strip()
        if ahead == "0":
            raise GitHubError(422, "Validation Failed", [
                {"resource": "PullRequest", "code": "custom",
                 "message": f"No commits between {base} and {branch}"}], doc)
        n = self.next_number
        self.next_number += 1
        now = time.time()
        pid = self.new_id()
        self.prs[n] = {
            "id": pid, "node_id": self.node_id("PR", n), "number": n,
            "title": str(body.get("title") or ""), "body": body.get("body"),
            "head_ref": branch, "head_sha": head_sha, "base_ref": base, "base_sha": base_sha,
            "draft": bool(body.get("draft", False)), "state": "open", "merged": False,
            "merged_at": None, "merged_by": None, "merge_commit_sha": None, "user": user,
            "created": now, "updated": now, "closed": None, "commits": int(ahead),
        }
        view = self.pr_view(n)
        return Reply(201, view, {"Location": view["url"]})

    def pr(self, n: int) -> Json:
        if n not in self.prs:
            raise GitHubError(404, "Not Found",
                              doc=f"{DOCS}/pulls/pulls#get-a-pull-request")
        return self.prs[n]

    def update_pr(self, n: int, body: Json) -> Reply:
        p = self.pr(n)
        if "title" in body and body["title"] is not None:
            p["title"] = str(body["title"])
        if "body" in body:
            p["body"] = body["body"]
        state = body.get("state")
        if state == "closed" and p["state"] == "open":
            p["state"], p["closed"] = "closed", time.time()
        elif state == "open" and p["state"] == "closed":
            if p["merged"]:
                raise GitHubError(422, "Validation Failed", [
                    {"resource": "PullRequest", "code": "custom",
                     "message": "Cannot reopen a merged pull request"}])
            if self.branch_sha(p["head_ref"]) is None:
                raise GitHubError(422, "Validation Failed", [
                    {"resource": "PullRequest", "field": "head", "code": "invalid"}])
            p["state"], p["closed"] = "open", None
        p["updated"] = time.time()
        return Reply(200, self.pr_view(n))

    def merge_pr(self, n: int, body: Json, user: str) -> Reply:
        doc = f"{DOCS}/pulls/pulls#merge-a-pull-request"
        p = self.pr(n)
        if p["merged"] or p["state"] != "open":
            raise GitHubError(405, "Pull Request is not mergeable", doc=doc)
        if p["draft"]:
            raise GitHubError(405, "Pull Request is still a draft", doc=doc)
        self.pr_view(n)  # refresh head/base from the bare repository
        if body.get("sha") and body["sha"] != p["head_sha"]:
            raise GitHubError(409, "Head branch was modified. Review and try the merge again.",
                              doc=doc)
        method = body.get("merge_method") or "merge"
        if method == "rebase":
            raise GitHubError(405, "Rebase merges are not allowed on this repository.", doc=doc)
        r = _git(self.bare, "merge-tree", "--write-tree", p["base_sha"], p["head_sha"],
                 check=False)
        if r.returncode != 0:
            raise GitHubError(405, "Pull Request is not mergeable", doc=doc)
        tree = r.stdout.splitlines()[0].strip()
        title = body.get("commit_title") or (
            f"Merge pull request #{n} from {self.owner}/{p['head_ref']}" if method == "merge"
            else f"{p['title']} (#{n})")
        message = f"{title}\n\n{body.get('commit_message') or p['title']}\n"
        parents = ["-p", p["base_sha"]] + (["-p", p["head_sha"]] if method == "merge" else [])
        commit = _git(self.bare, "commit-tree", tree, *parents, "-m", message).stdout.strip()
        moved = _git(self.bare, "update-ref", f"refs/heads/{p['base_ref']}", commit,
                     p["base_sha"], check=False)
        if moved.returncode != 0:
            raise GitHubError(409, "Base branch was modified. Review and try the merge again.",
                              doc=doc)
        now = time.time()
        p.update(state="closed", merged=True, merged_at=now, closed=now, updated=now,
                 merged_by=user, merge_commit_sha=commit)
        return Reply(200, {"sha": commit, "merged": True,
                           "message": "Pull Request successfully merged"})

    def list_prs(self, q: dict[str, str]) -> list[Json]:
        state = q.get("state", "open")
        head = q.get("head")
        base = q.get("base")
        out = []
        for n in sorted(self.prs, reverse=True):  # sort=created, direction=desc
            p = self.prs[n]
            if state != "all" and p["state"] != state:
                continue
            if head and ":" in head:  # GitHub ignores a head filter without "owner:"
                owner, _, branch = head.partition(":")
                if owner != self.owner or p["head_ref"] != branch:
                    continue
            if base and p["base_ref"] != base:
                continue
            out.append(self.pr_view(n, "pull-request-simple"))
        return out

    # -- labels, reviews, checks ------------------------------------------------------------------

    def add_labels(self, n: int, names: list[str]) -> list[Json]:
        self.pr(n)
        have = self.issue_labels.setdefault(n, [])
        for name in names:
            self.label(name)
            if name not in have:
                have.append(name)
        self.prs[n]["updated"] = time.time()
        return [self.label(x) for x in have]

    def remove_label(self, n: int, name: str) -> list[Json]:
        self.pr(n)
        have = self.issue_labels.setdefault(n, [])
        if name not in have:
            raise GitHubError(404, "Label does not exist",
                              doc=f"{DOCS}/issues/labels#remove-a-label-from-an-issue")
        have.remove(name)
        self.prs[n]["updated"] = time.time()
        return [self.label(x) for x in have]

    def review(self, n: int, user: str, state: str, body: str, commit_id: str | None,
               comments: list[tuple[str, int, str]]) -> Json:
        p = self.pr(n)
        rid = self.new_id()
        r = f"{self.api}/repos/{self.owner}/{self.repo}"
        html = f"https://github.com/{self.owner}/{self.repo}/pull/{n}"
        sha = commit_id or p["head_sha"]
        now = time.time()
        rv = self.fill("pull-request-review", {
            "id": rid, "node_id": self.node_id("PRR", rid), "user": self.user(user),
            "body": body, "state": state, "commit_id": sha,
            "html_url": f"{html}#pullrequestreview-{rid}", "pull_request_url": f"{r}/pulls/{n}",
            "_links": {"html": {"href": f"{html}#pullrequestreview-{rid}"},
                       "pull_request": {"href": f"{r}/pulls/{n}"}},
            "submitted_at": iso(now), "author_association": "MEMBER" if user != BOT
            else "CONTRIBUTOR"})
        self.reviews.setdefault(n, []).append(rv)
        out = []
        for path, line, text in comments:
            cid = self.new_id()
            out.append(self.fill("review-comment", {
                "id": cid, "node_id": self.node_id("PRRC", cid),
                "url": f"{r}/pulls/comments/{cid}", "pull_request_review_id": rid,
                "diff_hunk": f"@@ -{line},1 +{line},1 @@", "path": path, "position": 1,
                "original_position": 1, "commit_id": sha, "original_commit_id": sha,
                "user": self.user(user), "body": text, "created_at": iso(now),
                "updated_at": iso(now), "html_url": f"{html}#discussion_r{cid}",
                "pull_request_url": f"{r}/pulls/{n}", "author_association": "MEMBER",
                "_links": {"self": {"href": f"{r}/pulls/comments/{cid}"},
                           "html": {"href": f"{html}#discussion_r{cid}"},
                           "pull_request": {"href": f"{r}/pulls/{n}"}},
                "line": line, "original_line": line, "side": "RIGHT", "start_line": None,
                "original_start_line": None, "start_side": None, "subject_type": "line"}))
        self.review_comments[rid] = out
        return rv

    def check_run(self, sha: str, name: str, status: str, conclusion: str | None,
                  details_url: str | None) -> Json:
        cid = self.new_id()
        now = time.time()
        done = status == "completed"
        run = self.fill("check-run", {
            "id": cid, "node_id": self.node_id("CR", cid), "head_sha": sha, "name": name,
            "external_id": str(cid),
            "url": f"{self.api}/repos/{self.owner}/{self.repo}/check-runs/{cid}",
            "html_url": f"https://github.com/{self.owner}/{self.repo}/runs/{cid}",
            "details_url": details_url or f"https://ci.example.invalid/runs/{cid}",
            "status": status, "conclusion": conclusion if done else None,
            "started_at": iso(now), "completed_at": iso(now) if done else None,
            "output": {"title": None, "summary": None, "text": None, "annotations_count": 0,
                       "annotations_url": f"{self.api}/repos/{self.owner}/{self.repo}"
                                          f"/check-runs/{cid}/annotations"},
            "check_suite": {"id": self.new_id()}, "app": None,
            "pull_requests": [{"id": p["id"], "number": n, "url": f"{self.api}/repos/"
                               f"{self.owner}/{self.repo}/pulls/{n}",
                               "head": {"ref": p["head_ref"], "sha": p["head_sha"],
                                        "repo": {"id": self.repo_id, "name": self.repo,
                                                 "url": f"{self.api}/repos/{self.owner}/"
                                                        f"{self.repo}"}},
                               "base": {"ref": p["base_ref"], "sha": p["base_sha"],
                                        "repo": {"id": self.repo_id, "name": self.repo,
                                                 "url": f"{self.api}/repos/{self.owner}/"
                                                        f"{self.repo}"}}}
                              for n, p in self.prs.items() if p["head_sha"] == sha],
        })
        self.check_runs.setdefault(sha, []).append(run)
        return run

    def status(self, sha: str, context: str, state: str, target_url: str | None,
               description: str | None) -> Json:
        sid = self.new_id()
        now = iso(time.time())
        st = self.fill("simple-commit-status", {
            "id": sid, "node_id": self.node_id("SC", sid), "state": state, "context": context,
            "description": description, "target_url": target_url,
            "avatar_url": "https://avatars.githubusercontent.com/u/1?v=4",
            "url": f"{self.api}/repos/{self.owner}/{self.repo}/statuses/{sha}",
            "created_at": now, "updated_at": now})
        self.statuses.setdefault(sha, []).append(st)
        return st

    def combined_status(self, sha: str) -> Json:
        latest: dict[str, Json] = {}
        for st in self.statuses.get(sha, []):
            latest[st["context"]] = st
        states = [s["state"] for s in latest.values()]
        if any(s in ("error", "failure") for s in states):
            state = "failure"
        elif not states or "pending" in states:
            state = "pending"
        else:
            state = "success"
        r = f"{self.api}/repos/{self.owner}/{self.repo}"
        return self.fill("combined-commit-status", {
            "state": state, "sha": sha, "total_count": len(latest),
            "statuses": list(reversed(list(latest.values()))),
            "repository": self.fill("minimal-repository", {
                k: v for k, v in self.repository().items()
                if k in self.d.schema("minimal-repository").get("properties", {})}),
            "commit_url": f"{r}/commits/{sha}", "url": f"{r}/commits/{sha}/status"})

    # -- webhooks ----------------------------------------------------------------------------------

    def deliver(self, event: str, schema: str, values: Json) -> None:
        """POST event `event` to every webhook: `values` over a sample of the description's
        schema for that payload (x-webhooks), so it carries every field GitHub's has."""
        with self.lock:
            payload = self.fill(schema, values, objects=True)
            self.sent.append((event, schema, payload))
        for url, secret in list(self.webhooks):
            data = json.dumps(payload).encode()
            sig = "sha256=" + hmac.new(secret.encode(), data, hashlib.sha256).hexdigest()
            req = urllib.request.Request(url, data=data, method="POST", headers={
                "Content-Type": "application/json", "User-Agent": "GitHub-Hookshot/standin",
                "X-GitHub-Event": event, "X-GitHub-Delivery": str(uuid.uuid4()),
                "X-GitHub-Hook-ID": "1", "X-Hub-Signature-256": sig})
            try:
                with DIRECT.open(req, timeout=30) as resp:
                    code = resp.status
            except urllib.error.HTTPError as e:
                code = e.code
            except OSError:
                code = 0  # the receiver is not there: GitHub records a failed delivery
            self.deliveries.append((event, code))
