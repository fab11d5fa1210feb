"""Each static invariant of blackboard-schema.md is reported when a board breaks it."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from gitliza.core.board import Board
from gitliza.core.invariants import check_board
from gitliza.core.model import Agent, Anomaly, Task
from gitliza.core.states import AgentState, Role
from tests.core.boards import S, board_in, team

NOW = "2025-01-17T15:00:00Z"


def _with(board: Board, *entities: Any) -> Board:
    changes: dict[tuple[str, str], Any] = {}
    for e in entities:
        if isinstance(e, Task):
            changes[("tasks", e.id)] = e
        elif isinstance(e, Agent):
            changes[("agents", e.id)] = e
        else:
            changes[("anomalies", "x1")] = e
    return board.with_changes(changes)


def _task(state: S, **kw: Any) -> Task:
    base = dict(id="t-1", description="d", status=state, created="2025-01-17T14:00:00Z",
                spec_ref="s", done_when="w")
    base.update(kw)
    return Task(**base)  # type: ignore[arg-type]


CASES = [
    ("DRAFT task cannot have assigned_to", _task(S.DRAFT, assigned_to="coder-1")),
    ("must have done_when", _task(S.UNCLAIMED, done_when=None)),
    ("must have spec_ref", _task(S.UNCLAIMED, spec_ref=None)),
    ("CLAIMED task must have assigned_to", _task(S.CLAIMED, worktree=".worktrees/t-1",
                                                  lease_expires=NOW, base_commit="a" * 40)),
    ("CLAIMED task must have worktree", _task(S.CLAIMED, assigned_to="coder-1",
                                               lease_expires=NOW, base_commit="a" * 40)),
    ("valid lease_expires", _task(S.CLAIMED, assigned_to="coder-1", worktree="w",
                                  lease_expires="tomorrow", base_commit="a" * 40)),
    ("must have base_commit", _task(S.CLAIMED, assigned_to="coder-1", worktree="w",
                                    lease_expires=NOW)),
    ("READY_FOR_REVIEW task must have review_commit", _task(S.READY_FOR_REVIEW)),
    ("REJECTED task must have rejection_reason", _task(S.REJECTED)),
    ("BLOCKED task must have blocked_reason and blocked_questions",
     _task(S.BLOCKED, blocked_reason="x")),
    ("SUPERSEDED task must have superseded_by and rescope_reason", _task(S.SUPERSEDED)),
    ("MERGED task must not have worktree", _task(S.MERGED, worktree=".worktrees/t-1")),
    ("depends_on must reference existing task IDs", _task(S.UNCLAIMED, depends_on=("ghost",))),
    ("integration_fix:true must have prior INTEGRATION_FAILED",
     _task(S.UNCLAIMED, integration_fix=True)),
    ("failed_by list must contain unique agent IDs",
     _task(S.UNCLAIMED, failed_by=("coder-1", "coder-1"))),
    ("Agent WORKING must have task", Agent(id="coder-9", role=Role.CODER,
                                           status=AgentState.WORKING, lease_expires=NOW)),
    ("Agent WORKING must have lease_expires",
     Agent(id="coder-9", role=Role.CODER, status=AgentState.WORKING, current_task="task-1")),
    ("Anomaly type must be one of", Anomaly(timestamp=NOW, type="gremlins", reporter="coder-1")),
    ("requires details.blocker_service",
     Anomaly(timestamp=NOW, type="external_blocker", reporter="coder-1")),
]


@pytest.mark.parametrize("rule,entity", CASES, ids=[c[0][:40] for c in CASES])
def test_each_invariant_is_reported(rule: str, entity: Any) -> None:
    board = _with(team().board, entity)
    problems = [str(p) for p in check_board(board, NOW)]
    assert any(rule in p for p in problems), problems


def test_an_expired_working_lease_is_a_warning_only() -> None:
    # liza-validate.sh: "WARNING: Agent ... has status WORKING but lease expired"; a crashed agent
    # is recovered by the lease rules, the board is not inconsistent.
    agent = Agent(id="coder-9", role=Role.CODER, status=AgentState.WORKING, current_task="task-1",
                  lease_expires="2025-01-17T14:00:00Z")
    found = [p for p in check_board(_with(team().board, agent), NOW)
             if "coder-9" in p.entity and "current_task" not in p.rule]
    assert found and all(p.warning for p in found), found
    assert "lease expired" in str(found[0])


def test_one_coder_on_two_active_tasks_is_a_warning_on_a_live_board() -> None:
    board = _with(_with(team().board, _task(S.CLAIMED, id="task-8", assigned_to="coder-1",
                                            worktree=".worktrees/task-8", base_commit="a" * 40,
                                            lease_expires="2025-01-17T15:00:00Z")),
                  _task(S.READY_FOR_REVIEW, id="task-9", assigned_to="coder-1",
                        review_commit="b" * 40))
    problems = [str(p) for p in check_board(board, NOW) if p.warning]
    assert any("coder-1 is assigned to multiple active tasks" in p for p in problems), problems


def test_a_valid_board_has_no_violations() -> None:
    for state in S:
        r = board_in(state)
        assert check_board(r.board, r.now()) == [], state


def test_circular_dependencies() -> None:
    a = _task(S.UNCLAIMED, id="t-a", depends_on=("t-b",))
    b = _task(S.UNCLAIMED, id="t-b", depends_on=("t-a",))
    problems = [str(p) for p in check_board(_with(team().board, a, b), NOW)]
    assert any("circular" in p and "t-a" in p for p in problems)


def test_claimed_with_unmerged_dependency_and_missing_worktree() -> None:
    r = board_in(S.CLAIMED)
    dep = _task(S.UNCLAIMED, id="t-dep")
    t = replace(r.board.task("task-1"), depends_on=("t-dep",))
    problems = [str(p) for p in check_board(_with(r.board, dep, t), r.now(),
                                            worktree_exists=lambda p: False)]
    assert any("all depends_on tasks in MERGED" in p for p in problems)
    assert any("worktree path must exist" in p for p in problems)


def test_two_agents_on_one_task() -> None:
    r = board_in(S.CLAIMED)
    twin = replace(r.board.agent("coder-1"), id="coder-2")
    problems = [str(p) for p in check_board(_with(r.board, twin), r.now())]
    assert any("No two agents assigned to same task" in p for p in problems)


def test_live_task_stored_in_archive_is_reported() -> None:
    r = board_in(S.UNCLAIMED)
    b = r.board.with_changes({("archive", "task-1"): r.board.task("task-1"),
                              ("tasks", "task-1"): None})
    assert any("archive" in str(p) for p in check_board(b, r.now()))
