"""complete-goal's default summary counts the goal's own merges, not every goal's: the archive
keeps earlier goals' merged tasks, and the count once took them too (`status` of an ended goal
said "3 task(s) merged" for a goal that merged one)."""
from __future__ import annotations

from gitliza.core.ops import Init
from gitliza.core.ops.goal import CompleteGoal
from tests.core.boards import Runner, team
from tests.core.test_fidelity import _merged


def _summary(r: Runner) -> str:
    return r.board.goal.alignment_history[-1].summary


def test_the_default_summary_counts_the_goals_own_merges() -> None:
    r = team()
    _merged(r, "task-1")
    _merged(r, "task-2")
    r.do(CompleteGoal, "planner-1")
    assert _summary(r) == "Goal completed: 2 task(s) merged"
    r.do(Init, "human", goal="Next", goal_id="goal-2", sprint_id="sprint-2")
    _merged(r, "task-3")
    r.do(CompleteGoal, "planner-1")
    assert _summary(r) == "Goal completed: 1 task(s) merged"  # not 3: goal-1's stay out
    r.do(Init, "human", goal="Third", goal_id="goal-3", sprint_id="sprint-3")
    r.do(CompleteGoal, "human")  # an empty goal, which a human may complete
    assert _summary(r) == "Goal completed: 0 task(s) merged"
    r.do(Init, "human", goal="Fourth", goal_id="goal-4", sprint_id="sprint-4")
    r.do(CompleteGoal, "human", summary="said by hand")
    assert _summary(r) == "said by hand"
