"""The one GraphQL request the bridge sends: `markPullRequestReadyForReview(input:
{pullRequestId})` (REST cannot take a PR out of draft). GraphQL is not in GitHub's REST
description, so Prism cannot serve or check it: the stand-in answers it from its state
(standin.py), and the mock's front answers it as GitHub would for any id (`mock_answer`).
`check` validates the requests (the document and its variables) against GitHub's published
GraphQL schema (@octokit/graphql-schema) with graphql-js, in one node process per call."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

CHECKER = Path(__file__).resolve().parent / "graphql_check.cjs"

_READY = re.compile(r"\bmarkPullRequestReadyForReview\b")
_INLINE_ID = re.compile(r"pullRequestId\s*:\s*\"([^\"]+)\"")


def ready_for_review(body: Any) -> tuple[bool, str | None]:
    """(is this the mutation, the pullRequestId it names: inline, or in its variables either
    as `$id` or as a whole `$input` object)."""
    if not isinstance(body, dict):
        return False, None
    query = str(body.get("query", ""))
    if not _READY.search(query):
        return False, None
    found = _INLINE_ID.search(query)
    if found:
        return True, found.group(1)
    variables = body.get("variables") or {}
    for v in variables.values() if isinstance(variables, dict) else ():
        if isinstance(v, str):
            return True, v
        if isinstance(v, dict) and isinstance(v.get("pullRequestId"), str):
            return True, str(v["pullRequestId"])
    return True, None


def not_answered() -> dict[str, Any]:
    return {"errors": [{"message": "the harness answers only the mutation "
                                   "markPullRequestReadyForReview"}]}


def mock_answer(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """GitHub's answer to the mutation for whatever id it names (the mock keeps no PRs)."""
    try:
        body = json.loads(raw or b"null")
    except ValueError:
        body = None
    ready, node = ready_for_review(body)
    answer: dict[str, Any]
    if not ready:
        answer = not_answered()
    elif node is None:
        answer = {"errors": [{"message": "Variable $input of type "
                                         "MarkPullRequestReadyForReviewInput! was provided "
                                         "invalid value"}]}
    else:
        answer = {"data": {"markPullRequestReadyForReview": {"pullRequest": {
            "id": node, "number": 42, "isDraft": False}}}}
    return 200, {"content-type": "application/json; charset=utf-8"}, json.dumps(answer).encode()


def check(npm_root: Path, bodies: list[bytes]) -> list[list[str]]:
    """Per GraphQL request body, what GitHub's GraphQL schema finds wrong in it ([]: valid)."""
    if not bodies:
        return []
    requests = []
    for raw in bodies:
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        requests.append(body if isinstance(body, dict) else {"query": ""})
    node = shutil.which("node") or "node"
    r = subprocess.run([node, str(CHECKER), str(npm_root)], input=json.dumps(requests),
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"graphql_check.cjs failed: {r.stderr.strip()[-500:]}")
    found: list[list[str]] = json.loads(r.stdout)
    return found
