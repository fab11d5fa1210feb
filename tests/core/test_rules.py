"""Leases, iteration and review-cycle limits, hypothesis exhaustion, claimability, dependencies."""
from __future__ import annotations

import pytest

from gitliza.core.invariants import claimable, find_cycle
from gitliza.core.ops import Add, Heartbeat, Rescope, Submit, Verdict
from gitliza.core.ops.work import Release
from gitliza.errors import IllegalTransition, LeaseLost, PermissionDenied, ValidationError
from tests.core.boards import BASE, C1, S, add_ready, board_in, claim, team, to_review, verdict


def test_claim_sets_lease_iteration_and_agent_working() -> None:
    r = board_in(S.CLAIMED)
    t, a = r.board.task("task-1"), r.board.agent("coder-1")
    assert t.assigned_to == "coder-1" and t.iteration == 1 and t.base_commit == BASE
    assert t.lease_expires and t.lease_expires > r.now()
    assert a.status == "WORKING" and a.current_task == "task-1" and a.lease_expires == t.lease_expires


def test_heartbeat_extends_the_lease() -> None:
    r = board_in(S.CLAIMED)
    before = r.board.task("task-1").lease_expires
    r.minute += 3
    r.do(Heartbeat, "coder-1")
    assert r.board.task("task-1").lease_expires > before


def test_expired_holder_must_stand_down_and_task_is_reclaimable() -> None:
    r = board_in(S.CLAIMED)
    r.minute += 10
    assert [t.id for t in claimable(r.board, r.now(), "coder-2")] == ["task-1"]
    for op in (lambda: r.do(Submit, "coder-1", task="task-1", commit=C1),
               lambda: r.do(Heartbeat, "coder-1")):
        with pytest.raises(LeaseLost, match="stand down"):
            op()
    out = claim(r, coder="coder-2")
    t = r.board.task("task-1")
    # An expired lease is a fault (a crash, a kill), not coder-1 failing the task (issue 38).
    assert t.assigned_to == "coder-2" and t.failed_by == () and t.iteration == 1
    assert r.board.agent("coder-1").status == "IDLE"
    assert any("coder-1 lost task-1" in n for n in out.notices)
    with pytest.raises(LeaseLost, match="claimed by coder-2"):
        r.do(Submit, "coder-1", task="task-1", commit=C1)


def test_heartbeat_naming_a_lost_task_must_stand_down() -> None:
    r = board_in(S.CLAIMED)
    r.do(Heartbeat, "coder-1", task="task-1")
    r.minute += 10
    claim(r, coder="coder-2")
    with pytest.raises(LeaseLost, match="does not hold task-1"):
        r.do(Heartbeat, "coder-1", task="task-1")
    r.do(Heartbeat, "coder-1")  # without a task: just a sign of life


def test_live_lease_cannot_be_taken() -> None:
    r = board_in(S.CLAIMED)
    with pytest.raises(IllegalTransition, match="already claimed by coder-1"):
        claim(r, coder="coder-2")


def test_same_coder_reclaim_after_reject_increments_iteration() -> None:
    r = board_in(S.REJECTED)
    claim(r)
    t = r.board.task("task-1")
    assert t.iteration == 2 and t.review_cycles_current == 1 and t.review_cycles_total == 1


def test_other_coder_after_reject_resets_counters() -> None:
    r = board_in(S.REJECTED)
    claim(r, coder="coder-2")
    t = r.board.task("task-1")
    assert (t.iteration, t.review_cycles_current, t.review_cycles_total) == (1, 0, 1)
    # One rejection is no failure (only rejections past the limit are): coder-1 left the task,
    # it did not fail it (issue 38).
    assert t.failed_by == ()


def test_max_coder_iterations_per_task_override_blocks_with_anomaly() -> None:
    r = team()
    add_ready(r, max_iterations=2)
    to_review(r)
    verdict(r, "reject")
    claim(r)  # iteration 2
    r.do(Submit, "coder-1", task="task-1", commit=C1)
    verdict(r, "reject")
    out = claim(r)  # iteration 3 > 2
    t = r.board.task("task-1")
    assert t.status == S.BLOCKED and "max_coder_iterations (2)" in t.blocked_reason
    anomalies = list(r.board.values("anomalies"))
    assert [a.type for a in anomalies] == ["retry_loop"]
    assert dict(anomalies[0].details)["count"] == 2
    assert "not claimed" in out.notices[-1]


def test_max_review_cycles_blocks_with_review_deadlock() -> None:
    r = team()
    add_ready(r, max_review_cycles=2)
    to_review(r)
    verdict(r, "reject")
    claim(r)
    r.do(Submit, "coder-1", task="task-1", commit=C1)
    verdict(r, "reject")
    t = r.board.task("task-1")
    assert t.status == S.BLOCKED and "review deadlock" in t.blocked_reason
    assert [a.type for a in r.board.values("anomalies")] == ["review_deadlock"]
    assert r.board.agent("coder-1").status == "IDLE"


def test_reject_needs_a_reason_and_verdict_the_reviewed_sha() -> None:
    r = board_in(S.READY_FOR_REVIEW)
    r.do(__import__("gitliza.core.ops", fromlist=["ClaimReview"]).ClaimReview, "reviewer-1",
         task="task-1")
    with pytest.raises(ValidationError, match="rejection reason"):
        r.do(Verdict, "reviewer-1", task="task-1", verdict="reject", commit=C1)
    with pytest.raises(ValidationError, match="not task-1's review_commit"):
        r.do(Verdict, "reviewer-1", task="task-1", verdict="approve", commit="c" * 40)


def test_verdict_without_review_lease_is_refused() -> None:
    r = board_in(S.READY_FOR_REVIEW)
    with pytest.raises(ValidationError, match="no review lease"):
        r.do(Verdict, "reviewer-1", task="task-1", verdict="approve", commit=C1)


def test_coder_cannot_claim_review_of_its_task() -> None:
    r = board_in(S.READY_FOR_REVIEW)
    with pytest.raises(PermissionDenied):
        r.do(__import__("gitliza.core.ops", fromlist=["ClaimReview"]).ClaimReview, "coder-1",
             task="task-1")


def test_dependencies_gate_claimability() -> None:
    r = team()
    add_ready(r, "task-a")
    r.do(Add, "planner-1", task="task-b", description="d", spec_ref="s", done_when="w",
         scope="x", ready=True, depends_on=("task-a",))
    assert [t.id for t in claimable(r.board, r.now())] == ["task-a"]
    with pytest.raises(ValidationError, match="waiting for task-a"):
        claim(r, "task-b")


def test_claimable_order_is_priority_then_age() -> None:
    r = team()
    add_ready(r, "task-old", priority=2)
    add_ready(r, "task-new", priority=2)
    add_ready(r, "task-urgent", priority=1)
    assert [t.id for t in claimable(r.board, r.now())] == ["task-urgent", "task-old", "task-new"]


def test_failed_coder_cannot_reclaim() -> None:
    from gitliza.core.ops import Block, Unblock
    r = board_in(S.CLAIMED)
    r.do(Block, "coder-1", task="task-1", reason="spec gap", questions=("which?",))
    r.do(Unblock, "planner-1", task="task-1")
    with pytest.raises(ValidationError, match="already failed"):
        claim(r, coder="coder-1")


def test_a_format_1_claim_still_counts_the_previous_coder_so_old_boards_replay() -> None:
    """Claims recorded before issue 38 carry no forgive_faults: replay must give what they gave."""
    from gitliza.core.ops import Claim
    r = board_in(S.CLAIMED)
    r.minute += 10
    r.do(Claim, "coder-2", task="task-1", worktree=".worktrees/task-1", base_commit=BASE)
    assert r.board.task("task-1").failed_by == ("coder-1",)
    r.minute += 10
    r.do(Claim, "coder-3", task="task-1", worktree=".worktrees/task-1", base_commit=BASE)
    t = r.board.task("task-1")
    assert t.status == S.BLOCKED and t.failed_by == ("coder-1", "coder-2")


def test_a_coder_that_lost_its_claim_to_a_takeover_may_claim_again() -> None:
    """Issue 38: crash, kill, expired lease: the coder did not fail the task; no claim on
    claim makes hypothesis exhaustion."""
    r = board_in(S.CLAIMED)
    r.minute += 10
    claim(r, coder="coder-2")
    r.minute += 10
    claim(r, coder="coder-3")
    r.minute += 10
    claim(r, coder="coder-1")
    t = r.board.task("task-1")
    assert (t.status, t.assigned_to, t.failed_by) == (S.CLAIMED, "coder-1", ())


def test_release_gives_back() -> None:
    r = board_in(S.CLAIMED)
    r.do(Release, "coder-1", task="task-1")
    t = r.board.task("task-1")
    assert t.status == S.UNCLAIMED and t.worktree is None and t.assigned_to is None
    assert r.board.agent("coder-1").status == "IDLE"


def test_rescope_rewires_dependents_and_records_alignment() -> None:
    r = team()
    add_ready(r, "task-a")
    r.do(Add, "planner-1", task="task-b", description="d", depends_on=("task-a",))
    r.do(Rescope, "planner-1", task="task-a", into=("task-a1", "task-a2"), reason="too broad")
    assert r.board.task("task-b").depends_on == ("task-a1", "task-a2")
    assert r.board.task("task-a1").supersedes == "task-a"
    assert r.board.goal.alignment_history[-1].event == "rescope_task-a"
    assert r.board.get("archive", "task-a") is not None and r.board.get("tasks", "task-a") is None


def test_find_cycle() -> None:
    assert find_cycle({"a": ("b",), "b": ("c",), "c": ("a",)}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": ("b",), "b": (), "c": ("a", "b")}) is None


@pytest.mark.parametrize("bad", ["../x", "/abs", "", "has space", "ctl\x01", "UPPER", "a--b",
                                 "-lead", "x" * 65, "a/b", "é"])
def test_bad_task_ids_are_refused(bad: str) -> None:
    r = team()
    with pytest.raises(ValidationError):
        r.do(Add, "planner-1", task=bad, description="d")
    assert r.board.keys("tasks") == []


def test_a_reviewer_whose_lease_expired_can_start_over() -> None:
    from gitliza.core.ops import ClaimReview
    r = board_in(S.READY_FOR_REVIEW)
    r.do(ClaimReview, "reviewer-1", task="task-1")
    r.minute += 10  # the review lease (5 min) expired; nobody took over
    with pytest.raises(LeaseLost):
        r.do(Heartbeat, "reviewer-1")
    r.do(ClaimReview, "reviewer-1", task="task-1")  # its own task again: a fresh lease
    t = r.board.task("task-1")
    assert t.reviewing_by == "reviewer-1" and t.review_lease_expires > r.now()


def test_a_stale_reviewer_moving_to_another_task_releases_the_first() -> None:
    from gitliza.core.ops import ClaimReview
    r = team()
    for task in ("task-1", "task-2"):
        add_ready(r, task)
    to_review(r, "task-1", "coder-1")
    to_review(r, "task-2", "coder-2")
    r.do(ClaimReview, "reviewer-1", task="task-1")
    r.minute += 10
    r.do(ClaimReview, "reviewer-1", task="task-2")
    assert r.board.task("task-1").reviewing_by is None
    assert [t.id for t in __import__("gitliza.core.invariants", fromlist=["x"]).reviewable(
        r.board, r.now(), "reviewer-2")] == ["task-1"]


def test_a_coder_whose_lease_expired_can_claim_other_work() -> None:
    r = team()
    add_ready(r, "task-1")
    add_ready(r, "task-2")
    claim(r, "task-1")
    with pytest.raises(ValidationError, match="finish or release it first"):
        claim(r, "task-2")
    r.minute += 10
    claim(r, "task-2")
    assert r.board.agent("coder-1").current_task == "task-2"


def test_a_rejected_task_waits_for_its_coder_in_automatic_picking() -> None:
    r = board_in(S.REJECTED)
    assert claimable(r.board, r.now(), "coder-2") == []
    assert [t.id for t in claimable(r.board, r.now(), "coder-1")] == ["task-1"]
    claim(r, coder="coder-2")  # naming it still reassigns it (a planner's decision)
    assert r.board.task("task-1").failed_by == ()  # one rejection is no failure


def test_a_handoff_is_not_a_failure() -> None:
    from gitliza.core.ops import HandoffOp
    r = board_in(S.CLAIMED)
    r.do(HandoffOp, "coder-1", task="task-1", summary="80% done", next_action="add the test")
    r.minute += 10
    claim(r, coder="coder-2")
    assert r.board.task("task-1").failed_by == ()


def test_only_the_planner_or_human_registers_agents() -> None:
    from gitliza.core.ops import Register
    r = team()
    with pytest.raises(PermissionDenied, match="registering sneaky-reviewer is not allowed for "
                                               "coder-1 .*allowed: human, planner"):
        r.do(Register, "coder-1", agent="sneaky-reviewer", role="code_reviewer")
    r.do(Register, "planner-1", agent="reviewer-9", role="code_reviewer")
    r.do(Register, "coder-7", agent="coder-7", role="coder")  # self-registration
    with pytest.raises(ValidationError, match="already registered"):
        r.do(Register, "coder-1", agent="coder-1", role="code_reviewer")


def test_config_values_are_bounded() -> None:
    from gitliza.core.ops import ConfigSet
    r = team()
    with pytest.raises(ValidationError, match="at most"):
        r.do(ConfigSet, "planner-1", key="lease_duration", value="99999999999999999999")
    r.do(ConfigSet, "planner-1", key="lease_duration", value="600")
    assert r.board.config.lease_duration == 600


def test_text_that_is_not_utf8_is_refused() -> None:
    r = team()
    with pytest.raises(ValidationError, match="not valid UTF-8"):
        r.do(Add, "planner-1", task="task-9", description="bad\udcff")
