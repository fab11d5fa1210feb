"""Merge batches with bisection (issue 37, config merge_batch): one integration test for a batch
of approved tasks; on a failure the batch is bisected for the longest passing prefix, which is
merged without testing its trees again; the task that broke the test gets its own merge, which
records it INTEGRATION_FAILED. Real repositories, a real integration test script."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gitliza.services.api import Liza
from gitliza.services.lifecycle.batch import merge_batch
from gitliza.services.lifecycle.merge import MergeFailed, merge
from tests.conftest import git
from tests.services.test_lifecycle import VENV_BIN, claimed, commit_file, ok, setup_board, task


def test_a_batch_is_tested_once_and_bisected_on_failure(repo: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    script = repo / "scripts" / "integration-test.sh"
    script.parent.mkdir()
    script.write_text(f"#!/bin/sh\necho run >> {runs}\n! test -e bad.txt\n")
    script.chmod(0o755)
    git(repo, "add", "scripts")
    git(repo, "commit", "-q", "-m", "integration test")
    setup_board(repo, tasks=("t1", "t2", "t3", "t4"))
    for i, tid in enumerate(("t1", "t2", "t3", "t4")):
        coder = ("c1", "c2")[i % 2]
        wt = Path(claimed(repo, tid, coder)["worktree"])
        commit_file(wt, "bad.txt" if tid == "t3" else f"{tid}.txt", f"{tid}\n")
        ok(repo, "submit", tid, agent=coder)
        ok(repo, "claim-review", tid, agent="r1")
        ok(repo, "verdict", tid, "approve", agent="r1")
    r1 = Liza.open(repo, "r1")
    done, tests = merge_batch(r1, ["t1", "t2", "t3", "t4"])
    # The batch of 4 fails; prefix 2 passes, prefix 3 fails: t1 and t2 merge, 3 test runs, and
    # their own merges ran no test again.
    assert (done, tests) == (["t1", "t2"], 3)
    assert runs.read_text().count("run") == 3
    assert [task(repo, t).status for t in ("t1", "t2", "t3", "t4")] == \
        ["MERGED", "MERGED", "APPROVED", "APPROVED"]
    tree = git(repo, "ls-tree", "--name-only", "integration").split()
    assert "t1.txt" in tree and "t2.txt" in tree and "bad.txt" not in tree
    with pytest.raises(MergeFailed):
        merge(r1, "t3")  # its own test fails: INTEGRATION_FAILED, the branch untouched
    assert task(repo, "t3").status == "INTEGRATION_FAILED"
    assert merge(r1, "t4").merge.integration_tested
    assert runs.read_text().count("run") == 5
    v = subprocess.run(["git", "liza", "verify"], cwd=repo, capture_output=True, text=True,
                       env={**os.environ, "PATH": VENV_BIN + os.pathsep + os.environ["PATH"]})
    assert v.returncode == 0, v.stderr
