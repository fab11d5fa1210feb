"""Who may talk to the board server: Jupyter's token model, plus CSRF for every change.

- The server prints one URL with a random token (`?token=...`). The first visit with it sets an
  HttpOnly, SameSite=Strict cookie and redirects to the same page without the token (so it does
  not linger in the address bar or in a Referer); later requests carry the cookie. A script may
  send `Authorization: Bearer <token>` instead.
- A request with no credential gets 401; a wrong one gets 403. Static files are no exception.
- A change is a POST that must carry the CSRF token (derived from the server token, served in
  the page's `<meta name=csrf>`) in the `X-CSRF-Token` header or a `csrf` form field, and whose
  Origin (when the browser sends one) is this server: 403 otherwise.
- On a loopback address the Host header must name loopback too, so a DNS-rebinding page cannot
  reach the server under its own name.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any
from urllib.parse import urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

COOKIE = "gitliza_web"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


def new_token() -> str:
    return secrets.token_urlsafe(24)


def csrf_token(token: str) -> str:
    """The CSRF token the pages embed: a MAC of the server token (not the token itself, so a page
    leaked into a log does not hand out the credential)."""
    return hmac.new(token.encode(), b"gitliza-web-csrf", hashlib.sha256).hexdigest()


def _same(a: str | None, b: str) -> bool:
    return a is not None and hmac.compare_digest(a.encode(), b.encode())


class Guard:
    """The ASGI-level check in front of every route (see the module's docstring)."""

    def __init__(self, token: str, *, loopback: bool, cookie: str = COOKIE) -> None:
        self.token = token
        self.cookie = cookie  # per port: browsers do not scope cookies by port
        self.csrf = csrf_token(token)
        self.loopback = loopback

    def credential(self, request: Request) -> str | None:
        auth = request.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            return auth[7:].strip()
        return request.query_params.get("token") or request.cookies.get(self.cookie)

    def host_ok(self, request: Request) -> bool:
        if not self.loopback:
            return True
        host = request.headers.get("host") or ""
        name = host.split("]")[0] + "]" if host.startswith("[") else host.rsplit(":", 1)[0]
        return name in LOOPBACK_HOSTS

    def csrf_ok(self, request: Request, form_value: str | None) -> bool:
        """A change carries the CSRF token and, when the browser names its origin, comes from
        this server's own pages."""
        sent = request.headers.get("x-csrf-token") or form_value
        origin = request.headers.get("origin")
        if origin is not None and urlsplit(origin).netloc != request.headers.get("host"):
            return False
        return _same(sent, self.csrf)

    def refuse(self, request: Request) -> Response | None:
        """The refusal for a request that may not pass, or None."""
        if not self.host_ok(request):
            return PlainTextResponse("gitliza: error: this server answers to its loopback "
                                     "address only\n", status_code=403)
        given = self.credential(request)
        if given is None:
            return PlainTextResponse("gitliza: error: no token: open the URL `git liza web` "
                                     "printed\n", status_code=401,
                                     headers={"WWW-Authenticate": "Bearer"})
        if not _same(given, self.token):
            return PlainTextResponse("gitliza: error: wrong token\n", status_code=403)
        if "token" in request.query_params and request.method == "GET" and \
                request.cookies.get(self.cookie) != self.token:
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            url = request.url.path + (f"?{urlencode(rest)}" if rest else "")
            out = RedirectResponse(url, status_code=303)
            self.set_cookie(out)
            return out
        return None

    def set_cookie(self, out: Response) -> None:
        out.set_cookie(self.cookie, self.token, httponly=True, samesite="strict", path="/")


class Guarded:
    """Pure ASGI wrapper (not BaseHTTPMiddleware, which buffers around streaming responses: the
    event stream must flow): refuses what `Guard.refuse` refuses, adds the safety headers."""

    def __init__(self, app: Any, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SAFETY_HEADERS]
            await send(message)
        refusal = self.guard.refuse(Request(scope))
        if refusal is not None:  # a refusal carries them too: every response does
            await refusal(scope, receive, with_headers)
            return
        await self.app(scope, receive, with_headers)


# The board's own scripts, styles, images and connections only: no external image,
# script, frame or form target, whatever a task's text or a spec names; no inline script or
# style attribute either (the pages use none: the legend's swatches are SVG presentation).
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "connect-src 'self'; font-src 'self'; form-action 'self'; frame-ancestors 'none'; "
       "frame-src 'none'; base-uri 'none'; object-src 'none'")
SAFETY_HEADERS = [(b"content-security-policy", CSP.encode()),
                  (b"cache-control", b"no-store"), (b"x-frame-options", b"DENY"),
                  (b"referrer-policy", b"no-referrer"), (b"x-content-type-options", b"nosniff")]
