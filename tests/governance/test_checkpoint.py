"""`git liza checkpoint`: the board's checkpoint op, the sprint summary, per-sprint metrics."""
from __future__ import annotations

import pytest

from gitliza.core.model import SprintStatus
from gitliza.core.ops import Add, Claim, ClaimReview, Init, Submit, Verdict
from gitliza.core.ops.control import Resume
from gitliza.core.ops.goal import AbortGoal
from gitliza.core.ops.planning import Abandon
from gitliza.errors import ValidationError
from gitliza.git.store import Store
from gitliza.governance.checkpoint import open_checkpoint
from gitliza.governance.history import sprint_metrics
from tests.governance.conftest import Team
from tests.cli.test_board import liza


def review(team: Team, task: str, decision: str) -> None:
    team.do("coder-1", Claim, task=task, worktree=f".worktrees/{task}", base_commit="a" * 40)
    team.do("coder-1", Submit, task=task, commit="b" * 40)
    team.do("reviewer-1", ClaimReview, task=task)
    team.do("reviewer-1", Verdict, task=task, verdict=decision, commit="b" * 40,
            reason="needs tests" if decision == "reject" else None)


def test_checkpoint_opens_on_the_board_and_writes_the_summary(team: Team) -> None:
    review(team, "task-1", "reject")
    opened = open_checkpoint(team.human, "end of week")
    board = team.human.board()
    assert board.sprint.status == SprintStatus.CHECKPOINT
    assert board.control.checkpoint_reason == "end of week"
    text = opened.summary.read_text()
    assert opened.summary.name == "sprint_summary.md" and opened.summary.parent.name == ".liza"
    assert "**Sprint:** sprint-1 (CHECKPOINT)" in text
    assert "| In Progress (CLAIMED/READY_FOR_REVIEW/REJECTED) | 1 |" in text
    assert "| review_verdict_count | 1 |" in text
    with pytest.raises(ValidationError, match="a checkpoint opens only"):
        open_checkpoint(team.human, "again")
    team.human.do(Resume, decision="CONTINUE", note="fine")
    board = team.human.board()
    assert board.sprint.status == SprintStatus.IN_PROGRESS
    assert board.control.resume_decision == "CONTINUE"


def test_the_summary_says_what_the_sprint_used(team: Team) -> None:
    from gitliza.core.ops import ConfigSet
    from gitliza.core.ops.usage import RecordUsage
    team.human.do(ConfigSet, key="budget_tokens_per_goal", value="5000")
    team.human.do(ConfigSet, key="prices", value="codex=1/2")
    for n, task in ((1, "task-1"), (2, "task-1"), (3, "task-2")):
        team.do("coder-1", RecordUsage, run_id=f"coder-1.1.{n}", cli="codex", duration=1,
                task=task, input_tokens=1000, output_tokens=500)
    text = open_checkpoint(team.human, "costs").summary.read_text()
    assert "## Usage" in text
    assert "**This sprint:** 3 runs, 4,500 tokens (in 3,000, out 1,500, cached 0), $0.0060" \
        in text
    assert "**Budgets:** tokens per goal 5000" in text
    assert "| coder-1 | 3 | 4,500 | $0.0060 |" in text and "| task-1 | 2 | 3,000 | $0.0040 |" in text


def test_the_cli_command(team: Team) -> None:
    r = liza(team.repo, "checkpoint", "--reason", "look at it", agent=None)
    assert r.returncode == 0, r.stderr
    assert "sprint summary written to" in r.stdout
    r = liza(team.repo, "checkpoint", agent="coder-1")
    assert r.returncode == 1 and r.stderr.count("\n") == 1


def test_metrics_per_sprint_from_the_history(team: Team) -> None:
    review(team, "task-1", "reject")
    for t in ("task-1", "task-2", "task-3"):
        team.do("planner-1", Abandon, task=t, reason="pivot")
    team.do("planner-1", AbortGoal, reason="pivot")
    team.human.do(Init, goal="Second goal", goal_id="goal-2", sprint_id="sprint-2")
    team.do("planner-1", Add, task="task-9", description="x", spec_ref="specs/a.md", done_when="d",
            scope="a", ready=True)
    review(team, "task-9", "approve")
    spans = sprint_metrics(Store.discover(team.repo))
    assert [(s.sprint, s.goal) for s in spans] == [("sprint-1", "goal-1"), ("sprint-2", "goal-2")]
    one, two = spans[0].metrics, spans[1].metrics
    assert (one.review_verdict_rejections, one.review_verdict_approvals) == (1, 0)
    assert (two.review_verdict_rejections, two.review_verdict_approvals) == (0, 1)
    assert spans[0].ended is not None and spans[1].ended is None
    text = open_checkpoint(team.human, "review").summary.read_text()
    assert "| sprint-1 | goal-1 |" in text and "| sprint-2 | goal-2 |" in text


def test_status_shows_the_sprint_metrics(team: Team) -> None:
    review(team, "task-1", "reject")
    review_again = liza(team.repo, "status", agent=None)
    assert review_again.returncode == 0, review_again.stderr
    assert "sprint sprint-1 [IN_PROGRESS]  iterations 1  review cycles 1  verdicts 1 (approved 0%)" \
        "  submitted 1 (outcome approval 0%)" in review_again.stdout
