"""A task held on another machine is not an inconsistency (git/worktrees/listing.py `held_here`):
`validate` and `doctor` judge the worktree of a CLAIMED task only in the clone that holds it, and
say so for the others; the clone that holds it is still told when its worktree is gone."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import git
from tests.services.test_sync import cli, clone, seed


def test_claim_on_another_machine_is_not_judged_here(tmp_path: Path) -> None:
    bare, work = seed(tmp_path)
    git(work, "push", "-q", "origin", "main:refs/heads/integration")
    a, b = clone(bare, tmp_path / "a"), clone(bare, tmp_path / "b")
    r = cli(b, "claim", "task-1", agent="b1")  # auto-sync shares it
    assert r.returncode == 0, r.stderr
    assert cli(a, "sync").returncode == 0
    # A: the board says CLAIMED with worktree .worktrees/task-1, which is on B.
    r = cli(a, "validate")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "VALID" in r.stdout and "task-1 is CLAIMED by b1 on another machine" in r.stdout
    assert json.loads(cli(a, "validate", "--json").stdout)["elsewhere"] == ["task-1"]
    r = cli(a, "doctor")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "elsewhere task-1" in r.stdout and "missing-worktree" not in r.stdout
    r = cli(a, "doctor", "--fix")
    assert r.returncode == 0 and not (a / ".worktrees" / "task-1").exists()
    # B holds it: its worktree is judged there, and a lost one is still reported.
    assert cli(b, "validate").returncode == 0
    shutil.rmtree(b / ".worktrees" / "task-1")
    r = cli(b, "validate")
    assert r.returncode == 4 and "worktree path must exist" in r.stdout, r.stdout + r.stderr
    r = cli(b, "doctor")
    assert r.returncode == 4 and "missing-worktree task-1" in r.stdout, r.stdout
