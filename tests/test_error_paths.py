"""One error path: the command line, the MCP server and the web board give the same error the same
code, exit code and line, because `gitliza.errors.classify` decides and each of them only renders
it (the CLI's `--json` document, the MCP tool error, the web board's status and headers)."""
from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any, Callable

import pytest

pytest.importorskip("mcp", reason="the MCP extra (gitliza[mcp]) is not installed")
pytest.importorskip("starlette", reason="the web extra (gitliza[web]) is not installed")
pytest.importorskip("httpx", reason="httpx (starlette's TestClient) is not installed")

from gitliza.errors import Failure, LizaError, NotFound, classify  # noqa: E402
from tests.access.mcp_client import setup_board  # noqa: E402
from tests.web.board import cli  # noqa: E402
from tests.web.conftest import authed, client, csrf  # noqa: E402


@pytest.fixture
def board(repo: Path) -> Path:
    setup_board(repo)
    return repo


def through_mcp(repo: Path, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    from gitliza.access.mcp import Session
    ok, out = Session(repo, "human", None).call(tool, args)
    assert not ok, out
    return dict(out["error"])


def through_web(repo: Path, request: Callable[[Any], Any]) -> dict[str, Any]:
    with client(repo) as c:
        r = request(authed(c))
    assert r.text.startswith("gitliza: error: ") and r.text.count("\n") == 1, r.text
    code, exit_code = r.headers["X-Gitliza-Error"], int(r.headers["X-Gitliza-Exit-Code"])
    assert r.status_code == {1: 422, 2: 409, 3: 500, 4: 500, 5: 503}[exit_code]
    return {"code": code, "exit_code": exit_code,
            "message": r.text[len("gitliza: error: "):].rstrip("\n")}


def through_cli(repo: Path, *args: str) -> dict[str, Any]:
    r = cli(repo, *args, "--json", check=False)
    doc = json.loads(r.stdout)["error"]
    assert r.returncode == doc["exit_code"] and r.stderr.strip() == f"gitliza: error: " \
        f"{doc['message']}", r.stderr
    return dict(doc)


def test_a_missing_task_is_the_same_error_everywhere(board: Path) -> None:
    cli_ = through_cli(board, "show", "t99")
    assert cli_["code"] == "NOT_FOUND" and cli_["exit_code"] == 1
    assert through_mcp(board, "show", {"task": "t99"}) == cli_
    assert through_web(board, lambda c: c.get("/api/task/t99")) == cli_


def test_a_refused_transition_is_the_same_error_everywhere(board: Path) -> None:
    cli_ = through_cli(board, "unblock", "t1", "--answer", "x")  # t1 is ready, not blocked
    assert cli_["exit_code"] == 1 and cli_["code"] == "INVALID_TRANSITION", cli_
    assert through_mcp(board, "unblock", {"task": "t1", "answer": "x"}) == cli_
    assert through_web(board, lambda c: c.post("/action/unblock", data={
        "task": "t1", "answer": "x", "csrf": csrf(c)})) == cli_


@pytest.mark.parametrize("raised, code, exit_code", [
    (ValueError("a bug\nover two lines"), "INTERNAL", 4),
    (PermissionError(errno.EACCES, "Permission denied", "/x"), "GIT_FAILURE", 3),
    (OSError(errno.EIO, "I/O error"), "GIT_FAILURE", 3),
    (ModuleNotFoundError("No module named 'pygit2'", name="pygit2"), "MISSING_DEPENDENCY", 5),
])
def test_what_is_not_a_liza_error_is_classified_once_and_rendered_alike(
    board: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    raised: Exception, code: str, exit_code: int,
) -> None:
    monkeypatch.delenv("LIZA_DEBUG", raising=False)
    expected = classify(raised)
    assert (expected.code, expected.exit_code) == (code, exit_code)
    assert "\n" not in expected.line

    def fail(*_a: Any, **_k: Any) -> Any:
        raise raised

    # The CLI's handler (the fast path and typer's share it): the line on stderr, the document.
    from gitliza.cli import fastpath
    assert fastpath.guarded(fail, ["show", "t1", "--json"]) == exit_code
    out, err = capsys.readouterr()
    assert json.loads(out)["error"] == expected.to_json()
    assert err.strip() == f"gitliza: error: {expected.line}"
    # The MCP server's tool call.
    import gitliza.access.tools
    monkeypatch.setattr(gitliza.access.tools, "call", fail)
    assert through_mcp(board, "status", {}) == expected.to_json()
    # The web board's action.
    import gitliza.web.actions
    monkeypatch.setattr(gitliza.web.actions, "perform", fail)
    assert through_web(board, lambda c: c.post("/action/note", data={
        "message": "hi", "csrf": csrf(c)})) == expected.to_json()


def test_the_classifier_keeps_a_liza_errors_own_code_whatever_its_words() -> None:
    # A refusal whose message happens to name a permission is still the refusal it is (the MCP
    # server once re-read every error as the environment's and made this exit 3).
    e = NotFound("no task 'Permission denied'")
    assert classify(e) == Failure("NOT_FOUND", 1, str(e))
    assert isinstance(e, LizaError) and not classify(e).bug
    assert classify(ValueError("x")).bug
