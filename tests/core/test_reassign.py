"""The human's `reassign TASK --to CODER` (issue 27): the task waits for that coder's claim, the
holder loses it, nobody else may take it meanwhile, and everyone else trying it (a coder, a
planner) or naming a wrong target is refused with the board unchanged."""
from __future__ import annotations

import pytest

from gitliza.core.invariants import check_board, claimable
from gitliza.core.ops import Block, Heartbeat, Reassign, Release, Submit, Unblock
from gitliza.core.states import TERMINAL
from gitliza.errors import (IllegalTransition, LeaseLost, LizaError, NotFound, PermissionDenied,
                            ValidationError)
from tests.core.boards import BASE, C1, S, Runner, add_ready, board_in, claim, verdict


def reassign(r: Runner, to: str, actor: str = "human", task: str = "task-1") -> object:
    return r.do(Reassign, actor, task=task, to=to)


def test_a_claimed_task_goes_to_the_chosen_coder_and_its_holder_stands_down() -> None:
    r = board_in(S.CLAIMED)
    out = reassign(r, "coder-2")
    t = r.board.task("task-1")
    assert t is not None and (t.status, t.assigned_to, t.lease_expires) == \
        (S.UNCLAIMED, "coder-2", None)
    assert t.base_commit == BASE and t.worktree == ".worktrees/task-1"  # its branch continues
    assert (t.history[-1].event, t.history[-1].agent, t.history[-1].note) == \
        ("reassigned", "coder-2", "from coder-1")
    old, new = r.board.agent("coder-1"), r.board.agent("coder-2")
    assert old is not None and (old.status, old.current_task) == ("IDLE", None)
    assert new is not None and (new.status, new.current_task) == ("WAITING", "task-1")
    assert out.notices == ("coder-1 lost task-1 to coder-2: it must stand down",)  # type: ignore[attr-defined]
    assert out.event.actor == "human" and out.event.op == "reassign"  # type: ignore[attr-defined]
    # The old holder's next move tells it to stand down; its work cannot land.
    with pytest.raises(LeaseLost):
        r.do(Heartbeat, "coder-1", task="task-1")
    with pytest.raises(LizaError):
        r.do(Submit, "coder-1", task="task-1", commit=C1)
    # Nobody else may claim it while coder-2 has not: not offered, and refused when named.
    assert [t.id for t in claimable(r.board, r.now(), "coder-3")] == []
    assert [t.id for t in claimable(r.board, r.now(), "coder-2")] == ["task-1"]
    before = r.board
    with pytest.raises(PermissionDenied, match="reassigned to coder-2 by the human"):
        claim(r, coder="coder-3")
    with pytest.raises(PermissionDenied):
        claim(r, coder="coder-1")
    assert r.board is before
    # coder-2's claim: a lease of its own, iteration 1, and coder-1 not counted as failed.
    claim(r, coder="coder-2")
    t = r.board.task("task-1")
    assert t is not None and (t.status, t.assigned_to, t.iteration, t.failed_by) == \
        (S.CLAIMED, "coder-2", 1, ())
    assert t.lease_expires is not None and t.lease_expires > r.now()
    assert [v for v in check_board(r.board, r.now()) if not v.warning] == []


def test_a_rejected_task_goes_to_another_coder_with_the_whole_review_budget() -> None:
    r = board_in(S.REJECTED)
    t0 = r.board.task("task-1")
    assert t0 is not None and t0.review_cycles_current == 1
    reassign(r, "coder-2")
    t = r.board.task("task-1")
    assert t is not None and (t.status, t.assigned_to, t.review_cycles_current,
                              t.review_cycles_total) == (S.REJECTED, "coder-2", 0, 1)
    old = r.board.agent("coder-1")
    assert old is not None and (old.status, old.current_task) == ("IDLE", None)
    claim(r, coder="coder-2")
    t = r.board.task("task-1")
    assert t is not None and (t.status, t.iteration) == (S.CLAIMED, 1)


def test_an_open_task_is_earmarked_and_the_human_may_change_its_mind() -> None:
    r = board_in(S.UNCLAIMED)
    reassign(r, "coder-2")
    reassign(r, "coder-3")
    t = r.board.task("task-1")
    assert t is not None and t.assigned_to == "coder-3"
    two, three = r.board.agent("coder-2"), r.board.agent("coder-3")
    assert two is not None and two.status == "IDLE" and two.current_task is None
    assert three is not None and (three.status, three.current_task) == ("WAITING", "task-1")
    # The human takes it back: any coder may claim it again, coder-3 is free.
    r.do(Release, "human", task="task-1")
    t = r.board.task("task-1")
    three = r.board.agent("coder-3")
    assert t is not None and (t.status, t.assigned_to) == (S.UNCLAIMED, None)
    assert three is not None and (three.status, three.current_task) == ("IDLE", None)
    assert [x.id for x in claimable(r.board, r.now(), "coder-1")] == ["task-1"]
    before = r.board
    with pytest.raises(ValidationError, match="nobody holds it"):
        r.do(Release, "human", task="task-1")  # nothing left to release
    assert r.board is before
    with pytest.raises(PermissionDenied):
        r.do(Release, "coder-1", task="task-1")  # a coder's release is of its own claim
    claim(r, coder="coder-1")


def _refused(r: Runner, exc: type[Exception], match: str, to: str, actor: str = "human",
             task: str = "task-1") -> None:
    before = r.board
    with pytest.raises(exc, match=match):
        reassign(r, to, actor, task)
    assert r.board is before  # nothing changed


@pytest.mark.parametrize("actor", ["coder-1", "coder-2", "planner-1", "reviewer-1"])
def test_only_the_human_reassigns(actor: str) -> None:
    r = board_in(S.CLAIMED)
    # The holder taking its task back for itself, another coder grabbing it, the planner.
    _refused(r, PermissionDenied, "allowed: human", "coder-2" if actor != "coder-2" else actor,
             actor)


def test_bad_targets_are_refused_and_change_nothing() -> None:
    r = board_in(S.CLAIMED)
    _refused(r, ValidationError, "planner-1 is a planner", "planner-1")
    _refused(r, ValidationError, "reviewer-1 is a code_reviewer", "reviewer-1")
    _refused(r, NotFound, "no agent 'ghost'", "ghost")
    _refused(r, NotFound, "no agent 'human'", "human")
    _refused(r, ValidationError, "already coder-1's", "coder-1")
    _refused(r, NotFound, "no agent", "../coder-2")


def test_a_busy_coder_or_one_that_failed_the_task_is_refused() -> None:
    r = board_in(S.CLAIMED)
    add_ready(r, "task-2")
    claim(r, "task-2", "coder-2")  # coder-2 works on task-2 with a live lease
    _refused(r, ValidationError, "coder-2 is WORKING on task-2", "coder-2")
    r.do(Submit, "coder-2", task="task-2", commit=C1)  # coder-2 waits for its review
    _refused(r, ValidationError, "coder-2 is WAITING on task-2", "coder-2")
    # A coder that failed the task (its own block counts it as failed; unblocking keeps that).
    r2 = board_in(S.CLAIMED)
    r2.do(Block, "coder-1", task="task-1", reason="spec gap", questions=("which one?",))
    r2.do(Unblock, "planner-1", task="task-1")
    _refused(r2, ValidationError, "coder-1 already failed task-1", "coder-1")


def test_a_coder_whose_claim_was_taken_over_did_not_fail_it_and_may_get_it_back() -> None:
    """Issue 38: an expired lease (a crash, a kill) is a fault, not a failure."""
    r = board_in(S.CLAIMED)
    r.minute += 10
    claim(r, coder="coder-2")
    assert r.board.task("task-1").failed_by == ()
    r.do(Reassign, "human", task="task-1", to="coder-1")
    assert r.board.task("task-1").assigned_to == "coder-1"


def test_a_task_waiting_for_its_dependencies_is_refused() -> None:
    r = board_in(S.UNCLAIMED)
    add_ready(r, "task-2", depends_on=("task-1",))
    _refused(r, ValidationError, "waits for task-1 to be MERGED", "coder-2", task="task-2")


@pytest.mark.parametrize("state", [S.DRAFT, S.READY_FOR_REVIEW, S.APPROVED, S.BLOCKED,
                                   S.MERGED, S.ABANDONED])
def test_states_without_a_row_are_refused(state: S) -> None:
    r = board_in(state)
    _refused(r, IllegalTransition, "reassign applies to CLAIMED, UNCLAIMED, REJECTED, "
             "INTEGRATION_FAILED" if state not in TERMINAL else "terminal", "coder-3")


def test_a_reviewer_verdict_after_reassign_is_unaffected() -> None:
    """A rejected task reassigned, then claimed, submitted and reviewed again: the new coder's
    work is judged as a fresh round."""
    r = board_in(S.REJECTED)
    reassign(r, "coder-2")
    claim(r, coder="coder-2")
    r.do(Submit, "coder-2", task="task-1", commit=C1)
    verdict(r, "approve")
    t = r.board.task("task-1")
    assert t is not None and (t.status, t.assigned_to) == (S.APPROVED, "coder-2")
