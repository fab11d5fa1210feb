"""`git liza drain` / `undrain` and `add --needs` on the command line (issue 48): each mistake one
line and exit 1 with nothing changed; a task file's `needs:`; the board's list replays."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.firstday import liza, ok, state
from tests.conftest import commit_specs


@pytest.fixture
def board(repo: Path) -> Path:
    commit_specs(repo, "specs/a.md")
    ok(liza(repo, "init", "Goal"))
    ok(liza(repo, "register", "planner-1", "--role", "planner"))
    ok(liza(repo, "register", "coder-1", "--role", "coder"))
    return repo


def _fails(repo: Path, *args: str, agent: str | None = None) -> str:
    before = state(repo)
    r = liza(repo, *args, agent=agent)
    assert r.returncode == 1, r
    assert state(repo) == before  # nothing changed
    lines = r.stderr.strip().splitlines()
    assert len(lines) <= 2, r.stderr  # the error, and at most its hint
    return r.stderr


def test_drain_and_undrain_and_their_one_line_errors(board: Path) -> None:
    r = liza(board, "drain", "machine-x", "--reason", "maintenance", agent=None)
    assert r.returncode == 0, r.stderr
    assert "drain machine-x by human: maintenance" in r.stdout
    assert "has run no supervisor on this board yet: it will start drained" in r.stderr
    assert "already drained" in _fails(board, "drain", "machine-x")
    assert "not a machine name" in _fails(board, "drain", "two words")
    assert "is not drained" in _fails(board, "undrain", "machine-y")
    text = ok(liza(board, "machines", agent=None))
    assert "machine-x: DRAINED, not seen on this board yet" in text
    data = json.loads(ok(liza(board, "machines", "--json", agent=None)))
    assert [(m["host"], m["drain"]) for m in data["machines"]] == [("machine-x", "DRAINED")]
    ok(liza(board, "undrain", "machine-x", agent=None))
    assert "not seen" not in ok(liza(board, "machines", agent=None))
    ok(liza(board, "verify", agent=None))  # both ops replay


def test_an_agent_may_not_drain(board: Path) -> None:
    err = _fails(board, "drain", "machine-y", agent="coder-1")
    assert "drain" in err


def test_needs_from_the_option_and_from_a_task_file(board: Path) -> None:
    ok(liza(board, "add", "t1", "--desc", "train", "--spec-ref", "specs/a.md", "--done-when",
            "ok", "--scope", "ml", "--ready", "--needs", "gpu,cuda", agent="planner-1"))
    (board / "tasks.yaml").write_text("tasks:\n  - id: t2\n    description: build the app\n"
                                      "    spec_ref: specs/a.md\n    done_when: ok\n"
                                      "    scope: app\n    needs: [macos]\n    ready: true\n")
    ok(liza(board, "add", "--from", "tasks.yaml", agent="planner-1"))
    (board / "tasks.md").write_text("## t3: sign it\nspec_ref: specs/a.md\ndone_when: ok\n"
                                    "scope: sign\nneeds: macos, hsm\nready: true\n")
    ok(liza(board, "add", "--from", "tasks.md", agent="planner-1"))
    tasks = {t["id"]: t for t in json.loads(ok(liza(board, "status", "--json")))["tasks"]}
    assert tasks["t1"]["needs"] == ["cuda", "gpu"] and tasks["t2"]["needs"] == ["macos"]
    assert tasks["t3"]["needs"] == ["hsm", "macos"]
    assert "is not a label" in _fails(board, "add", "t4", "--desc", "x", "--needs", "a b",
                                      agent="planner-1")
    status = ok(liza(board, "status", agent=None))
    assert "t1 waits for label cuda, gpu: no live, undrained machine offers it" in status
    r = liza(board, "claim", "t1", agent="coder-1")
    assert r.returncode == 1 and "needs label(s) cuda, gpu" in r.stderr
    ok(liza(board, "verify", agent=None))


def test_top_shows_the_machines_table_once_one_is_drained(board: Path) -> None:
    assert "machines" not in ok(liza(board, "top", "--once", agent=None))
    ok(liza(board, "drain", "machine-x", agent=None))
    frame = ok(liza(board, "top", "--once", "--width", "140", agent=None))
    assert "machines" in frame and "machine-x" in frame and "gone DRAINED" in frame
