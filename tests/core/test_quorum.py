"""Review worth trusting (issue 40): the quorum of distinct reviewers, its rules by impact, the
diversity of the approvers, the root-cause gate and acceptance evidence, on real ops."""
from __future__ import annotations

from typing import Any

import pytest

from gitliza.core import quorum
from gitliza.core.model import Config, Evidence, Task
from gitliza.core.ops import (Add, ClaimReview, ConfigSet, Register, RootCause, Submit, Unblock,
                              Verdict)
from gitliza.errors import PermissionDenied, ValidationError
from tests.core.boards import C1, Runner, S, add_ready, claim, team, to_review

C2 = "c" * 40
DIGEST = "sha256:" + "0" * 64


def vote(r: Runner, reviewer: str, decision: str = "approve", commit: str = C1,
         task: str = "task-1", **kw: Any) -> Any:
    r.do(ClaimReview, reviewer, task=task)
    return r.do(Verdict, reviewer, task=task, verdict=decision, commit=commit, counted=True,
                reason="not yet" if decision == "reject" else None, **kw)


def quorum_team(n: int = 2, **config: str) -> Runner:
    r = team()
    r.do(Register, "human", agent="reviewer-3", role="code_reviewer")
    r.do(ConfigSet, "human", key="review_quorum", value=str(n))
    for k, v in config.items():
        r.do(ConfigSet, "human", key=k, value=v)
    return r


def unchanged(r: Runner, fn: Any, exc: type[Exception], match: str) -> None:
    before = r.board
    with pytest.raises(exc, match=match or None):
        fn()
    assert r.board is before


def test_two_distinct_approvals_approve_and_the_last_one_decides() -> None:
    r = quorum_team(2)
    add_ready(r)
    to_review(r)
    out = vote(r, "reviewer-1")
    t = r.board.task("task-1")
    assert t.status == S.READY_FOR_REVIEW and t.reviewing_by is None
    assert [v.agent for v in t.review_votes] == ["reviewer-1"]
    assert quorum.tally(r.board.config, t) == "1/2 (reviewer-1)"
    assert "approval 1 of 2" in out.event.summary
    assert r.board.agent("reviewer-1").status == "IDLE"
    assert r.board.agent("coder-1").current_task == "task-1"  # still the coder's, waiting
    # The same reviewer cannot vote twice on the commit: not by a new lease, nor a verdict.
    unchanged(r, lambda: r.do(ClaimReview, "reviewer-1", task="task-1"), ValidationError,
              "already approved")
    vote(r, "reviewer-2")
    t = r.board.task("task-1")
    assert t.status == S.APPROVED and t.approved_by == "reviewer-2"
    assert [v.agent for v in t.review_votes] == ["reviewer-1", "reviewer-2"]


def test_the_coder_cannot_count_toward_its_own_quorum() -> None:
    r = quorum_team(2)
    r.do(Register, "human", agent="both", role="code_reviewer")
    add_ready(r)
    to_review(r)
    vote(r, "reviewer-1")
    unchanged(r, lambda: r.do(ClaimReview, "coder-1", task="task-1"), PermissionDenied, "")


def test_one_reject_rejects_and_a_new_commit_counts_anew() -> None:
    r = quorum_team(2)
    add_ready(r)
    to_review(r)
    vote(r, "reviewer-1")
    vote(r, "reviewer-2", "reject")
    t = r.board.task("task-1")
    assert t.status == S.REJECTED and t.review_votes == ()
    claim(r)
    r.do(Submit, "coder-1", task="task-1", commit=C2)
    vote(r, "reviewer-1", commit=C2)  # reviewer-1 approved C1, not C2: it may vote again
    assert r.board.task("task-1").status == S.READY_FOR_REVIEW
    vote(r, "reviewer-3", commit=C2)
    assert r.board.task("task-1").status == S.APPROVED


def test_an_uncounted_verdict_cannot_skip_the_quorum() -> None:
    r = quorum_team(2)
    add_ready(r)
    to_review(r)
    r.do(ClaimReview, "reviewer-1", task="task-1")
    unchanged(r, lambda: r.do(Verdict, "reviewer-1", task="task-1", verdict="approve",
                              commit=C1), ValidationError, "uncounted")


def test_quorum_one_approves_at_once_and_records_the_vote() -> None:
    r = team()
    add_ready(r)
    to_review(r)
    vote(r, "reviewer-1", cli="claude", model="m1")
    t = r.board.task("task-1")
    assert t.status == S.APPROVED
    assert (t.review_votes[0].cli, t.review_votes[0].model) == ("claude", "m1")


def test_review_keys_are_the_humans() -> None:
    r = team()
    for key in ("review_quorum", "quorum_rules", "review_diversity", "rca_after_rejections"):
        unchanged(r, lambda: r.do(ConfigSet, "planner-1", key=key, value="1"), PermissionDenied,
                  "human")


@pytest.mark.parametrize("key,value", [("review_quorum", "0"), ("review_quorum", "10"),
                                       ("quorum_rules", "security=2"),
                                       ("quorum_rules", "label:x=0"),
                                       ("review_diversity", "vendor")])
def test_bad_review_config_is_refused(key: str, value: str) -> None:
    r = team()
    unchanged(r, lambda: r.do(ConfigSet, "human", key=key, value=value), ValidationError, key
              if key != "quorum_rules" else "quorum rule")


def test_diversity_asks_for_another_cli() -> None:
    r = quorum_team(2, review_diversity="cli")
    add_ready(r)
    to_review(r)
    r.do(ClaimReview, "reviewer-1", task="task-1")
    unchanged(r, lambda: r.do(Verdict, "reviewer-1", task="task-1", verdict="approve",
                              commit=C1, counted=True), ValidationError, "no cli recorded")
    r.do(Verdict, "reviewer-1", task="task-1", verdict="approve", commit=C1, counted=True,
         cli="claude", model="a")
    r.do(ClaimReview, "reviewer-2", task="task-1")
    unchanged(r, lambda: r.do(Verdict, "reviewer-2", task="task-1", verdict="approve",
                              commit=C1, counted=True, cli="claude", model="b"),
              ValidationError, "reviewer-1 already approved task-1 with cli claude")
    r.do(Verdict, "reviewer-2", task="task-1", verdict="approve", commit=C1, counted=True,
         cli="codex", model="a")
    assert r.board.task("task-1").status == S.APPROVED


def test_a_label_rule_raises_the_quorum() -> None:
    r = quorum_team(1, quorum_rules="label:security=2 scope:migrations/**=3")
    assert r.board.config.quorum_rules == "label:security=2 scope:migrations/**=3"
    add_ready(r, labels=("security",))
    add_ready(r, task="task-2")
    assert quorum.required(r.board.config, r.board.task("task-1")) == 2
    assert quorum.required(r.board.config, r.board.task("task-2")) == 1
    to_review(r)
    vote(r, "reviewer-1")
    assert r.board.task("task-1").status == S.READY_FOR_REVIEW
    vote(r, "reviewer-2")
    assert r.board.task("task-1").status == S.APPROVED


def test_a_scope_rule_matches_a_lock_scope() -> None:
    cfg = Config(quorum_rules="scope:migrations/**=2")

    class Scoped:  # the shape issue 37's field gives a task
        labels: tuple[str, ...] = ()
        lock_scope = ("migrations/0001.sql", "src/**")

    assert quorum.required(cfg, Scoped()) == 2  # type: ignore[arg-type]
    Scoped.lock_scope = ("src/**",)
    assert quorum.required(cfg, Scoped()) == 1  # type: ignore[arg-type]
    Scoped.lock_scope = ("**",)  # everything: migrations too
    assert quorum.required(cfg, Scoped()) == 2  # type: ignore[arg-type]


# -- the root-cause gate ------------------------------------------------------------------------
def test_rejections_block_until_a_root_cause_is_recorded() -> None:
    r = quorum_team(1, rca_after_rejections="2", max_review_cycles="9")
    add_ready(r)
    to_review(r)
    vote(r, "reviewer-1", "reject")
    assert r.board.task("task-1").status == S.REJECTED
    claim(r)
    r.do(Submit, "coder-1", task="task-1", commit=C2)
    out = vote(r, "reviewer-1", "reject", commit=C2)
    t = r.board.task("task-1")
    assert t.status == S.BLOCKED and t.needs_root_cause
    assert "root cause needed: 2 rejections" in str(t.blocked_reason)
    assert any("root cause needed" in n for n in out.notices)
    unchanged(r, lambda: r.do(Unblock, "planner-1", task="task-1"), ValidationError,
              "root-cause note")
    unchanged(r, lambda: r.do(RootCause, "coder-1", task="task-1", note="x"), PermissionDenied,
              "")
    unchanged(r, lambda: r.do(RootCause, "planner-1", task="task-1", note="  "),
              ValidationError, "must not be empty")
    r.do(RootCause, "planner-1", task="task-1", note="done_when asks for two exit codes")
    t = r.board.task("task-1")
    assert t.status == S.UNCLAIMED and not t.needs_root_cause
    assert (t.root_cause, t.root_cause_at) == ("done_when asks for two exit codes", 2)
    # The count starts again after the note: one more rejection does not block.
    claim(r)
    r.do(Submit, "coder-1", task="task-1", commit=C1)
    vote(r, "reviewer-1", "reject")
    assert r.board.task("task-1").status == S.REJECTED


# -- acceptance evidence ------------------------------------------------------------------------
def _with_criteria(r: Runner) -> None:
    r.do(Add, "planner-1", task="task-1", description="d", spec_ref="specs/a.md",
         done_when="- prints hello\n- exits 0", criteria=quorum.criteria_of(
             "- prints hello\n- exits 0"), scope="api", ready=True)


def test_an_approval_needs_evidence_for_every_criterion() -> None:
    r = team()
    _with_criteria(r)
    assert r.board.task("task-1").criteria == ("prints hello", "exits 0")
    to_review(r)
    r.do(ClaimReview, "reviewer-1", task="task-1")
    one = (Evidence(criterion=1, kind="path", ref="src/hello.py:3"),)
    unchanged(r, lambda: r.do(Verdict, "reviewer-1", task="task-1", verdict="approve",
                              commit=C1, counted=True, evidence=one), ValidationError,
              "no evidence for acceptance criterion 2")
    unchanged(r, lambda: r.do(Verdict, "reviewer-1", task="task-1", verdict="approve",
                              commit=C1), ValidationError, "uncounted")
    both = one + (Evidence(criterion=2, kind="command", ref="python -m hello",
                           digest=DIGEST),)
    r.do(Verdict, "reviewer-1", task="task-1", verdict="approve", commit=C1, counted=True,
         evidence=both)
    t = r.board.task("task-1")
    assert t.status == S.APPROVED and t.review_votes[0].evidence == both


@pytest.mark.parametrize("text,match", [
    ("1=path:/etc/passwd", "relative"), ("1=path:../x", "relative"), ("x=path:a", "N=KIND"),
    ("1=url:http://x", "kind"), ("1=command:make", "digest"), ("1=command:make@sha256:12",
                                                                 "digest"),
    ("1=test:", "one-line")])
def test_bad_evidence_is_refused(text: str, match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        quorum.parse_evidence(text)


def test_evidence_parses() -> None:
    assert quorum.parse_evidence("2=path:src/a.py:12") == Evidence(2, "path", "src/a.py:12")
    assert quorum.parse_evidence(f"1=command:pytest -q@{DIGEST}") == \
        Evidence(1, "command", "pytest -q", DIGEST)
    assert quorum.parse_evidence("1=test:tests/t.py::test_a") == \
        Evidence(1, "test", "tests/t.py::test_a")
    assert quorum.split_path("a/b.py:7") == ("a/b.py", 7)
    assert quorum.split_path("a/b.py") == ("a/b.py", None)


def test_evidence_for_a_criterion_the_task_lacks_is_refused() -> None:
    t = Task(id="t", description="d", status=S.READY_FOR_REVIEW, created="x",
             criteria=("a",))
    with pytest.raises(ValidationError, match="has 1 acceptance criteria"):
        quorum.check_evidence(t, (Evidence(1, "test", "a"), Evidence(2, "test", "b")))


def test_criteria_of_done_when() -> None:
    assert quorum.criteria_of("it works") == ()
    assert quorum.criteria_of("- a\n\n* b\n3. c") == ("a", "b", "c")


# -- the prompts ---------------------------------------------------------------------------------
def test_the_reviewer_prompt_asks_for_evidence_and_names_the_votes() -> None:
    from gitliza.core.agents.prompts import coder_section, reviewer_section
    r = quorum_team(2)
    _with_criteria(r)
    to_review(r)
    r.do(ClaimReview, "reviewer-1", task="task-1")
    both = (Evidence(1, "path", "src/hello.py:3"), Evidence(2, "test", "tests/t.py::test_exit"))
    r.do(Verdict, "reviewer-1", task="task-1", verdict="approve", commit=C1, counted=True,
         evidence=both)
    text = reviewer_section(r.board.task("task-1"), "/w")
    assert "APPROVED SO FAR BY: reviewer-1" in text
    assert "CRITERION 1" in text and "  | prints hello" in text and "  | exits 0" in text
    assert "--evidence 1=path:FILE:LINE --evidence 2=path:FILE:LINE" in text
    plain = team()
    add_ready(plain)
    to_review(plain)
    assert "EVIDENCE" not in reviewer_section(plain.board.task("task-1"), "/w")
    assert "ROOT CAUSE" not in coder_section(plain.board.task("task-1"), "/w")


def test_the_next_coder_reads_the_root_cause() -> None:
    from gitliza.core.agents.prompts import coder_section
    r = quorum_team(1, rca_after_rejections="1")
    add_ready(r)
    to_review(r)
    vote(r, "reviewer-1", "reject")
    r.do(RootCause, "human", task="task-1", note="the spec's exit code is ambiguous")
    claim(r, coder="coder-2")
    text = coder_section(r.board.task("task-1"), "/w")
    assert "ROOT CAUSE OF 1 REJECTIONS" in text
    assert "  | the spec's exit code is ambiguous" in text


# -- several review leases at once ---------------------------------------------------------------
def test_two_reviewers_hold_leases_at_once_and_a_third_waits() -> None:
    from gitliza.core.agents import wake
    from gitliza.core.ops import Heartbeat
    from gitliza.core.invariants import reviewable
    r = quorum_team(2, lease_duration="3600")  # the fake clock moves a minute per op
    add_ready(r)
    to_review(r)
    r.do(ClaimReview, "reviewer-1", task="task-1")
    assert [t.id for t in reviewable(r.board, r.now(), "reviewer-2")] == ["task-1"]
    out = r.do(ClaimReview, "reviewer-2", task="task-1")  # beside reviewer-1's: no takeover
    assert not out.notices
    t = r.board.task("task-1")
    assert t.reviewing_by == "reviewer-1" and [c.agent for c in t.co_reviews] == ["reviewer-2"]
    assert r.board.agent("reviewer-1").status == "REVIEWING"
    assert r.board.agent("reviewer-2").status == "REVIEWING"
    assert wake.still_holds(r.board, "reviewer-2", "task-1", wake.Role.CODE_REVIEWER)
    assert reviewable(r.board, r.now(), "reviewer-3") == []
    unchanged(r, lambda: r.do(ClaimReview, "reviewer-3", task="task-1"), Exception,
              "already being reviewed")
    unchanged(r, lambda: r.do(ClaimReview, "reviewer-2", task="task-1"), Exception,
              "by you")
    before = r.board.task("task-1").co_reviews[0].expires
    r.do(Heartbeat, "reviewer-2", task="task-1")
    assert r.board.task("task-1").co_reviews[0].expires > before
    # The second lease votes first; the first still holds its own.
    r.do(Verdict, "reviewer-2", task="task-1", verdict="approve", commit=C1, counted=True)
    t = r.board.task("task-1")
    assert t.status == S.READY_FOR_REVIEW and t.co_reviews == () and t.reviewing_by == "reviewer-1"
    r.do(Verdict, "reviewer-1", task="task-1", verdict="approve", commit=C1, counted=True)
    t = r.board.task("task-1")
    assert t.status == S.APPROVED and [v.agent for v in t.review_votes] == ["reviewer-2",
                                                                         "reviewer-1"]


def test_a_rejection_ends_the_other_reviewers_leases() -> None:
    r = quorum_team(2)
    add_ready(r)
    to_review(r)
    r.do(ClaimReview, "reviewer-1", task="task-1")
    r.do(ClaimReview, "reviewer-2", task="task-1")
    out = r.do(Verdict, "reviewer-1", task="task-1", verdict="reject", commit=C1, counted=True,
               reason="no tests")
    t = r.board.task("task-1")
    assert t.status == S.REJECTED and t.co_reviews == () and t.reviewing_by is None
    assert r.board.agent("reviewer-2").status == "IDLE"
    assert any("reviewer-2" in n and "stand down" in n for n in out.notices)
    from gitliza.errors import LeaseLost
    claim(r)
    r.do(Submit, "coder-1", task="task-1", commit=C2)
    unchanged(r, lambda: r.do(Verdict, "reviewer-2", task="task-1", verdict="approve",
                              commit=C2, counted=True), (LeaseLost, ValidationError), "")


def test_an_expired_second_lease_is_dropped_by_the_next_claim() -> None:
    r = quorum_team(2)
    add_ready(r)
    to_review(r)
    r.do(ClaimReview, "reviewer-1", task="task-1")
    r.do(ClaimReview, "reviewer-2", task="task-1")
    r.minute += 6  # past the 5-minute lease: both leases are up
    out = r.do(ClaimReview, "reviewer-3", task="task-1")
    t = r.board.task("task-1")
    assert "reviewer-2" not in [c.agent for c in t.co_reviews]
    assert r.board.agent("reviewer-2").status == "IDLE"
    assert any("reviewer-2's review lease" in n for n in out.notices)
