"""The objects the forge fixtures hand a test (tests/forge/conftest.py makes them).

`PrismGitHub` (fixture `prism_github`): a real `prism mock --errors` of GitHub's description, behind
the harness's front (front.py). One Prism per pytest process (its start reads the whole
description: ~10 s), one front per test, so a test's switches and records are its own.
"""
from __future__ import annotations

from pathlib import Path

from tests.forge import graphql, tools
from tests.forge.description import Description, load
from tests.forge.front import Exchange, Front
from tests.forge.prism import Prism, start_mock, start_proxy
from tests.forge.standin import StandInServer

_state: dict[str, object] = {}


def tools_or_skip_reason() -> tuple[Path, Path] | str:
    """(prism, description), installing them once per process, or why not (one line)."""
    if "why" not in _state:
        _state["why"] = tools.install()
    why = _state["why"]
    prism, description = tools.prism_bin(), tools.github_description()
    if why is not None or prism is None or description is None:
        return f"{why or tools.WHY_MISSING}; CI installs them"
    return prism, description


class PrismGitHub:
    """A Prism mock of api.github.com for one test."""

    def __init__(self, prism: Prism, description: Description) -> None:
        self.prism = prism
        self.description = description
        self._mark = prism.mark()
        self.front = Front(prism.url, description=description, rewrite_accept=True,
                           graphql_answer=graphql.mock_answer)
        self.api_url = self.front.url
        self.graphql_url = f"{self.front.url}/graphql"  # answered by the front (graphql.py)
        self.ghes_api_url = self.front.ghes_url  # GHES's layout: REST /api/v3, /api/graphql
        self.token = "ghp_harness_mock_token"  # Prism's mock checks no token (the description has
        #                                        no security schemes); any Bearer passes

    def validation_errors(self) -> list[str]:
        """Prism's log lines at level error since this test began: request/response violations
        and requests Prism refused. A test asserts this is empty."""
        return self.prism.errors(self._mark) + self.front.errors(tools.npm_root())

    def validation_warnings(self) -> list[str]:
        return self.prism.warnings(self._mark)

    def prefer(self, code: int, n: int = 1, dynamic: bool = False) -> None:
        """The next n requests ask Prism for response `code` (`Prefer: code=NNN`), with a body
        generated at random from the schema if `dynamic`."""
        self.front.prefer(code, n, dynamic)

    def rate_limited(self, n: int = 1, kind: str = "primary", *, reset_in: float = 3.0,
                     retry_after: int = 1, status: int | None = None) -> None:
        """The next n requests get GitHub's rate-limit refusal (403 primary with
        x-ratelimit-remaining 0 and x-ratelimit-reset; 429 secondary with retry-after)."""
        self.front.rate_limited(n, kind, reset_in=reset_in, retry_after=retry_after,
                                status=status)

    def server_error(self, n: int = 1, code: int = 502) -> None:
        """The next n requests fail with `code` (Prism's declared answer, or GitHub's JSON for a
        server error where the operation declares none)."""
        self.front.server_error(n, code)

    def down(self, seconds: float | None = None) -> None:
        self.front.down(seconds)

    def up(self) -> None:
        self.front.up()

    def requests(self) -> list[tuple[str, str, int]]:
        return [(e.method, e.path, e.status) for e in self.front.exchanges()]

    def exchanges(self) -> list[Exchange]:
        return self.front.exchanges()

    def close(self) -> None:
        self.front.close()


def session_mock(tmp: Path) -> Prism | str:
    """The process's Prism mock (started on first use), or why not."""
    got = tools_or_skip_reason()
    if isinstance(got, str):
        return got
    mock = _state.get("mock")
    if isinstance(mock, Prism) and mock.alive:
        return mock
    prism, description = got
    mock = start_mock(prism, description, tmp / "prism-mock.log")
    _state["mock"] = mock
    return mock


def session_standin(tmp: Path) -> tuple[StandInServer, Prism] | str:
    """The process's stand-in server and the Prism proxy in front of it, or why not."""
    got = tools_or_skip_reason()
    if isinstance(got, str):
        return got
    server, proxy = _state.get("standin"), _state.get("proxy")
    if isinstance(server, StandInServer) and isinstance(proxy, Prism) and proxy.alive:
        return server, proxy
    if isinstance(proxy, Prism):
        proxy.stop()
    if not isinstance(server, StandInServer):
        server = StandInServer()
        _state["standin"] = server
    prism, desc = got
    proxy = start_proxy(prism, desc, server.url, tmp / "prism-proxy.log")
    _state["proxy"] = proxy
    return server, proxy


def description() -> Description:
    path = tools.github_description()
    assert path is not None
    return load(path)


def stop_all() -> None:
    for key in ("mock", "proxy"):
        p = _state.pop(key, None)
        if isinstance(p, Prism):
            p.stop()
    server = _state.pop("standin", None)
    if isinstance(server, StandInServer):
        server.close()
