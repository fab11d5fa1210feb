"""Every legal transition of the table is performed by its op; every other (op, state) pair is
refused with IllegalTransition and changes nothing."""
from __future__ import annotations

from typing import Any, Callable

import pytest

from gitliza.core.ops import (Abandon, Add, Block, CarryApproval, Claim, ClaimReview, ConfigSet,
                              Conflict, Edit, Finalize, Merge, Reassign, Release, Rescope,
                              RootCause, Submit, Unblock, Verdict, apply)
from gitliza.core.ops.forge import HumanReview
from gitliza.core.states import (FORBIDDEN, TASK_TRANSITIONS, TERMINAL, TaskState, Transition,
                                 is_legal)
from gitliza.errors import IllegalTransition, LizaError, PermissionDenied
from tests.core.boards import (BASE, C1, MERGE_C, Runner, S, add_ready, board_in, claim, team,
                               verdict)

# One canonical way to perform each op on task-1, by an actor allowed to.
OPS: dict[str, Callable[[Runner], Any]] = {
    "finalize": lambda r: r.do(Finalize, "planner-1", task="task-1"),
    "edit": lambda r: r.do(Edit, "planner-1", task="task-1", description="refined"),
    "claim": lambda r: claim(r, coder="coder-2"),
    "release": lambda r: r.do(Release, "coder-1", task="task-1"),
    "reassign": lambda r: r.do(Reassign, "human", task="task-1", to="coder-3"),
    "block": lambda r: r.do(Block, "planner-1", task="task-1", reason="r", questions=("q?",)),
    "submit": lambda r: r.do(Submit, "coder-1", task="task-1", commit=C1),
    "claim-review": lambda r: r.do(ClaimReview, "reviewer-2", task="task-1"),
    "verdict": lambda r: r.do(Verdict, "reviewer-1", task="task-1", verdict="approve",
                              commit=C1),
    "merge": lambda r: r.do(Merge, "reviewer-1", task="task-1", result="merged",
                            merge_commit=MERGE_C),
    "conflict": lambda r: r.do(Conflict, "reviewer-2", task="task-1",
                               reason="conflicts in: a.txt", tip=MERGE_C),
    "carry-approval": lambda r: r.do(CarryApproval, "reviewer-2", task="task-1", commit=C1,
                                     approved=C1, onto=MERGE_C),
    "unblock": lambda r: r.do(Unblock, "planner-1", task="task-1"),
    "root-cause": lambda r: r.do(RootCause, "planner-1", task="task-1", note="the spec was vague"),
    "rescope": lambda r: r.do(Rescope, "planner-1", task="task-1", into=("task-9",), reason="r"),
    "abandon": lambda r: r.do(Abandon, "planner-1", task="task-1", reason="r"),
    "human-review": lambda r: r.do(HumanReview, "human", task="task-1", verdict="reject",
                                   commit=C1, review=1, reason="changes requested"),
}


def _perform(tr: Transition) -> TaskState:
    """Apply the op so that the specific row `tr` is exercised; return the resulting state."""
    if tr.source is None:
        r = team()
        if tr.op == "add":
            if tr.target == S.DRAFT:
                r.do(Add, "planner-1", task="task-1", description="d")
            else:
                add_ready(r)
            return r.board.task("task-1").status  # type: ignore[union-attr]
        # rescope successor: created DRAFT
        add_ready(r)
        r.do(Rescope, "planner-1", task="task-1", into=("task-2",), reason="split")
        return r.board.task("task-2").status  # type: ignore[union-attr]
    r = board_in(tr.source)
    special = (tr.op, tr.source, tr.target)
    if special == ("claim", S.CLAIMED, S.CLAIMED):
        r.minute += 10  # the holder's lease (5 min) expires
        claim(r, coder="coder-2")
    elif tr.op == "claim" and tr.target == S.BLOCKED:
        # max_coder_iterations (10): coder-1 comes back until its next claim is one too many. (A
        # takeover is no failure of the previous coder: exhaustion comes from block and verdict.)
        def iteration() -> int:
            return r.board.task("task-1").iteration or 0  # type: ignore[union-attr]
        while iteration() < 10:
            if tr.source == S.CLAIMED:
                r.minute += 10  # its own lease expires: it claims the task again
                claim(r)
                continue
            claim(r)
            r.do(Submit, "coder-1", task="task-1", commit=C1)
            if tr.source == S.REJECTED and iteration() == 10:
                verdict(r, "reject")
            else:
                verdict(r, "approve")
                r.do(Merge, "reviewer-1", task="task-1", result="failed", reason="conflict")
        r.minute += 10
        claim(r)
    elif special == ("verdict", S.READY_FOR_REVIEW, S.REJECTED):
        verdict(r, "reject", reviewer="reviewer-2")
    elif special == ("verdict", S.READY_FOR_REVIEW, S.BLOCKED):
        # max_review_cycles: 5 rejections in a row by one coder
        for _ in range(4):
            verdict(r, "reject")
            claim(r)
            r.do(Submit, "coder-1", task="task-1", commit=C1)
        verdict(r, "reject")
    elif special == ("verdict", S.READY_FOR_REVIEW, S.READY_FOR_REVIEW):
        r.do(ConfigSet, "human", key="review_quorum", value="2")  # one approval of two
        r.do(ClaimReview, "reviewer-2", task="task-1")
        r.do(Verdict, "reviewer-2", task="task-1", verdict="approve", commit=C1, counted=True)
    elif special == ("verdict", S.READY_FOR_REVIEW, S.APPROVED):
        verdict(r, "approve", reviewer="reviewer-2")
    elif tr.op == "human-review" and tr.target != S.REJECTED:  # the human's approval: a vote
        if tr.target == S.READY_FOR_REVIEW:
            r.do(ConfigSet, "human", key="review_quorum", value="2")
        r.do(HumanReview, "human", task="task-1", verdict="approve", commit=C1, review=2)
    elif special == ("merge", S.READY_FOR_REVIEW, S.INTEGRATION_FAILED):  # a forge check
        r.do(ClaimReview, "reviewer-2", task="task-1")
        r.do(Merge, "human", task="task-1", result="failed", reason="forge check 'ci': failure")
        t = r.board.task("task-1")
        assert t is not None and t.reviewing_by is None  # the review ends with it
        assert r.board.agent("reviewer-2").current_task is None  # type: ignore[union-attr]
    elif special == ("merge", S.APPROVED, S.INTEGRATION_FAILED):
        r.do(Merge, "reviewer-1", task="task-1", result="failed", reason="tests fail")
    elif tr.op == "carry-approval":  # an integration fix: approved at C1, failed, fixed at C2
        verdict(r, "approve")
        r.do(Merge, "reviewer-1", task="task-1", result="failed", reason="tests fail")
        claim(r)
        r.do(Submit, "coder-1", task="task-1", commit="c" * 40)
        r.do(CarryApproval, "reviewer-2", task="task-1", commit="c" * 40, approved=C1,
             onto=MERGE_C)
    elif tr.op == "block" and tr.source == S.CLAIMED and tr.target == S.BLOCKED:
        r.do(Block, "coder-1", task="task-1", reason="r", questions=("q?",))
    elif tr.op == "claim" and tr.source == S.REJECTED:
        claim(r)  # same coder: iteration + 1
    elif tr.op == "claim-review":
        r.do(ClaimReview, "reviewer-2", task="task-1")
    elif tr.op == "release" and tr.source != S.CLAIMED:  # the human's: requeue, a review lease
        t = r.board.task("task-1")
        if tr.source == S.READY_FOR_REVIEW and (t is None or not t.reviewing_by):
            r.do(ClaimReview, "reviewer-2", task="task-1")
        if tr.source == S.UNCLAIMED:  # a reassignment taken back
            r.do(Reassign, "human", task="task-1", to="coder-2")
        r.do(Release, "human", task="task-1")
    else:
        OPS[tr.op](r)
    return r.board.task("task-1").status  # type: ignore[union-attr]


@pytest.mark.parametrize("tr", TASK_TRANSITIONS,
                         ids=[f"{t.op}:{t.source}->{t.target}" for t in TASK_TRANSITIONS])
def test_every_legal_transition(tr: Transition) -> None:
    assert _perform(tr) == tr.target


ILLEGAL = [(op, s) for op in OPS for s in TaskState
           if not any(t.op == op and t.source == s for t in TASK_TRANSITIONS)]


@pytest.mark.parametrize("op,state", ILLEGAL, ids=[f"{o}@{s}" for o, s in ILLEGAL])
def test_every_illegal_op_is_refused_and_changes_nothing(op: str, state: TaskState) -> None:
    r = board_in(state)
    before = r.board
    with pytest.raises((IllegalTransition, PermissionDenied)) as exc:
        OPS[op](r)
    assert r.board is before
    if state in TERMINAL:
        assert "terminal" in str(exc.value)


def test_forbidden_pairs_are_not_in_the_table() -> None:
    for (src, dst), why in FORBIDDEN.items():
        assert not is_legal(src, dst), why
    for src in TERMINAL:
        assert not any(t.source == src for t in TASK_TRANSITIONS)


def test_every_state_is_reachable_and_left() -> None:
    targets = {t.target for t in TASK_TRANSITIONS}
    sources = {t.source for t in TASK_TRANSITIONS}
    assert targets == set(TaskState)
    assert sources - {None} == set(TaskState) - TERMINAL


def test_draft_cannot_be_claimed_with_named_reason() -> None:
    r = board_in(S.DRAFT)
    with pytest.raises(IllegalTransition, match="coders cannot claim drafts"):
        claim(r)


@pytest.mark.parametrize("op,actor", [
    ("finalize", "coder-1"), ("claim", "planner-1"), ("claim", "reviewer-1"),
    ("claim-review", "coder-2"), ("verdict", "coder-2"), ("merge", "coder-1"),
    ("abandon", "reviewer-1"),
])
def test_roles_are_enforced(op: str, actor: str) -> None:
    state = {"finalize": S.DRAFT, "claim": S.UNCLAIMED, "claim-review": S.READY_FOR_REVIEW,
             "verdict": S.READY_FOR_REVIEW, "merge": S.APPROVED, "abandon": S.UNCLAIMED}[op]
    r = board_in(state)
    calls: dict[str, Callable[[], Any]] = {
        "finalize": lambda: r.do(Finalize, actor, task="task-1"),
        "claim": lambda: r.do(Claim, actor, task="task-1", worktree=".worktrees/task-1",
                              base_commit=BASE),
        "claim-review": lambda: r.do(ClaimReview, actor, task="task-1"),
        "verdict": lambda: r.do(Verdict, actor, task="task-1", verdict="approve", commit=C1),
        "merge": lambda: r.do(Merge, actor, task="task-1", result="merged",
                              merge_commit=MERGE_C),
        "abandon": lambda: r.do(Abandon, actor, task="task-1", reason="x"),
    }
    with pytest.raises(PermissionDenied):
        calls[op]()


def test_unregistered_actor_is_refused() -> None:
    r = board_in(S.UNCLAIMED)
    with pytest.raises(PermissionDenied, match="not a registered agent"):
        r.do(Claim, "ghost-1", task="task-1", worktree=".worktrees/task-1", base_commit=BASE)


def test_error_is_a_liza_error_with_exit_code_1() -> None:
    r = board_in(S.MERGED)
    with pytest.raises(LizaError) as exc:
        OPS["abandon"](r)
    assert exc.value.exit_code == 1


def test_agent_moves_outside_the_agent_table_are_refused() -> None:
    """A guard on the core itself: an op that would move an agent along a pair the agent table
    (states.AGENT_TRANSITIONS) does not list raises InconsistentState instead of committing."""
    import dataclasses

    from gitliza.core.ops.base import Ctx, Op
    from gitliza.errors import InconsistentState

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Teleport(Op):  # not registered: a stand-in for a buggy op
        NAME = "teleport-test"

        def run(self, ctx: Ctx) -> None:
            me = ctx.require_agent()
            ctx.put_agent(dataclasses.replace(me, status="REVIEWING"))  # type: ignore[arg-type]

    r = board_in(S.CLAIMED)  # coder-1 is WORKING
    with pytest.raises(InconsistentState, match="WORKING -> REVIEWING"):
        apply(r.board, Teleport(actor="coder-1", time=r.now()))
