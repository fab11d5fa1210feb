"""GitHub's rate-limit answers, as github.com sends them (docs.github.com, "Rate limits for the REST
API", API version 2022-11-28), for the fronts and the stand-in to give when a test says so.

- primary: 403 (GitHub may also say 429), `x-ratelimit-remaining: 0`, `x-ratelimit-reset` (epoch
  seconds when the window resets), limit/used/resource; a client waits until the reset. GitHub's
  window resets within the hour; the harness's default is a few seconds (`reset_in`), so a test
  of a client that waits does not wait long.
- secondary: 429 (GitHub may also say 403), `retry-after` (seconds); a client waits that long.

GitHub's OpenAPI description declares none of these headers on the contract's endpoints (only
GET /rate_limit's 200 carries x-ratelimit-*), and no 429 on them at all, so neither Prism's mock
nor its proxy validation knows them: the harness adds them itself.
"""
from __future__ import annotations

import json
import time

DOCS = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"
LIMIT = 5000


def answer(kind: str, *, reset_in: float = 3.0, retry_after: int = 1, status: int | None = None,
           now: float | None = None) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of GitHub's rate-limit refusal of `kind` ("primary"/"secondary")."""
    now = time.time() if now is None else now
    if kind == "primary":
        code = status or 403
        headers = {
            "x-ratelimit-limit": str(LIMIT), "x-ratelimit-remaining": "0",
            "x-ratelimit-reset": str(int(now + reset_in) + 1),
            "x-ratelimit-used": str(LIMIT), "x-ratelimit-resource": "core",
        }
        message = "API rate limit exceeded for user ID 1."
    elif kind == "secondary":
        code = status or 429
        headers = {
            "x-ratelimit-limit": str(LIMIT), "x-ratelimit-remaining": str(LIMIT - 10),
            "x-ratelimit-reset": str(int(now) + 3600), "x-ratelimit-used": "10",
            "x-ratelimit-resource": "core", "retry-after": str(retry_after),
        }
        message = ("You have exceeded a secondary rate limit. Please wait a few minutes before "
                   "you try again.")
    else:
        raise ValueError(f"kind is primary or secondary, not {kind!r}")
    body = json.dumps({"message": message, "documentation_url": DOCS, "status": str(code)})
    headers["content-type"] = "application/json; charset=utf-8"
    return code, headers, body.encode()


SERVER_MESSAGES = {500: "Server Error", 502: "Server Error", 503: "Service Unavailable",
                   504: "We couldn't respond to your request in time. Sorry about that."}


def refusal(kind: str, code: int, *, reset_in: float = 3.0,
            retry_after: int = 1) -> tuple[int, dict[str, str], bytes]:
    """A rate-limit refusal (`kind` primary/secondary) or, for kind "server", GitHub's JSON
    answer for a server error `code` (its load balancers answer 5xx with {"message": ...})."""
    if kind != "server":
        return answer(kind, reset_in=reset_in, retry_after=retry_after, status=code)
    body = json.dumps({"message": SERVER_MESSAGES.get(code, "Server Error"),
                       "documentation_url": "https://docs.github.com/rest", "status": str(code)})
    return code, {"content-type": "application/json; charset=utf-8"}, body.encode()


def ok_headers(remaining: int = LIMIT - 1, now: float | None = None) -> dict[str, str]:
    """The x-ratelimit-* headers GitHub puts on every answer that was not refused."""
    now = time.time() if now is None else now
    return {"x-ratelimit-limit": str(LIMIT), "x-ratelimit-remaining": str(remaining),
            "x-ratelimit-reset": str(int(now) + 3600), "x-ratelimit-used": str(LIMIT - remaining),
            "x-ratelimit-resource": "core"}
