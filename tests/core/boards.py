"""Build boards in any task state by applying real ops (no hand-made entities)."""
from __future__ import annotations

from typing import Any, Callable

from gitliza.core import clock
from gitliza.core.board import Board
from gitliza.core.ops import (Add, Claim, ClaimReview, Init, Merge, Register, Submit, Verdict,
                              apply)
from gitliza.core.ops.base import Op
from gitliza.core.ops.planning import Abandon, Rescope
from gitliza.core.ops.work import Block
from gitliza.core.states import TaskState

T0 = "2025-01-17T14:00:00Z"
BASE = "a" * 40
C1 = "b" * 40
MERGE_C = "d" * 40
S = TaskState


def at(minutes: int) -> str:
    return clock.plus(T0, minutes * 60)


class Runner:
    """Applies ops in sequence, advancing a fake clock one minute per op."""

    def __init__(self) -> None:
        self.board = Board()
        self.minute = 0

    def now(self) -> str:
        return at(self.minute)

    def do(self, cls: type[Op], actor: str, **args: Any) -> Any:
        self.minute += 1
        out = apply(self.board, cls(actor=actor, time=self.now(), **args))
        self.board = out.board
        return out


def team() -> Runner:
    r = Runner()
    r.do(Init, "human", goal="Retry logic")
    for agent, role in [("planner-1", "planner"), ("coder-1", "coder"), ("coder-2", "coder"),
                        ("coder-3", "coder"), ("reviewer-1", "code_reviewer"),
                        ("reviewer-2", "code_reviewer")]:
        r.do(Register, "human", agent=agent, role=role)
    return r


def add_ready(r: Runner, task: str = "task-1", **kw: Any) -> None:
    r.do(Add, "planner-1", task=task, description="do it", spec_ref="specs/a.md",
         done_when="it works", scope="api", ready=True, **kw)


def claim(r: Runner, task: str = "task-1", coder: str = "coder-1") -> Any:
    """A claim as gitliza makes it now (a takeover is no failure of the previous coder)."""
    return r.do(Claim, coder, task=task, worktree=f".worktrees/{task}", base_commit=BASE,
                forgive_faults=True)


def to_review(r: Runner, task: str = "task-1", coder: str = "coder-1",
              commit: str = C1) -> None:
    claim(r, task, coder)
    r.do(Submit, coder, task=task, commit=commit)


def verdict(r: Runner, decision: str, task: str = "task-1", reviewer: str = "reviewer-1",
            commit: str = C1, reason: str | None = "needs tests") -> Any:
    r.do(ClaimReview, reviewer, task=task)
    return r.do(Verdict, reviewer, task=task, verdict=decision, commit=commit,
                reason=reason if decision == "reject" else None)


def _draft(r: Runner) -> None:
    r.do(Add, "planner-1", task="task-1", description="do it", spec_ref="specs/a.md",
         done_when="it works", scope="api")


def _approved(r: Runner) -> None:
    add_ready(r)
    to_review(r)
    verdict(r, "approve")


BUILDERS: dict[TaskState, Callable[[Runner], None]] = {
    S.DRAFT: _draft,
    S.UNCLAIMED: add_ready,
    S.CLAIMED: lambda r: (add_ready(r), claim(r)) and None,
    S.READY_FOR_REVIEW: lambda r: (add_ready(r), to_review(r)) and None,
    S.REJECTED: lambda r: (add_ready(r), to_review(r), verdict(r, "reject")) and None,
    S.APPROVED: _approved,
    S.BLOCKED: lambda r: (add_ready(r), claim(r),
                          r.do(Block, "coder-1", task="task-1", reason="spec gap",
                               questions=("which API?",))) and None,
    S.INTEGRATION_FAILED: lambda r: (_approved(r), r.do(
        Merge, "reviewer-1", task="task-1", result="failed", reason="conflict in a.py")) and None,
    S.MERGED: lambda r: (_approved(r), r.do(Merge, "reviewer-1", task="task-1", result="merged",
                                            merge_commit=MERGE_C)) and None,
    S.SUPERSEDED: lambda r: (add_ready(r), r.do(Rescope, "planner-1", task="task-1",
                                                into=("task-1a",), reason="too big")) and None,
    S.ABANDONED: lambda r: (add_ready(r), r.do(Abandon, "planner-1", task="task-1",
                                               reason="not needed")) and None,
}


def board_in(state: TaskState) -> Runner:
    r = team()
    BUILDERS[state](r)
    t = r.board.task("task-1")
    assert t is not None and t.status == state, (state, t and t.status)
    return r
