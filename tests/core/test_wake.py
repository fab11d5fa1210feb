"""Planner wake triggers, work-for-role predicates, the next time-based deadline, holds."""
from __future__ import annotations

from gitliza.core import clock

from gitliza.core.agents import wake

from gitliza.core.reports import queries
from gitliza.core.ops import Block, Claim, ClaimReview, Submit, Unblock, Verdict
from gitliza.core.ops.goal import CompleteGoal, Init
from gitliza.core.ops.planning import Abandon
from gitliza.core.ops.control import AbortOp, Checkpoint, Pause
from gitliza.core.ops.journal import Discover
from gitliza.core.states import Role, TaskState
from gitliza.core.agents.wake import Hold, WakeTrigger
from tests.core.boards import BASE, add_ready, board_in, claim, team, to_review

S = TaskState


def test_initial_planning_only_on_an_empty_board() -> None:
    r = team()
    assert wake.planner_triggers(r.board) == [(WakeTrigger.INITIAL_PLANNING, ())]
    add_ready(r)
    assert wake.planner_triggers(r.board) == [] and wake.wake_trigger(r.board) is None


def test_a_next_goal_starts_with_its_own_initial_planning() -> None:
    """The first goal's archived tasks do not count for the next goal: its planner plans (it was
    completed empty before), and it completes only once a task of its own is terminal."""
    r = board_in(S.MERGED)
    r.do(CompleteGoal, "planner-1")
    assert wake.all_terminal(r.board)  # goal-1's own tasks: its supervisor may complete it
    r.do(Init, "human", goal="Next goal", goal_id="goal-2", sprint_id="sprint-2")
    assert wake.planner_triggers(r.board) == [(WakeTrigger.INITIAL_PLANNING, ())]
    assert not wake.all_terminal(r.board)
    assert wake.sprint_state(r.board).total == 0
    add_ready(r, "task-2")
    assert wake.planner_triggers(r.board) == [] and not wake.all_terminal(r.board)
    r.do(Abandon, "planner-1", task="task-2", reason="not needed")
    assert wake.planner_triggers(r.board) == [] and wake.all_terminal(r.board)
    assert [t.id for t in queries.goal_tasks(r.board)] == ["task-2"]


def test_same_second_init_keeps_goals_apart() -> None:
    """A goal whose whole life falls in the second of the next init (fast scripts) still leaves
    the next goal empty; a task the next goal adds in that second is its own once it moves."""
    r = board_in(S.ABANDONED)
    r.minute -= 1  # the next ops share one timestamp with the abandon
    r.do(CompleteGoal, "planner-1")
    r.minute -= 1
    r.do(Init, "human", goal="Next goal", goal_id="goal-2", sprint_id="sprint-2")
    assert wake.planner_triggers(r.board) == [(WakeTrigger.INITIAL_PLANNING, ())]
    r.minute -= 1
    add_ready(r, "task-2")
    r.do(Abandon, "planner-1", task="task-2", reason="not needed")
    assert [t.id for t in queries.goal_tasks(r.board)] == ["task-2"]
    assert wake.all_terminal(r.board)


def test_triggers_in_reference_precedence() -> None:
    assert wake.wake_trigger(board_in(S.BLOCKED).board) == WakeTrigger.BLOCKED_TASKS
    assert wake.wake_trigger(board_in(S.INTEGRATION_FAILED).board) == \
        WakeTrigger.INTEGRATION_FAILED
    r = board_in(S.INTEGRATION_FAILED)
    r.do(Discover, "coder-1", id="d1", description="x", urgency="immediate")
    r.do(Discover, "coder-1", id="d2", description="y")  # deferred: no trigger
    assert [t for t, _ in wake.planner_triggers(r.board)] == [
        WakeTrigger.INTEGRATION_FAILED, WakeTrigger.IMMEDIATE_DISCOVERY]
    assert wake.planner_triggers(r.board)[1][1] == ("d1",)
    assert wake.sprint_state(r.board).immediate_discoveries == 1


def test_hypothesis_exhausted_is_its_own_trigger() -> None:
    r = team()
    add_ready(r)
    for coder in ("coder-1", "coder-2"):  # two coders fail it: each blocks it
        r.do(Claim, coder, task="task-1", worktree=".worktrees/task-1", base_commit=BASE)
        r.do(Block, coder, task="task-1", reason="stuck", questions=("why?",))
        if coder == "coder-1":
            r.do(Unblock, "planner-1", task="task-1")
    assert r.board.task("task-1").status == S.BLOCKED
    assert wake.wake_trigger(r.board) == WakeTrigger.HYPOTHESIS_EXHAUSTED
    s = wake.sprint_state(r.board)
    assert (s.blocked, s.hypothesis_exhausted) == (0, 1)


def test_work_for_each_role() -> None:
    r = team()
    add_ready(r, "task-1")
    now = r.now()
    assert wake.work_for(r.board, Role.CODER, "coder-1", now) == ["task-1"]
    assert wake.work_for(r.board, Role.CODE_REVIEWER, "reviewer-1", now) == []
    assert wake.work_for(r.board, Role.PLANNER, "planner-1", now) == []
    to_review(r)
    assert wake.work_for(r.board, Role.CODE_REVIEWER, "reviewer-1", r.now()) == ["task-1"]
    approved = board_in(S.APPROVED)
    assert wake.approved_by(approved.board, "reviewer-1")[0].id == "task-1"
    # Any reviewer merges the merge queue, whoever approved (core/mergequeue.py).
    assert wake.work_for(approved.board, Role.CODE_REVIEWER, "reviewer-2",
                         approved.now()) == ["task-1"]
    assert not wake.all_terminal(approved.board)
    assert wake.all_terminal(board_in(S.MERGED).board)


def test_next_deadline_is_the_earliest_lease_after_now() -> None:
    r = board_in(S.CLAIMED)
    t = r.board.task("task-1")
    assert wake.next_deadline(r.board, r.now()) == t.lease_expires
    assert wake.next_deadline(r.board, r.now(), ["2000-01-01T00:00:00Z"]) == t.lease_expires
    assert wake.next_deadline(r.board, t.lease_expires) is None
    early = clock.plus(r.now(), 30)
    assert wake.next_deadline(r.board, r.now(), [early]) == early


def test_hold_from_board_or_files() -> None:
    r = team()
    assert wake.hold(r.board) is None
    assert wake.hold(r.board, {"PAUSE"}) == Hold.PAUSE
    r.do(Checkpoint, "human", reason="look")
    assert wake.hold(r.board) == Hold.CHECKPOINT
    r.do(Pause, "human")
    assert wake.hold(r.board) == Hold.PAUSE
    r.do(AbortOp, "human")
    assert wake.hold(r.board) == Hold.ABORT


def test_parse_role_aliases() -> None:
    assert wake.parse_role("Code Reviewer") == Role.CODE_REVIEWER
    assert wake.parse_role("code_reviewer") == wake.parse_role("reviewer") == Role.CODE_REVIEWER
    assert wake.parse_role("CODER") == Role.CODER and wake.parse_role("boss") is None


def test_a_reviewers_own_merge_is_not_a_loss_but_someone_elses_end_is() -> None:
    merged = board_in(S.MERGED).board  # merged by reviewer-1
    assert wake.lost_reason(merged, "reviewer-1", "task-1", Role.CODE_REVIEWER) is None
    assert wake.lost_reason(merged, "reviewer-2", "task-1", Role.CODE_REVIEWER) == \
        "task-1 is MERGED"
    abandoned = board_in(S.ABANDONED).board  # the planner's move, not the coder's
    assert wake.lost_reason(abandoned, "coder-1", "task-1", Role.CODER) == "task-1 is ABANDONED"


def test_a_reviewers_own_rejection_taken_up_by_the_coder_is_not_a_loss() -> None:
    """The reviewer rejects and the coder claims the task again before the reviewer's agent has
    exited (a full run saw it: the supervisor stopped that agent as "moved to CLAIMED by
    coder-1", and under --once went on to review the fix). Another reviewer's loss is still
    one, and a reviewer whose latest entry is a claim-review is in a live session."""
    r = board_in(S.REJECTED)  # rejected by reviewer-1
    claim(r)
    assert wake.lost_reason(r.board, "reviewer-1", "task-1", Role.CODE_REVIEWER) is None
    assert wake.lost_reason(r.board, "reviewer-2", "task-1", Role.CODE_REVIEWER) == \
        "task-1 was moved to CLAIMED by coder-1"
    r.do(Submit, "coder-1", task="task-1", commit="c" * 40)
    r.do(ClaimReview, "reviewer-2", task="task-1")
    assert wake.lost_reason(r.board, "reviewer-1", "task-1", Role.CODE_REVIEWER) is None
    r.do(Verdict, "reviewer-2", task="task-1", verdict="reject", commit="c" * 40,
         reason="still no tests")
    claim(r)
    r.do(Submit, "coder-1", task="task-1", commit="d" * 40)
    r.do(ClaimReview, "reviewer-1", task="task-1")  # its latest entry: a live session again
    assert wake.lost_reason(r.board, "reviewer-1", "task-1", Role.CODE_REVIEWER) is None
    assert not wake._ended_by_own_verdict(r.board.task("task-1"), "reviewer-1")  # type: ignore[arg-type]
