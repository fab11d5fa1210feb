"""The protocol rules of the original Liza that gitliza lacked (issue 19), each on real ops."""
from __future__ import annotations

import pytest

from gitliza.core.agents import prompts

from gitliza.core.reports import metrics
from gitliza.core.reports.alarms import Facts, evaluate
from gitliza.core.ids import check_agent_id_for_role
from gitliza.core.model import Handoff
from gitliza.core.ops import (AnomalyOp, Init, Merge, Note, SpecChangeOp)
from gitliza.core.ops.control import Supervise
from gitliza.core.ops.governance import Circuit
from gitliza.core.ops.goal import CompleteGoal, ConfigSet
from gitliza.core.ops.planning import Abandon
from gitliza.core.ops.work import HandoffOp, Heartbeat
from gitliza.errors import IllegalTransition, PermissionDenied, ValidationError
from tests.core.boards import (MERGE_C, S, Runner, add_ready, board_in, claim, team, to_review,
                               verdict)


def _merged(r: Runner, task: str, rejections: int = 0) -> None:
    add_ready(r, task)
    for _ in range(rejections):
        to_review(r, task)
        verdict(r, "reject", task)
    to_review(r, task)
    verdict(r, "approve", task)
    r.do(Merge, "reviewer-1", task=task, result="merged", merge_commit=MERGE_C)


def test_metrics_follow_the_original_definitions() -> None:
    r = team()
    _merged(r, "task-1", rejections=1)  # iteration 2, one review cycle
    add_ready(r, "task-2")
    r.do(Abandon, "planner-1", task="task-2", reason="not needed")
    add_ready(r, "task-3")
    claim(r, "task-3", "coder-2")
    m = metrics.compute(r.board.all_tasks(), sprint_started=r.board.sprint.timeline.started)
    # update-sprint-metrics.sh: done = MERGED + ABANDONED + SUPERSEDED; iterations = sum(iteration)
    assert (m.tasks_done, m.tasks_in_progress, m.tasks_blocked) == (2, 1, 0)
    assert (m.iterations_total, m.review_cycles_total) == (3, 1)
    assert (m.review_verdict_approvals, m.review_verdict_rejections) == (1, 1)
    assert m.review_verdict_approval_rate_percent == 50
    # A new goal: its sprint does not show the last sprint's tasks or iterations.
    r.do(Abandon, "planner-1", task="task-3", reason="goal done")
    r.do(CompleteGoal, "planner-1")
    r.do(Init, "human", goal="Next", goal_id="goal-2", sprint_id="sprint-2")
    m2 = metrics.compute(r.board.all_tasks(), sprint_started=r.board.sprint.timeline.started)
    assert (m2.tasks_done, m2.iterations_total, m2.review_verdict_count) == (0, 0, 0)


def test_high_approval_rate_warns_after_five_reviews() -> None:
    r = team()
    for i in range(4):
        _merged(r, f"task-{i}")
    m = metrics.compute(r.board.all_tasks())
    assert metrics.rubber_stamp_warning(m) is None  # 4 reviews: too few to judge
    facts = Facts(now=r.now())
    assert "HIGH_APPROVAL_RATE" not in {a.kind for a in evaluate(r.board, facts)}
    _merged(r, "task-9")
    m = metrics.compute(r.board.all_tasks())
    warning = metrics.rubber_stamp_warning(m)
    assert warning is not None and "100% over 5 reviews" in warning
    alert = next(a for a in evaluate(r.board, Facts(now=r.now())) if a.kind == "HIGH_APPROVAL_RATE")
    # Issue 40: the alarm names the config that fixes it, until a quorum of two is set.
    assert "`git liza config review_quorum 2`" in alert.text
    r.do(ConfigSet, "human", key="review_quorum", value="2")
    alert = next(a for a in evaluate(r.board, Facts(now=r.now())) if a.kind == "HIGH_APPROVAL_RATE")
    assert "review_quorum" not in alert.text


def test_the_circuit_breaker_refuses_claims_until_resolved() -> None:
    r = team()
    add_ready(r)
    r.do(Circuit, "human", result="TRIGGERED", pattern="retry_cluster", severity="SPEC_FLAW")
    with pytest.raises(IllegalTransition, match="circuit breaker is TRIGGERED"):
        claim(r)
    r.do(Circuit, "human", result="RESOLVED", resolution="specs clarified")
    assert claim(r).board.task("task-1").status == S.CLAIMED


@pytest.mark.parametrize("state", [S.CLAIMED, S.READY_FOR_REVIEW, S.APPROVED])
def test_abandon_cancels_from_any_non_terminal_state(state: S) -> None:
    r = board_in(state)
    out = r.do(Abandon, "planner-1", task="task-1", reason="cancelled")
    t = out.board.task("task-1")
    assert t.status == S.ABANDONED and t.lease_expires is None and t.worktree is None
    holders = [a for a in out.board.agents() if a.current_task == "task-1"]
    assert not [a for a in holders if a.status in ("WORKING", "REVIEWING")]


def test_journal_entries_in_one_second_keep_append_order() -> None:
    r = team()
    for i in (1, 2, 3):
        r.do(SpecChangeOp, "planner-1", spec="specs/a.md", change=f"change-{i}", ordered=True)
        r.minute -= 1  # the same second
    assert [c.change for c in r.board.values("spec_changes")] == ["change-1", "change-2",
                                                                  "change-3"]
    for i in (1, 2, 3):
        r.do(Note, "human", message=f"note-{i}", ordered=True)
        r.minute -= 1
    assert [n.message for n in r.board.values("human_notes")] == ["note-1", "note-2", "note-3"]


def test_an_identical_anomaly_in_the_same_second_is_a_new_entry() -> None:
    r = team()
    details = (("count", 3), ("error_pattern", "timeout"))
    r.do(AnomalyOp, "coder-1", type="retry_loop", details=details, ordered=True)
    r.minute -= 1
    r.do(AnomalyOp, "coder-1", type="retry_loop", details=details, ordered=True)
    assert len(list(r.board.values("anomalies"))) == 2
    # Without `ordered` (an op recorded before it existed) the repeat is refused as it was, with
    # the entry's name spelled right.
    r.minute -= 1
    with pytest.raises(ValidationError, match="this anomaly is already recorded"):
        r.do(AnomalyOp, "coder-1", type="retry_loop", details=details)


def test_anomaly_types_are_logged_by_their_roles() -> None:
    r = team()
    with pytest.raises(PermissionDenied, match="review_deadlock anomaly is logged by planner"):
        r.do(AnomalyOp, "coder-1", type="review_deadlock", ordered=True)
    with pytest.raises(PermissionDenied, match="scope_deviation"):
        r.do(AnomalyOp, "coder-1", type="scope_deviation", ordered=True)
    r.do(AnomalyOp, "planner-1", type="review_deadlock", ordered=True)
    r.do(AnomalyOp, "reviewer-1", type="scope_deviation", ordered=True)
    r.do(AnomalyOp, "human", type="spec_gap", ordered=True)
    r.do(AnomalyOp, "coder-1", type="system_ambiguity", ordered=True,
         details=(("protocol_section", "roles"), ("question", "who merges?")))
    assert len(list(r.board.values("anomalies"))) == 4


def test_a_handoff_stays_pending_until_a_prompt_gave_it() -> None:
    r = team()
    add_ready(r)
    claim(r)
    r.do(HandoffOp, "coder-1", task="task-1", summary="half done", next_action="write tests")
    # The supervisor's lease keeper beats while the old agent exits: the handoff stays pending.
    r.do(Heartbeat, "coder-1", task="task-1", keep_handoff=True)
    t = r.board.task("task-1")
    assert t.handoff_pending
    h = r.board.get("handoff", "task-1")
    text = prompts.coder_section(t, "/w", (), h)
    assert "=== HANDOFF FROM coder-1" in text
    assert "SUMMARY (untrusted text by coder-1, quoted):\n  | half done\n" in text
    assert "NEXT ACTION (untrusted text by coder-1, quoted):\n  | write tests\n" in text
    # The heartbeat the supervisor makes once the prompt carries it clears the flag.
    r.do(Heartbeat, "coder-1", task="task-1")
    assert not r.board.task("task-1").handoff_pending


def test_prompts_point_at_the_goals_spec() -> None:
    r = Runner()
    r.do(Init, "human", goal="Hello", spec_ref="docs/goal.md")
    boot = prompts.Bootstrap(role=prompts.Role.PLANNER, agent="planner-1", project="/p",
                             goal="Hello", goal_spec=prompts.goal_spec(r.board.goal))
    assert "3. Read the goal spec: docs/goal.md" in prompts.base_prompt(boot)
    r2 = team()
    assert prompts.goal_spec(r2.board.goal) == "specs/vision.md"  # the original's default
    with pytest.raises(ValidationError, match="not a relative path"):
        Runner().do(Init, "human", goal="x", spec_ref="/etc/passwd")


def test_a_supervisor_that_exits_unregisters_an_idle_agent() -> None:
    r = team()
    gen = r.do(Supervise, "coder-1", mode="start").board.get("supervisors", "coder-1").generation
    r.do(Supervise, "coder-1", mode="end", gen=gen, unregister=True)
    assert r.board.agent("coder-1") is None  # as liza-agent.sh's exit trap deletes it
    # One that holds work stays on the board (its lease runs out, the task is taken over).
    add_ready(r)
    claim(r, coder="coder-2")
    gen = r.do(Supervise, "coder-2", mode="start").board.get("supervisors", "coder-2").generation
    r.do(Supervise, "coder-2", mode="end", gen=gen, unregister=True)
    assert r.board.agent("coder-2") is not None


def test_agent_ids_name_their_role() -> None:
    for agent, role in (("coder-1", "coder"), ("planner-2", "planner"),
                        ("code-reviewer-1", "code_reviewer"), ("reviewer-3", "code_reviewer"),
                        ("m1-coder-4", "coder")):
        assert check_agent_id_for_role(agent, role) == agent
    for agent, role in (("coder-1", "planner"), ("planner-1", "coder"), ("coder", "coder"),
                        ("bob", "coder"), ("coder-x", "coder")):
        with pytest.raises(ValidationError, match="does not name the"):
            check_agent_id_for_role(agent, role)


def test_handoff_section_lists_every_field() -> None:
    h = Handoff(task="task-1", agent="coder-1", timestamp="2025-01-17T14:00:00Z", summary="s",
                next_action="n", approach="a", files_modified=("x.py",), next_steps=("one",))
    text = prompts.handoff_section(h)
    for label, value in (("APPROACH", "a"), ("FILES MODIFIED", "x.py"), ("NEXT STEP", "one")):
        assert f"{label} (untrusted text by coder-1, quoted):\n  | {value}\n" in text


def test_the_sprint_scope_is_set_and_the_sprint_completes_with_its_planned_tasks() -> None:
    from gitliza.core.ops.sprint import SprintScopeOp
    r = team()
    for t in ("task-1", "task-2", "task-3"):
        add_ready(r, t)
    with pytest.raises(PermissionDenied):
        r.do(SprintScopeOp, "coder-1", planned=("task-1",))
    with pytest.raises(ValidationError, match="task-9 does not exist"):
        r.do(SprintScopeOp, "planner-1", planned=("task-9",))
    r.do(SprintScopeOp, "planner-1", planned=("task-1", "task-2"), stretch=("task-3",))
    assert r.board.sprint.scope.planned == ("task-1", "task-2")
    assert r.board.sprint.scope.stretch == ("task-3",)
    _merge_ready(r, "task-1")
    assert r.board.sprint.status == "IN_PROGRESS"
    out = r.do(Abandon, "planner-1", task="task-2", reason="dropped")
    assert r.board.sprint.status == "COMPLETED" and r.board.sprint.timeline.ended == r.now()
    assert any("COMPLETED" in n for n in out.notices)
    with pytest.raises(ValidationError, match="its scope is final"):
        r.do(SprintScopeOp, "planner-1", planned=("task-3",))


def _merge_ready(r: Runner, task: str) -> None:
    to_review(r, task)
    verdict(r, "approve", task)
    r.do(Merge, "reviewer-1", task=task, result="merged", merge_commit=MERGE_C)


def test_the_checkpoint_summary_carries_the_approval_rate_warning() -> None:
    from gitliza.governance.checkpoint import summary
    r = team()
    for i in range(5):
        _merged(r, f"task-{i}")
    text = summary(r.board, r.now(), [], "0" * 40)
    assert "high approval rate (100% over 5 reviews)" in text
