"""A hand edit of the materialized `.liza/state.yaml` is detected (issue 27): `status`, `doctor`
and `materialize` say the view was edited and name the command that makes the change, and
`materialize` keeps the edited copy before it rewrites the view."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitliza.core.encoding.viewedits import view_edits
from tests.cli.firstday import liza, ok, state
from tests.conftest import commit_specs


@pytest.fixture
def board(repo: Path) -> Path:
    commit_specs(repo, "specs/a.md")
    ok(liza(repo, "init", "Goal"))
    ok(liza(repo, "add", "t1", "--desc", "first", "--spec-ref", "specs/a.md", "--done-when", "x",
            "--scope", "s", "--ready"))
    ok(liza(repo, "materialize"))
    return repo


def _edit(repo: Path, old: str, new: str) -> Path:
    path = repo / ".liza" / "state.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return path


def test_an_edited_status_is_named_with_its_command_everywhere(board: Path) -> None:
    before = state(board)
    rendered = (board / ".liza" / "state.yaml").read_text()
    _edit(board, "status: UNCLAIMED", "status: MERGED")
    line = "task t1 status: UNCLAIMED -> MERGED (`git liza merge t1`)"
    out = ok(liza(board, "status"))
    assert "was edited by hand" in out and line in out
    out = ok(liza(board, "doctor"))
    assert "edited-view" in out and line in out and "[fixable with --fix]" in out
    r = liza(board, "materialize")
    assert r.returncode == 0 and line in r.stderr and "the edited copy is kept as" in r.stderr
    kept = [p for p in (board / ".liza").iterdir() if p.name.startswith("state.yaml.edited-")]
    assert len(kept) == 1 and "status: MERGED" in kept[0].read_text()
    # the view is the board's again, the board never moved, and nothing more is reported
    assert (board / ".liza" / "state.yaml").read_text() == rendered
    assert state(board) == before
    assert "edited" not in ok(liza(board, "status"))
    assert "edited-view" not in ok(liza(board, "doctor"))


def test_doctor_fix_and_the_next_transition_keep_the_copy(board: Path) -> None:
    _edit(board, "description: first", "description: changed by hand")
    out = ok(liza(board, "doctor", "--fix"))
    assert "task t1 description: first -> changed by hand (`git liza edit t1 --desc ...`)" in out
    assert "[fixed]" in out
    _edit(board, "status: UNCLAIMED", "status: ABANDONED")
    # a transition rewrites the view too (materialized after each commit): the edit is kept
    r = liza(board, "add", "t2", "--desc", "second")
    assert r.returncode == 0
    kept = sorted(p.name for p in (board / ".liza").iterdir()
                  if p.name.startswith("state.yaml.edited-"))
    assert len(kept) in (1, 2)  # a second copy in the same second gets its own name
    texts = [(board / ".liza" / k).read_text() for k in kept]
    assert any("status: ABANDONED" in t for t in texts) or \
        "status: ABANDONED" in (board / ".liza" / "state.yaml").read_text()


def test_a_touch_or_a_copy_back_is_no_edit(board: Path) -> None:
    path = board / ".liza" / "state.yaml"
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    assert "edited" not in ok(liza(board, "status"))
    r = liza(board, "materialize")
    assert "edited" not in r.stderr
    assert not [p for p in (board / ".liza").iterdir() if "edited" in p.name]


def test_broken_yaml_is_an_edit_too(board: Path) -> None:
    (board / ".liza" / "state.yaml").write_text("tasks: [\n")
    out = ok(liza(board, "status"))
    assert "no longer valid YAML" in out


def test_the_pure_comparison_names_each_kind_of_change() -> None:
    view = {"tasks": [{"id": "t1", "status": "DRAFT", "priority": 1, "depends_on": ["t0"]},
                      {"id": "t0", "status": "CLAIMED", "assigned_to": "coder-1"}],
            "config": {"lease_duration": 300}, "agents": {"coder-1": {"role": "coder"}},
            "goal": {"status": "IN_PROGRESS"}}
    assert view_edits(view, view) == []
    edited = {"tasks": [{"id": "t1", "status": "UNCLAIMED", "priority": "1", "depends_on": []},
                        {"id": "t0", "status": "UNCLAIMED"}, {"id": "t9", "status": "DRAFT"}],
              "config": {"lease_duration": 600}, "agents": {"coder-1": {"role": "coder"}},
              "goal": {"status": "IN_PROGRESS"}}
    lines = view_edits(view, edited)
    assert "task t1 status: DRAFT -> UNCLAIMED (`git liza finalize t1`)" in lines
    assert "task t1 depends_on: t0 -> (none) (`git liza edit t1 --depends-on ...`)" in lines
    assert "task t0 status: CLAIMED -> UNCLAIMED (`git liza release t0`)" in lines
    assert not any("priority" in x for x in lines)  # 1 and "1" are the same value
    assert any(x.startswith("task t0 assigned_to") for x in lines)
    assert len(lines) == 6 and lines[-1] == "and 1 more change(s)"  # t1 x2, t0 x2, t9, config
    assert view_edits(view, ["not", "a", "board"]) == ["the file is no longer a board (not a mapping)"]
