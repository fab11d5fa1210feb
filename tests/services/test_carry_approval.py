"""A re-review that covers the fix (issue 37): an integration fix that is exactly git's clean
merge of its approved commit with an integration commit keeps its approval (no second review),
is merged, and the integration branch rule accepts it; a fix with any change of its own is
reviewed again, shown what changed since the approval. Real repositories, a real (flaky)
integration test."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gitliza.core.ops.integration import CarryApproval
from gitliza.errors import ValidationError
from gitliza.services.api import Liza
from gitliza.services.verify.approvals import Approvals, unapproved
from tests.conftest import git
from tests.services.test_lifecycle import (VENV_BIN, claimed, commit_file, fails, ok, run,
                                           setup_board, task)

import pygit2
import pytest


def approved_then_failed(repo: Path, tmp_path: Path) -> tuple[Path, str]:
    """t1 approved at A; t2 merged meanwhile; t1's merge fails its (flaky) integration test."""
    flaky = tmp_path / "flaky"
    script = repo / "scripts" / "integration-test.sh"
    script.parent.mkdir()
    script.write_text(f"#!/bin/sh\n! test -e {flaky}\n")
    script.chmod(0o755)
    git(repo, "add", "scripts")
    git(repo, "commit", "-q", "-m", "integration test")
    setup_board(repo, tasks=("t1", "t2"))
    wt1 = Path(claimed(repo, "t1", "c1")["worktree"])
    wt2 = Path(claimed(repo, "t2", "c2")["worktree"])
    approved = commit_file(wt1, "t1.txt", "one\n")
    commit_file(wt2, "t2.txt", "two\n")
    for tid, coder in (("t2", "c2"), ("t1", "c1")):
        ok(repo, "submit", tid, agent=coder)
        ok(repo, "claim-review", tid, agent="r1")
        ok(repo, "verdict", tid, "approve", agent="r1")
    ok(repo, "merge", "t2", agent="r1")
    flaky.write_text("")
    # The flag is in this test's tmp dir, which the merge's sandbox hides (the merged tree's
    # test runs in one of its own by default: tests/sandbox/test_treerun.py): here, as the caller.
    fails(repo, 3, "merge", "t1", "--sandbox", "off", agent="r1")
    flaky.unlink()
    assert task(repo, "t1").status == "INTEGRATION_FAILED"
    return wt1, approved


def test_a_clean_merge_fix_keeps_its_approval(repo: Path, tmp_path: Path) -> None:
    wt1, approved = approved_then_failed(repo, tmp_path)
    claimed(repo, "t1", "c1")
    git(wt1, "merge", "-q", "--no-edit", "integration")  # git's own clean merge, nothing else
    ok(repo, "submit", "t1", agent="c1")
    r = run(repo, "claim-review", agent="r2")  # nothing to review: the approval carried
    assert r.returncode != 0
    t = task(repo, "t1")
    assert t.status == "APPROVED" and t.history[-1].event == "approval_carried"
    assert [h.event for h in t.history].count("review_claimed") == 1  # one review in all
    ok(repo, "merge", "t1", agent="r1")
    assert task(repo, "t1").status == "MERGED"
    v = subprocess.run(["git", "liza", "verify"], cwd=repo, capture_output=True, text=True,
                       env={**os.environ, "PATH": VENV_BIN + os.pathsep + os.environ["PATH"]})
    assert v.returncode == 0, v.stderr
    # The integration branch rule recomputes the merge: the branch's commits are all covered,
    # and the same two parents with any other tree are not.
    board = Liza.open(repo).board()
    g = pygit2.Repository(str(repo))
    integ = g.references["refs/heads/integration"].target
    rules = Approvals.of(board)
    carried = task(repo, "t1").review_commit
    assert rules.carried == {carried: approved}
    start = pygit2.Oid(hex=git(repo, "rev-parse", "main"))  # the project before the board
    assert unapproved(g, rules, integ, [start]) == []
    c = g.get(pygit2.Oid(hex=carried))
    assert isinstance(c, pygit2.Commit)
    other = g.TreeBuilder(c.tree)
    other.insert("t1.txt", g.create_blob(b"smuggled\n"), pygit2.GIT_FILEMODE_BLOB)
    forged = g.create_commit(None, c.author, c.committer, "forged", other.write(),
                             list(c.parent_ids))
    fake = Approvals(rules.ranges, rules.merges, rules.base, {str(forged): approved})
    assert [str(x.id) for x in unapproved(g, fake, forged, [integ])] == [str(forged)]


def test_a_fix_with_a_change_of_its_own_is_reviewed_again(repo: Path, tmp_path: Path) -> None:
    wt1, approved = approved_then_failed(repo, tmp_path)
    claimed(repo, "t1", "c1")
    git(wt1, "merge", "-q", "--no-edit", "integration")
    commit_file(wt1, "t1.txt", "one, changed\n")
    ok(repo, "submit", "t1", agent="c1")
    ok(repo, "claim-review", "t1", agent="r2")
    t = task(repo, "t1")
    assert t.status == "READY_FOR_REVIEW" and t.reviewing_by == "r2"
    # And nobody may carry it by hand: the op checks what it can, the shell the merge.
    with pytest.raises(ValidationError):
        Liza.open(repo, "r1").do(CarryApproval, task="t1", commit=t.review_commit,
                                 approved="0" * 40, onto="0" * 40)
