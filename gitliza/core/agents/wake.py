"""When a supervisor has work, and when it must look again: pure functions of the board.

The reference's supervisor (`liza-agent.sh`) polls `state.yaml` with `yq` every 30-60 s for these
questions; gitliza's supervisor asks them once per board change (see git/refwatch.py) and sleeps
until the next change or until `next_deadline`, the only time-based event (a lease expiring makes
its task claimable or reviewable again).

Planner wake triggers, in the reference's order of precedence (liza-prompt-builders.sh):
INITIAL_PLANNING (the current goal has no task yet), BLOCKED_TASKS, INTEGRATION_FAILED, HYPOTHESIS_EXHAUSTED,
IMMEDIATE_DISCOVERY (urgency immediate, not converted to a task yet). Unlike the reference, a task
that two coders failed is counted as HYPOTHESIS_EXHAUSTED only (not also as BLOCKED_TASKS), so that
trigger can be the one reported; and only live tasks count, so a retired task wakes no one.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Collection, Iterable

from gitliza.core.quorum import required, review_lease, votes_of
from gitliza.core import mergequeue
from gitliza.core.reports import queries
from gitliza.core.board import Board
from gitliza.core.invariants import claimable, reviewable
from gitliza.core.model import Discovery, GoalStatus, SprintStatus, Task
from gitliza.core.agents.costs import goal_over_budget
from gitliza.core.states import TERMINAL, AgentState, Role, TaskState

S = TaskState


class WakeTrigger(StrEnum):
    INITIAL_PLANNING = "INITIAL_PLANNING"
    BLOCKED_TASKS = "BLOCKED_TASKS"
    INTEGRATION_FAILED = "INTEGRATION_FAILED"
    HYPOTHESIS_EXHAUSTED = "HYPOTHESIS_EXHAUSTED"
    IMMEDIATE_DISCOVERY = "IMMEDIATE_DISCOVERY"


class Hold(StrEnum):
    """Why a supervisor must not start an agent now (strongest first)."""

    ABORT = "ABORT"
    PAUSE = "PAUSE"
    CHECKPOINT = "CHECKPOINT"
    BUDGET = "BUDGET"  # the goal's token or dollar budget is spent (gitliza/core/agents/costs.py)


ROLE_ALIASES = {"planner": Role.PLANNER, "coder": Role.CODER, "code-reviewer": Role.CODE_REVIEWER,
                "code_reviewer": Role.CODE_REVIEWER, "reviewer": Role.CODE_REVIEWER}


def parse_role(text: str) -> Role | None:
    """`planner`, `coder`, `code-reviewer` (also `code_reviewer`, `reviewer`, any case)."""
    return ROLE_ALIASES.get(text.strip().lower().replace(" ", "-"))


@dataclass(frozen=True, slots=True)
class SprintState:
    """The counts the planner prompt shows (tooling.md "Agent Session Start")."""

    total: int = 0
    merged: int = 0
    in_progress: int = 0
    unclaimed: int = 0
    blocked: int = 0
    integration_failed: int = 0
    hypothesis_exhausted: int = 0
    immediate_discoveries: int = 0
    # BLOCKED on a question for the human (AWAITING HUMAN): the human's to answer, not the
    # planner's, so not counted as blocked.
    awaiting_human: tuple[str, ...] = ()


def exhausted(t: Task) -> bool:
    return t.status == S.BLOCKED and len(t.failed_by) >= 2


def awaiting(t: Task) -> bool:
    """BLOCKED on the human's answer: it wakes no planner (only the human's unblock moves it)."""
    return t.status == S.BLOCKED and t.awaiting_human and not exhausted(t)


def open_immediate(board: Board) -> list[Discovery]:
    return [d for d in board.values("discovered")
            if d.urgency == "immediate" and d.converted_to_task is None]


def sprint_state(board: Board) -> SprintState:
    live = list(board.tasks())
    archived = [t for t in board.values("archive") if queries.of_current_goal(board, t)]
    total = len(live) + len(archived)
    n = {s: 0 for s in S}
    for t in live:
        n[t.status] += 1
    merged = sum(1 for t in archived if t.status == S.MERGED)
    hyp = sum(1 for t in live if exhausted(t))
    asked = tuple(t.id for t in live if awaiting(t))
    return SprintState(
        total=total, merged=merged,
        in_progress=n[S.CLAIMED] + n[S.READY_FOR_REVIEW] + n[S.APPROVED] + n[S.REJECTED],
        unclaimed=n[S.UNCLAIMED], blocked=n[S.BLOCKED] - hyp - len(asked),
        integration_failed=n[S.INTEGRATION_FAILED], hypothesis_exhausted=hyp,
        immediate_discoveries=len(open_immediate(board)), awaiting_human=asked)


def planner_triggers(board: Board) -> list[tuple[WakeTrigger, tuple[str, ...]]]:
    """Every trigger that holds, in precedence order, with the ids that raise it."""
    live = list(board.tasks())
    if not live and not queries.goal_has_tasks(board):  # earlier goals' archive does not count
        return [(WakeTrigger.INITIAL_PLANNING, ())]
    out: list[tuple[WakeTrigger, tuple[str, ...]]] = []
    for trig, ids in (
            (WakeTrigger.BLOCKED_TASKS,
             [t.id for t in live if t.status == S.BLOCKED and not exhausted(t)
              and not awaiting(t)]),
            # A conflict sent back before review (the `conflict` op, which records the tip it
            # met) is its coder's to fix: it wakes no planner.
            (WakeTrigger.INTEGRATION_FAILED,
             [t.id for t in live if t.status == S.INTEGRATION_FAILED and not (
                 t.history and t.history[-1].event == "integration_failed"
                 and t.history[-1].commit is not None)]),
            (WakeTrigger.HYPOTHESIS_EXHAUSTED, [t.id for t in live if exhausted(t)]),
            (WakeTrigger.IMMEDIATE_DISCOVERY, [d.id for d in open_immediate(board)])):
        if ids:
            out.append((trig, tuple(ids)))
    return out


def wake_trigger(board: Board) -> WakeTrigger | None:
    found = planner_triggers(board)
    return found[0][0] if found else None


def all_terminal(board: Board) -> bool:
    """Every task is MERGED, SUPERSEDED or ABANDONED, and the current goal has at least one (a goal
    with no task yet waits for its initial planning instead, whatever earlier goals archived)."""
    return queries.all_tasks_terminal(board) and queries.goal_has_tasks(board)


def approved_by(board: Board, agent: str) -> list[Task]:
    """APPROVED tasks this reviewer approved: its supervisor merges them (the reference's rule)."""
    return sorted((t for t in board.tasks() if t.status == S.APPROVED and t.approved_by == agent),
                  key=lambda t: (t.priority, t.id))


def work_for(board: Board, role: Role, agent: str, now: str,
             expired: Collection[str] | None = None) -> list[str]:
    """What this agent's supervisor could start an agent on now: task ids for a coder (claimable)
    or a reviewer (reviewable, or approved by it and not merged yet), the trigger names for a
    planner. `expired`: the claimed tasks whose lease expired for this observer (claimable's)."""
    if role == Role.CODER:
        ids = [t.id for t in claimable(board, now, agent, expired)]
        me = board.agent(agent)
        if me is not None and me.status in (AgentState.WAITING, AgentState.HANDOFF):
            ids = [i for i in ids if i == me.current_task]  # it may only take its own task back
        return ids
    if role == Role.CODE_REVIEWER:
        # Any reviewer merges the merge queue, whoever approved (core/mergequeue.py).
        return [t.id for t in mergequeue.queue(board)] + \
            [t.id for t in reviewable(board, now, agent)]
    if role == Role.PLANNER:
        return [trig.value for trig, _ in planner_triggers(board)]
    return []


def holder_of(board: Board, agent: str) -> Task | None:
    """The task `agent` is working on or reviewing according to the board, if any."""
    a = board.agent(agent)
    if a is None or a.current_task is None:
        return None
    return board.task(a.current_task)


def lost_reason(board: Board, agent: str, task_id: str, role: Role) -> str | None:
    """Why `agent` no longer holds `task_id` according to the board, or None. The agent's own
    moves (submit, verdict, release, block) are not losses: the session is ending normally."""
    t = board.task(task_id)
    if t is None:
        return f"{task_id} is no longer on the board"
    last = t.history[-1].agent if t.history else None
    if t.status in TERMINAL and last != agent:  # a reviewer's own merge ends its session
        return f"{task_id} is {t.status}"
    if role == Role.CODER:
        if t.assigned_to is not None and t.assigned_to != agent:
            return f"{task_id} was taken over by {t.assigned_to}"
        if t.status in (S.UNCLAIMED, S.BLOCKED) and last != agent:
            return f"{task_id} was moved to {t.status} by {last or 'someone else'}"
    elif role == Role.CODE_REVIEWER:
        if _ended_by_own_verdict(t, agent):
            return None  # a rejection the coder has already taken up is no loss of the reviewer's
        if t.status == S.READY_FOR_REVIEW and review_lease(t, agent) is None:
            votes = votes_of(t)
            if any(v.agent == agent for v in votes):  # its own approval, below the quorum
                return f"vote {len(votes)} of {required(board.config, t)} recorded on {task_id}"
            return f"the review of {task_id} went to {t.reviewing_by or 'nobody'}"
        if t.status in (S.UNCLAIMED, S.BLOCKED, S.CLAIMED) and last != agent:
            return f"{task_id} was moved to {t.status} by {last or 'someone else'}"
    return None


# What a reviewer's own session ends with; its claim-review ("review_claimed") begins one. Its
# own vote below the quorum is said apart (lost_reason's "vote N of M recorded").
_VERDICTS = frozenset({"rejected", "approved", "merged", "integration_failed", "review_released"})


def _ended_by_own_verdict(t: Task, agent: str) -> bool:
    """The reviewer's latest entry in the task's history ended its review (a verdict, a merge):
    what others did after it (the coder claiming the rejected task again, within the same
    second) is the next round, not this session's loss. Its latest entry a claim-review: the
    session it began is the live one."""
    mine = next((h for h in reversed(t.history) if h.agent == agent), None)
    return mine is not None and mine.event in _VERDICTS


def still_holds(board: Board, agent: str, task_id: str, role: Role) -> bool:
    """Whether the agent still holds a lease on the task (worth a heartbeat)."""
    t = board.task(task_id)
    if t is None:
        return False
    if role == Role.CODER:
        return t.status == S.CLAIMED and t.assigned_to == agent
    return t.status == S.READY_FOR_REVIEW and review_lease(t, agent) is not None


def next_deadline(board: Board, now: str, extra: Iterable[str | None] = ()) -> str | None:
    """The earliest lease expiry after `now` (task and review leases, plus `extra` times such as
    the supervisor's own renewal): the one time-based event a waiter must wake up for."""
    times = [t.lease_expires if t.status == S.CLAIMED else t.review_lease_expires
             for t in board.tasks() if t.status in (S.CLAIMED, S.READY_FOR_REVIEW)]
    times += [r.expires for t in board.tasks() for r in t.co_reviews]
    times += extra
    later = [x for x in times if x is not None and x > now]
    return min(later) if later else None


def hold(board: Board, files: Iterable[str] = ()) -> Hold | None:
    """ABORT, PAUSE or CHECKPOINT: from the board (every machine) or the `.liza/` files (this
    machine, the reference's mechanism)."""
    present = set(files)
    c = board.control
    if c.aborted or "ABORT" in present:
        return Hold.ABORT
    if c.paused or "PAUSE" in present:
        return Hold.PAUSE
    if board.sprint.status == SprintStatus.CHECKPOINT or "CHECKPOINT" in present:
        return Hold.CHECKPOINT
    if goal_over_budget(board) is not None:
        return Hold.BUDGET
    return None


def goal_over(board: Board) -> bool:
    return board.goal.status in (GoalStatus.COMPLETED, GoalStatus.ABORTED)
