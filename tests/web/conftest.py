"""Fixtures of the web tests: a served board (Starlette's TestClient, through the real app and its
guard) on a real repository."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

pytest.importorskip("starlette", reason="the web extra (gitliza[web]) is not installed")
pytest.importorskip("httpx", reason="httpx (starlette's TestClient) is not installed")

from starlette.testclient import TestClient  # noqa: E402

from tests.conftest import IDENTITY, git  # noqa: E402
from tests.web.board import make_board, small_board  # noqa: E402

TOKEN = "test-token-0123456789"
BASE = "http://127.0.0.1:7150"


def client(repo: Path, *, read_only: bool = False, token: str = TOKEN) -> TestClient:
    from gitliza.services.session import open_liza
    from gitliza.web.app import build
    app = build(lambda: open_liza(repo, "human"), token, read_only=read_only)
    return TestClient(app, base_url=BASE)


def authed(c: TestClient) -> TestClient:
    """Log in the way a browser does: the printed URL once, then the cookie."""
    r = c.get(f"/?token={TOKEN}", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/"
    return c


def csrf(c: TestClient) -> str:
    import re
    m = re.search(r'<meta name="csrf" content="([0-9a-f]+)">', c.get("/").text)
    assert m is not None
    return m.group(1)


@pytest.fixture(scope="module")
def review_board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The rich board of tests/web/board.py, built once per module (the CLI makes its diff in a
    real worktree); tests that only read share it."""
    mp = pytest.MonkeyPatch()
    home = tmp_path_factory.mktemp("webhome")
    (home / ".gitconfig").write_text("[user]\n\tname = Liza Test\n\temail = liza@example.invalid\n"
                                     "[init]\n\tdefaultBranch = main\n")
    for k, v in {**IDENTITY, "HOME": str(home), "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
                 "GIT_CONFIG_NOSYSTEM": "1",
                 "GIT_TEMPLATE_DIR": str(tmp_path_factory.mktemp("webtpl"))}.items():
        mp.setenv(k, v)
    mp.delenv("LIZA_AGENT_ID", raising=False)
    repo = tmp_path_factory.mktemp("webboard") / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("project\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "-q", "-m", "initial")
    make_board(repo)
    mp.undo()
    yield repo


@pytest.fixture
def small(repo: Path) -> Path:
    small_board(repo)
    return repo


def state(repo: Path) -> str:
    return git(repo, "rev-parse", "refs/liza/state")


__all__ = ["client", "authed", "csrf", "state", "TOKEN", "BASE", "Any"]
