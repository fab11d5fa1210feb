"""The paper cuts of daily use (issue 27), each with the behaviour a person expects, or a message
that says why the behaviour is right."""
from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from gitliza.core.ids import check_agent_id_for_role
from gitliza.errors import ValidationError
from tests.cli.firstday import liza, ok, state
from tests.conftest import commit_specs
from tests.team.procs import env_for

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def board(repo: Path) -> Path:
    commit_specs(repo, "specs/a.md")
    ok(liza(repo, "init", "Goal"))
    return repo


def test_git_liza_alone_prints_the_usage_and_exits_0(tmp_path: Path) -> None:
    for argv in (["git", "liza"], [str(Path(sys.executable).parent / "git-liza")]):
        r = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, env=env_for(),
                           timeout=60)
        assert r.returncode == 0 and r.stderr == ""
        assert r.stdout.startswith("Usage: git liza") and "register" in r.stdout
    from gitliza.cli.app import main  # typer's path too (no fast-path cache)
    assert main([]) == 0


def test_register_of_what_is_there_says_so_and_changes_nothing(board: Path) -> None:
    ok(liza(board, "register", "coder-1", "--role", "coder"))
    before = state(board)
    out = ok(liza(board, "register", "coder-1", "--role", "coder"))
    assert "coder-1 is already registered as coder; nothing changed" in out
    assert state(board) == before
    r = liza(board, "register", "coder-1", "--role", "planner")
    assert r.returncode == 1 and "agent coder-1 is already registered as coder" in r.stderr
    assert state(board) == before


def test_an_agent_id_registered_with_its_role_is_accepted_and_the_refusal_says_why(
        board: Path) -> None:
    assert check_agent_id_for_role("rev-1", "code_reviewer", "code_reviewer") == "rev-1"
    with pytest.raises(ValidationError, match="does not name the coder role"):
        check_agent_id_for_role("rev-1", "coder", "code_reviewer")
    r = liza(board, "agent", "code-reviewer", "--once", "--", "true", agent="rev-1")
    assert r.returncode == 1
    assert "a supervisor's id names its role, as the original liza-agent.sh requires" in r.stderr
    assert "`git liza register rev-1 --role code_reviewer`" in r.stderr
    ok(liza(board, "register", "rev-1", "--role", "code_reviewer"))
    ok(liza(board, "config", "reviewer_max_wait", "1"))  # nothing to review: it exits soon
    r = liza(board, "agent", "code-reviewer", "--once", "--", "true", agent="rev-1")
    assert "does not name" not in r.stderr
    log = json.loads(ok(liza(board, "log", "--op", "supervise", "--json")))
    assert any(e["op"] == "supervise" and e["actor"] == "rev-1" for e in log), r.stderr


def test_analyze_says_it_records_and_no_record_writes_nothing(board: Path) -> None:
    before = state(board)
    out = ok(liza(board, "analyze", "--no-record"))
    assert "Recorded on the board" not in out and state(board) == before
    out = ok(liza(board, "analyze"))
    assert state(board) != before
    assert f"Recorded on the board [{state(board)[:12]}]" in out and "--no-record" in out


def test_ready_with_nothing_claimable_says_where_the_tasks_are(board: Path) -> None:
    assert "the board has no live task" in ok(liza(board, "ready"))
    ok(liza(board, "add", "t1", "--desc", "first"))
    ok(liza(board, "add", "t2", "--desc", "second", "--depends-on", "t1", "--spec-ref",
            "specs/a.md", "--done-when", "x", "--scope", "s", "--ready"))
    out = ok(liza(board, "ready"))
    assert out.strip() == ("nothing claimable: 1 DRAFT (`git liza finalize TASK` makes one "
                           "UNCLAIMED), 1 waiting on dependencies not MERGED yet (t2 on t1)")
    assert json.loads(ok(liza(board, "ready", "--json"))) == []


def test_the_license_is_an_spdx_expression() -> None:
    """setuptools deprecates `project.license` as a table (builds stop in 2027)."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["license"] == "MIT"
    assert any(r.startswith("setuptools>=77") for r in meta["build-system"]["requires"])
