"""A fresh `git clone` of a repository whose remote holds a board (issue 27): git clone does not
fetch refs/liza/state, so "no board here" must point at `git liza pull`, and `init` must not
start a second, unrelated board without --force."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.firstday import liza, ok, own_repo, state
from tests.conftest import git


@pytest.fixture
def fresh_clone(tmp_path: Path) -> tuple[Path, str]:
    work, bare = own_repo(tmp_path)
    git(work, "push", "-q", "origin", "main")
    ok(liza(work, "init", "Goal"))
    ok(liza(work, "sync"))
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(bare), str(clone))
    return clone, state(work)


@pytest.mark.parametrize("command", [["status"], ["validate"], ["ready"], ["materialize"]])
def test_no_board_here_names_pull_when_the_remote_holds_one(
        fresh_clone: tuple[Path, str], command: list[str]) -> None:
    clone, theirs = fresh_clone
    r = liza(clone, *command)
    assert r.returncode == 1
    assert "no board here" in r.stderr and "`git liza pull`" in r.stderr
    assert f"origin holds a board ({theirs[:12]})" in r.stderr
    assert "run `git liza init GOAL` first" not in r.stderr


def test_no_board_anywhere_still_says_init(tmp_path: Path) -> None:
    work, _bare = own_repo(tmp_path)  # origin exists and is empty
    r = liza(work, "status")
    assert r.returncode == 1 and "git liza init GOAL" in r.stderr and "pull" not in r.stderr


def test_init_refuses_a_second_board_and_force_makes_one(fresh_clone: tuple[Path, str]) -> None:
    clone, theirs = fresh_clone
    r = liza(clone, "init", "Another goal")
    assert r.returncode == 1
    assert f"origin already holds a board (refs/liza/state at {theirs[:12]})" in r.stderr
    assert "`git liza pull`" in r.stderr and "--force" in r.stderr
    assert state(clone) == ""  # nothing changed
    ok(liza(clone, "pull"))
    assert state(clone) == theirs
    # --force is the person's explicit choice of a separate board (in another clone)
    other = clone.parent / "other"
    git(clone.parent, "clone", "-q", str(clone.parent / "remote.git"), str(other))
    ok(liza(other, "init", "Another goal", "--force"))
    assert state(other) not in ("", theirs)
