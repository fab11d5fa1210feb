"""Missing objects under the board and the branches (gitliza/services/integrity.py): `doctor`
finds them and says how to recover, `repair` restores them from the team remote.

The loss is made the way it happens: the objects are deleted from the store that held them (what a
`git prune` racing a commit, or a copy of .git without its alternate, leaves)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import git
from tests.faults import harness as h
from tests.services.test_multi_machine import make_team, remote_ref

pytestmark = pytest.mark.slow


def _lose_board(clone: Path) -> None:
    store = clone / ".git" / "liza-objects"
    shutil.rmtree(store)
    store.joinpath("pack").mkdir(parents=True)


def _lose_loose(clone: Path, oid: str) -> None:
    for where in ("objects", "liza-objects"):
        path = clone / ".git" / where / oid[:2] / oid[2:]
        if path.exists():
            path.unlink()
            return
    raise AssertionError(f"{oid} is not a loose object of {clone}")


def test_doctor_finds_missing_objects_and_repair_restores_them_from_the_remote(
        tmp_path: Path) -> None:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    tm, _a, b, _c = make_team(tmp_path, bare, str(bare))
    tm.liza(b, "claim", "t1", agent="coder-1")
    work = tm.commit(b / ".worktrees" / "t1", "f.txt", "work\n", "coder-1")
    tm.liza(b, "submit", "t1", agent="coder-1")
    assert remote_ref(bare, "refs/heads/liza/t1") == work
    board = git(b, "rev-parse", "refs/liza/state")
    _lose_board(b)
    _lose_loose(b, work)

    seen = h.liza(b, "doctor")
    assert seen.returncode == 4, seen.stderr
    lines = seen.stdout.splitlines()
    assert any(ln.startswith("missing-objects refs/liza/state: the board: ") and
               "`git liza repair` restores it from origin" in ln for ln in lines), seen.stdout
    assert any(ln.startswith(f"missing-objects liza/t1: commit {work[:12]} is missing")
               for ln in lines), seen.stdout

    fixed = h.liza(b, "repair")
    assert fixed.returncode == 0, fixed.stderr
    assert "origin: refs/liza/state: missing objects restored" in fixed.stdout
    assert "origin: liza/t1: missing objects restored" in fixed.stdout
    assert git(b, "rev-parse", "refs/liza/state") == board  # the same board, whole again
    assert git(b, "cat-file", "-t", work) == "commit"
    h.liza(b, "verify", check=True)
    after = h.liza(b, "doctor")
    assert after.returncode == 0 and "missing" not in after.stdout, after.stdout
    git(b, "fsck", "--no-dangling")


def test_without_a_remote_doctor_says_none_holds_a_copy(repo: Path) -> None:
    h.board_with(repo, ("t1",))
    before = git(repo, "rev-parse", "refs/liza/state")
    _lose_board(repo)
    seen = h.liza(repo, "doctor")
    assert seen.returncode == 4
    assert "missing-objects refs/liza/state: the board: commit" in seen.stdout
    assert "no team remote holds a copy" in seen.stdout
    assert git(repo, "rev-parse", "refs/liza/state") == before  # doctor changes nothing
    # status fails with one line and the inconsistent-state code, not an internal error.
    status = h.liza(repo, "status")
    assert status.returncode in (3, 4) and "internal error" not in status.stderr, status.stderr
