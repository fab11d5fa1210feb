"""Stale lock files of each kind a killed git leaves on gitliza's refs (finding 1 of issue 18):
the task branch, the integration branch, the board, packed-refs. Each: what the user sees (one
line, the lock named, `doctor --fix` named), `doctor` finding it by age and owner, `--fix`
removing it, and the next op going through."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from gitliza.services.lifecycle.doctor import doctor
from gitliza.services.api import Liza
from tests.conftest import git
from tests.faults import harness as h

pytestmark = pytest.mark.slow


def stale(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    then = time.time() - 60
    os.utime(path, (then, then))
    return path


def doctor_fixes(repo: Path, lock: Path) -> None:
    r = h.liza(repo, "doctor")
    assert r.returncode == 4 and f"stale-lock {lock}" in r.stdout and "owner " in r.stdout, r
    r = h.liza(repo, "doctor", "--fix")
    assert r.returncode == 0 and "[fixed]" in r.stdout, r
    assert not lock.exists()


def test_a_stale_task_branch_lock_is_skipped_by_claim_and_removed_by_doctor(repo: Path) -> None:
    h.board_with(repo, ("t1", "t2"))
    lock = stale(repo / ".git" / "refs" / "heads" / "liza" / "t1.lock")
    before = git(repo, "rev-parse", "refs/liza/state")
    r = h.liza(repo, "claim", "t1", agent="c1")
    assert r.returncode == 2, r
    assert str(lock) in r.stderr and "doctor --fix" in r.stderr
    assert "please report" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert git(repo, "rev-parse", "refs/liza/state") == before
    r = h.liza(repo, "claim", agent="c1")  # the best task is t1: skipped, with why; t2 claimed
    assert r.returncode == 0, r
    assert "skipped t1" in r.stderr and str(lock) in r.stderr
    assert Liza.open(repo).board().task("t2").status.value == "CLAIMED"
    doctor_fixes(repo, lock)
    h.liza(repo, "claim", "t1", agent="c2", check=True)


def test_a_stale_integration_lock_names_doctor_fix_and_merge_goes_on(repo: Path,
                                                                       monkeypatch: pytest.MonkeyPatch
                                                                       ) -> None:
    monkeypatch.setenv("LIZA_NOW", h.NOW)
    h.board_with(repo, ("t1",))
    h._approved(repo, "t1")
    lock = stale(repo / ".git" / "refs" / "heads" / "integration.lock")
    r = h.liza(repo, "merge", "t1", agent="r1")
    assert r.returncode == 2, r
    assert str(lock) in r.stderr and "doctor --fix" in r.stderr and "crashed" in r.stderr
    assert Liza.open(repo).board().task("t1").status.value == "APPROVED"
    doctor_fixes(repo, lock)
    h.liza(repo, "merge", "t1", agent="r1", check=True)


def test_a_stale_board_lock_names_doctor_fix(repo: Path) -> None:
    h.board_with(repo, ("t1",))
    lock = stale(repo / ".git" / "refs" / "liza" / "state.lock")
    r = h.liza(repo, "claim", "t1", agent="c1")
    assert r.returncode == 2 and "doctor --fix" in r.stderr and "crashed" in r.stderr, r
    assert not (repo / ".worktrees" / "t1").exists()  # the claim's worktree was taken back
    doctor_fixes(repo, lock)
    h.liza(repo, "claim", "t1", agent="c1", check=True)


def test_a_held_packed_refs_lock_never_fails_a_recorded_release(repo: Path,
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    """Finding 2: the transition is recorded, then the branch cannot be deleted (packed-refs.lock
    held): a notice naming doctor --fix, exit 0; doctor --fix finishes the job."""
    monkeypatch.setenv("LIZA_NOW", h.NOW)
    h.board_with(repo, ("t1",))
    h._claimed(repo, "t1")
    git(repo, "pack-refs", "--all")  # the branch is packed: deleting it takes packed-refs.lock
    lock = repo / ".git" / "packed-refs.lock"
    lock.touch()  # held by a live `git pack-refs` (fresh): waited for, then left to doctor
    r = h.liza(repo, "release", "t1", agent="c1")
    assert r.returncode == 0, r
    assert "doctor --fix" in r.stdout + r.stderr and "please report" not in r.stderr
    assert Liza.open(repo).board().task("t1").status.value == "UNCLAIMED"
    assert git(repo, "branch", "--list", "liza/t1")
    stale(lock)
    doctor_fixes(repo, lock)
    report = doctor(Liza.open(repo), fix=True)
    assert not report.remaining
    assert not git(repo, "branch", "--list", "liza/t1")
