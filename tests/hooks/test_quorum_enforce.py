"""The review quorum and acceptance evidence through the real server hook (issue 40): an approval
that lacks the quorum, and a merge on it, are refused by the bare remote's pre-receive; evidence
that names a path the reviewed commit lacks is refused there and by `verify`; the legitimate
quorum of two distinct reviewers is accepted and merges."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from gitliza.core.model import Evidence, ReviewVote
from gitliza.core.ops import ClaimReview, ConfigSet, Merge, Register, Verdict
from gitliza.core.ops.base import Event
from gitliza.core.states import TaskState
from gitliza.git.store import Store
from gitliza.services.api import Liza
from tests.conftest import git
from tests.hooks.test_enforce import (T0, _to_review, clone, forge, push, remote_ref, run,
                                      state_push_refused, team)

__all__ = ["team"]  # the fixture
S = TaskState


def _quorum_clone(tmp_path: Path, bare: Path) -> tuple[Path, str]:
    c = clone(tmp_path, bare, "c")
    human = Liza.open(c, "human", now=lambda: T0)
    human.do(ConfigSet, key="review_quorum", value="2")
    human.do(Register, agent="rev-2", role="code_reviewer")
    return c, _to_review(c)


def _forged_approval(c: Path, review: str, votes: tuple[ReviewVote, ...], counted: bool) -> None:
    t = Store.discover(c).board()[0].task("t1")
    assert t is not None
    op = Verdict(actor="rev-1", time=T0, task="t1", verdict="approve", commit=review,
                 counted=counted, evidence=votes[0].evidence if votes else ())
    approved = dataclasses.replace(t, status=S.APPROVED, approved_by="rev-1", reviewing_by=None,
                                   review_lease_expires=None, review_votes=votes)
    forge(c, op, {("tasks", "t1"): approved},
          Event("verdict", "rev-1", T0, "t1", S.READY_FOR_REVIEW, S.APPROVED,
                summary="verdict t1 (READY_FOR_REVIEW -> APPROVED) by rev-1"))


def _forged_merge(c: Path, review: str) -> None:
    t = Store.discover(c).board()[0].task("t1")
    assert t is not None
    op = Merge(actor="rev-1", time=T0, task="t1", result="merged", merge_commit=review)
    merged = dataclasses.replace(t, status=S.MERGED, merge_commit=review, worktree=None)
    forge(c, op, {("tasks", "t1"): None, ("archive", "t1"): merged},
          Event("merge", "rev-1", T0, "t1", S.APPROVED, S.MERGED,
                summary="merge t1 (APPROVED -> MERGED) by rev-1"))


def test_one_approval_of_two_and_its_merge_are_refused_by_the_server(
        tmp_path: Path, team: tuple[Path, Path]) -> None:
    bare, _seed = team
    before = remote_ref(bare, "refs/liza/state")
    c, review = _quorum_clone(tmp_path, bare)
    one = (ReviewVote(agent="rev-1", commit=review, time=T0),)
    _forged_approval(c, review, one, counted=True)
    _forged_merge(c, review)
    line = state_push_refused(c, bare, before)
    # Replayed, the one approval leaves the task in review: not the APPROVED the commit records.
    assert "(verdict):" in line and "replay says 'READY_FOR_REVIEW'" in line
    assert run(c, "git", "liza", "verify").returncode == 4


def test_an_uncounted_approval_cannot_skip_the_quorum(tmp_path: Path,
                                                     team: tuple[Path, Path]) -> None:
    bare, _seed = team
    before = remote_ref(bare, "refs/liza/state")
    c, review = _quorum_clone(tmp_path, bare)
    _forged_approval(c, review, (), counted=False)
    line = state_push_refused(c, bare, before)
    assert "(verdict): replay refused" in line and "uncounted" in line


def test_two_distinct_approvals_are_accepted_and_merge(tmp_path: Path,
                                                       team: tuple[Path, Path]) -> None:
    from gitliza.core.ops import Claim, Submit
    bare, _seed = team
    c = clone(tmp_path, bare, "c")  # on the real clock: the server takes what it accepts
    Liza.open(c, "human").do(ConfigSet, key="review_quorum", value="2")
    Liza.open(c, "human").do(Register, agent="rev-2", role="code_reviewer")
    review = git(c, "rev-parse", "main")
    Liza.open(c, "coder-1").do(Claim, task="t1", worktree=".worktrees/t1", base_commit=review)
    Liza.open(c, "coder-1").do(Submit, task="t1", commit=review)
    for who in ("rev-1", "rev-2"):
        r = Liza.open(c, who)
        r.do(ClaimReview, task="t1")
        r.do(Verdict, task="t1", verdict="approve", commit=review, counted=True)
    t = Store.discover(c).board()[0].task("t1")
    assert t is not None and t.status == S.APPROVED
    assert [v.agent for v in t.review_votes] == ["rev-1", "rev-2"]
    Liza.open(c, "rev-2").do(Merge, task="t1", result="merged", merge_commit=review)
    r = push(c, "refs/liza/state:refs/liza/state")
    assert r.returncode == 0, r.stderr
    assert remote_ref(bare, "refs/liza/state") == git(c, "rev-parse", "refs/liza/state")


def test_evidence_a_commit_lacks_is_refused_by_the_server_and_verify(
        tmp_path: Path, team: tuple[Path, Path]) -> None:
    from gitliza.core.ops import Add, Claim, Submit
    bare, _seed = team
    before = remote_ref(bare, "refs/liza/state")
    c = clone(tmp_path, bare, "c")
    review = git(c, "rev-parse", "main")  # README.md (one line) and s
    Liza.open(c, "human", now=lambda: T0).do(
        Add, task="t2", description="d", spec_ref="s", done_when="- a readme\n- a spec",
        criteria=("a readme", "a spec"), scope="x", ready=True)
    Liza.open(c, "coder-1", now=lambda: T0).do(Claim, task="t2", worktree=".worktrees/t2",
                                                base_commit=review)
    Liza.open(c, "coder-1", now=lambda: T0).do(Submit, task="t2", commit=review)
    Liza.open(c, "rev-1", now=lambda: T0).do(ClaimReview, task="t2")
    store = Store.discover(c)
    tip = store.resolve(None)
    spec = Evidence(criterion=2, kind="test", ref="tests/test_spec.py::test_it")
    for ref, ok in (("README.md:1", True), ("README.md:2", False), ("missing.py", False)):
        # The core checks the evidence's shape only; a writer that skips the verdict command's
        # reading of the commit (services/lifecycle/review.py) gets this far, and no further.
        ev = (Evidence(criterion=1, kind="path", ref=ref), spec)
        Liza.open(c, "rev-1", now=lambda: T0).do(Verdict, task="t2", verdict="approve",
                                                  commit=review, counted=True, evidence=ev)
        r = run(c, "git", "liza", "verify")
        if ok:
            assert r.returncode == 0, r.stderr
        else:
            assert r.returncode == 4 and "evidence for criterion 1" in r.stderr, r.stderr
            line = state_push_refused(c, bare, before)
            assert "(verdict)" in line and "evidence for criterion 1" in line
        store.repo.references.create(store.ref, tip.id, force=True)  # back to the review
