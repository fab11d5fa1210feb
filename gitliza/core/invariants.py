"""The static invariants of `blackboard-schema.md` (its `invariants:` list, above the "Transition
invariants" comment) plus the anomaly detail rules and gitliza's own storage rules.

`task_problems` and `agent_problems` look at one entity and are cheap: the write path and replay run
them on every entity a transition touched. `check_board` runs everything, including the relational
and time-dependent rules, for `validate`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Collection, Iterable, Mapping

from gitliza.core.quorum import required, room
from gitliza.core import clock, lockscope
from gitliza.core.presence import placement
from gitliza.core.board import Board
from gitliza.core.ids import is_valid_id, spec_ref_leaves
from gitliza.core.reports.metrics import asked_by
from gitliza.core.model import ANOMALY_REQUIRED, Agent, Anomaly, Task, Usage
from gitliza.core.agents.costs import totals_problems
from gitliza.core.states import TERMINAL, AgentState, Role, TaskState
from gitliza.errors import ValidationError

S = TaskState
LEASE_GRACE_SECONDS = 60


@dataclass(frozen=True, slots=True)
class Violation:
    entity: str  # e.g. "task task-3", "agent coder-1"
    rule: str
    # A warning, not a broken board: liza-validate.sh only warns of a WORKING agent whose lease
    # expired (a crashed agent, which the lease rules recover from).
    warning: bool = False

    def __str__(self) -> str:
        return f"{self.entity}: {self.rule}"


def task_problems(t: Task, *, archived: bool | None = None) -> list[str]:
    p: list[str] = []
    st = t.status
    if not is_valid_id(t.id):
        p.append("id is not kebab-case")
    if st == S.DRAFT and t.assigned_to:
        p.append("DRAFT task cannot have assigned_to")
    if st not in (S.DRAFT, S.SUPERSEDED, S.ABANDONED):
        if not t.done_when:
            p.append("Non-DRAFT task (except SUPERSEDED, ABANDONED) must have done_when")
        if not t.spec_ref:
            p.append("Non-DRAFT task (except SUPERSEDED, ABANDONED) must have spec_ref")
    leaves = spec_ref_leaves(t.spec_ref) if t.spec_ref else None
    if leaves:  # any status: a DRAFT keeps its path until finalized
        p.append(leaves)
    if st == S.CLAIMED:
        if not t.assigned_to:
            p.append("CLAIMED task must have assigned_to")
        if not t.worktree:
            p.append("CLAIMED task must have worktree")
        if not _valid_ts(t.lease_expires):
            p.append("CLAIMED task must have valid lease_expires")
        if not t.base_commit and not t.integration_fix:
            p.append("CLAIMED task must have base_commit (except integration_fix tasks)")
    if st == S.READY_FOR_REVIEW and not t.review_commit:
        p.append("READY_FOR_REVIEW task must have review_commit")
    if st == S.REJECTED and not t.rejection_reason:
        p.append("REJECTED task must have rejection_reason")
    if st == S.BLOCKED and not (t.blocked_reason and t.blocked_questions):
        p.append("BLOCKED task must have blocked_reason and blocked_questions")
    if st == S.SUPERSEDED and not (t.superseded_by and t.rescope_reason):
        p.append("SUPERSEDED task must have superseded_by and rescope_reason")
    if st == S.MERGED and t.worktree:
        p.append("MERGED task must not have worktree")
    if t.integration_fix and not any(h.event == "integration_failed" for h in t.history):
        p.append("Task with integration_fix:true must have prior INTEGRATION_FAILED in history")
    if len(set(t.failed_by)) != len(t.failed_by):
        p.append("Task failed_by list must contain unique agent IDs")
    if t.id in t.depends_on:
        p.append("depends_on must not create circular dependencies")
    if not 1 <= t.priority <= 5:
        p.append("priority must be 1 to 5")
    if t.reviewing_by and st != S.READY_FOR_REVIEW:
        p.append("reviewing_by is only set on READY_FOR_REVIEW tasks")
    if t.co_reviews and st != S.READY_FOR_REVIEW:
        p.append("co_reviews are only held on READY_FOR_REVIEW tasks")
    if archived is not None and archived != (st in TERMINAL):
        p.append("terminal tasks are stored in archive/, live ones in tasks/")
    if t.lock_scope:
        try:
            if lockscope.check_scope(t.lock_scope) != t.lock_scope:
                p.append("lock_scope must be stored checked (no duplicates, no trailing /)")
        except ValidationError as e:
            p.append(str(e))
    return p


def agent_problems(a: Agent) -> list[str]:
    p: list[str] = []
    if not is_valid_id(a.id):
        p.append("id is not kebab-case")
    if a.status == AgentState.WORKING and not a.current_task:
        p.append("Agent WORKING must have task")
    if a.status in (AgentState.WORKING, AgentState.WAITING) and a.role != Role.CODER:
        p.append(f"only coders can be {a.status}")
    if a.status == AgentState.REVIEWING and a.role != Role.CODE_REVIEWER:
        p.append("only code reviewers can be REVIEWING")
    return p


def anomaly_problems(an: Anomaly) -> list[str]:
    required = ANOMALY_REQUIRED.get(an.type)
    if required is None:
        return ["Anomaly type must be one of: " + ", ".join(ANOMALY_REQUIRED)]
    have = {k for k, _ in an.details}
    return [f"anomaly {an.type} requires details.{f}" for f in required if f not in have]


def _valid_ts(v: str | None) -> bool:
    try:
        return v is not None and bool(clock.check_ts(v))
    except Exception:
        return False


def find_cycle(graph: dict[str, tuple[str, ...]]) -> list[str] | None:
    """A dependency cycle as a list of ids (first == last), or None. Iterative DFS."""
    WHITE, GREY, BLACK = 0, 1, 2
    color = {n: WHITE for n in graph}
    for root in graph:
        if color[root] != WHITE:
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        path: list[str] = [root]
        color[root] = GREY
        while stack:
            node, i = stack[-1]
            deps = graph.get(node, ())
            if i < len(deps):
                stack[-1] = (node, i + 1)
                nxt = deps[i]
                if color.get(nxt, BLACK) == GREY:
                    return path[path.index(nxt):] + [nxt]
                if color.get(nxt) == WHITE:
                    color[nxt] = GREY
                    stack.append((nxt, 0))
                    path.append(nxt)
            else:
                color[node] = BLACK
                stack.pop()
                path.pop()
    return None


def check_board(board: Board, now: str,
                worktree_exists: Callable[[str], bool] | None = None,
                held_here: Callable[[str], bool] | None = None) -> list[Violation]:
    """Every static invariant of one state. `worktree_exists` (the shell's disk check) enables
    "CLAIMED task worktree path must exist", for the tasks `held_here` (by task id) says this
    machine holds (all of them when it is None): another machine's worktree is not on this disk."""
    out: list[Violation] = []
    live = {t.id: t for t in board.tasks()}
    archived = {t.id: t for t in board.values("archive")}
    tasks = {**archived, **live}
    for tid in set(live) & set(archived):
        out.append(Violation(f"task {tid}", "stored both live and in archive/"))
    for coll, group in (("tasks", live), ("archive", archived)):
        for t in group.values():
            out += [Violation(f"task {t.id}", r) for r in task_problems(t, archived=coll == "archive")]
    for t in tasks.values():
        for dep in t.depends_on:
            if dep not in tasks:
                out.append(Violation(f"task {t.id}", f"depends_on must reference existing task "
                                     f"IDs ({dep} does not exist)"))
        if t.status == S.CLAIMED:
            pending = [d for d in t.depends_on if d in tasks and tasks[d].status != S.MERGED]
            if pending:
                out.append(Violation(f"task {t.id}", "CLAIMED task must have all depends_on tasks "
                                     f"in MERGED status ({', '.join(pending)})"))
            if worktree_exists is not None and t.worktree and (
                    held_here is None or held_here(t.id)) and not worktree_exists(t.worktree):
                out.append(Violation(f"task {t.id}", "CLAIMED task worktree path must exist "
                                     f"({t.worktree})"))
            if t.assigned_to and board.agent(t.assigned_to) is None:
                out.append(Violation(f"task {t.id}", f"assigned_to {t.assigned_to} is not an agent"))
    active: dict[str, str] = {}
    for t in sorted(live.values(), key=lambda t: t.id):
        if t.assigned_to and t.status in (S.CLAIMED, S.READY_FOR_REVIEW, S.REJECTED):
            # liza-validate.sh refuses this (and so do `validate FILE` and `import`); on a live
            # board gitliza's claim rules decide who may hold what, so it is a warning here.
            if t.assigned_to in active:
                out.append(Violation(f"task {t.id}", f"agent {t.assigned_to} is assigned to "
                                     f"multiple active tasks ({active[t.assigned_to]} and {t.id})",
                                     warning=True))
            active.setdefault(t.assigned_to, t.id)
    out += lock_problems(list(live.values()))
    cycle = find_cycle({t.id: t.depends_on for t in tasks.values()})
    if cycle:
        out.append(Violation(f"task {cycle[0]}", "depends_on must not create circular "
                             f"dependencies ({' -> '.join(cycle)})"))
    grace = clock.plus(now, -LEASE_GRACE_SECONDS)
    holders: dict[tuple[Role, str], list[str]] = {}
    for a in board.agents():
        out += [Violation(f"agent {a.id}", r) for r in agent_problems(a)]
        if a.status == AgentState.WORKING and a.lease_expires is None:
            out.append(Violation(f"agent {a.id}", "Agent WORKING must have lease_expires"))
        elif a.status == AgentState.WORKING and a.lease_expires is not None \
                and a.lease_expires <= grace:
            out.append(Violation(f"agent {a.id}", "has status WORKING but its lease expired at "
                                 f"{a.lease_expires} (a crashed agent, or a long operation)",
                                 warning=True))
        if a.current_task and a.status in (AgentState.WORKING, AgentState.REVIEWING,
                                           AgentState.WAITING):
            holders.setdefault((a.role, a.current_task), []).append(a.id)
            if a.current_task not in tasks:
                out.append(Violation(f"agent {a.id}", f"current_task {a.current_task} does not exist"))
    out += holder_problems(board, tasks, holders)
    for key in board.keys("anomalies"):
        an = board.get("anomalies", key)
        if an is None:
            continue
        out += [Violation(f"anomaly {key}", r) for r in anomaly_problems(an)]
    for key in board.keys("usage"):
        u = board.get("usage", key)
        if u is not None:
            out += [Violation(f"usage {key}", r) for r in usage_problems(u)]
    if board.keys("usage_totals") or board.keys("usage"):
        out += [Violation("usage", r) for r in totals_problems(board)]
    return out


def holder_problems(board: Board, tasks: Mapping[str, Task],
                    holders: Mapping[tuple[Role, str], list[str]]) -> list[Violation]:
    """Who may hold one task at once: one agent of each role, but under a review
    quorum (core/quorum.py) up to `required` code reviewers review one commit side by side, so
    what is illegal is named: two coders (or planners) on one task, a reviewer on its own task,
    more reviewers than the quorum allows."""
    out: list[Violation] = []
    for (role, tid), ids in sorted(holders.items()):
        task = tasks.get(tid)
        if role == Role.CODE_REVIEWER and task is not None:
            own = [i for i in ids if i == task.assigned_to]
            out += [Violation(f"agent {i}", f"a reviewer on its own task ({i} wrote {tid})")
                    for i in own]
            need = required(board.config, task)
            if len(ids) > need:
                out.append(Violation(f"agent {ids[-1]}", f"{len(ids)} reviewers on {tid} "
                                     f"({', '.join(ids)}) but its review_quorum is {need}"))
        elif len(ids) > 1:
            out.append(Violation(f"agent {ids[-1]}", f"No two agents assigned to same task "
                                 f"(two {role.value}s: {' and '.join(ids)} on {tid})"))
    return out


def lock_problems(tasks: list[Task]) -> list[Violation]:
    """Two tasks in flight whose lock scopes overlap (core/lockscope.py): what no op may make."""
    out: list[Violation] = []
    locked = sorted((t for t in tasks if t.lock_scope and t.status in lockscope.IN_FLIGHT),
                    key=lambda t: t.id)
    for i, t in enumerate(locked):
        hit = lockscope.holder(locked[i + 1:], t.id, t.lock_scope)
        if hit is not None:
            out.append(Violation(f"task {t.id}", f"lock scope overlaps that of {hit[0]}, both "
                                 f"in flight ({hit[2]} and {hit[1]})"))
    return out


def lock_waits(board: Board) -> dict[str, str]:
    """Task id -> the id of the task in flight whose lock scope it waits for, for every task
    that could start but for a held lock (DRAFT, UNCLAIMED, BLOCKED)."""
    tasks = list(board.tasks())
    locked = [t for t in tasks if t.lock_scope and t.status in lockscope.IN_FLIGHT]
    out: dict[str, str] = {}
    if not locked:
        return out
    for t in tasks:
        if t.lock_scope and t.status not in lockscope.IN_FLIGHT:
            hit = lockscope.holder(locked, t.id, t.lock_scope)
            if hit is not None:
                out[t.id] = hit[0]
    return out


def claimable(board: Board, now: str, coder: str | None = None,
              expired: Collection[str] | None = None) -> list[Task]:
    """Claimable tasks, best first (priority, then age). The spec's rule: UNCLAIMED, REJECTED or
    INTEGRATION_FAILED with every dependency MERGED; gitliza adds CLAIMED tasks whose lease
    expired, and leaves out tasks `coder` already failed. `expired`: the CLAIMED tasks whose lease
    expired for the observer (core/presence/leasemarks.py, what a claim judges); None: by `now` against
    the recorded expiry (what views show)."""
    out = []
    tasks = list(board.tasks())
    locked = [t for t in tasks if t.lock_scope and t.status in lockscope.IN_FLIGHT]
    for t in tasks:
        if not is_claimable(board, t, now, coder, expired):
            continue
        if t.lock_scope and t.status not in lockscope.IN_FLIGHT and \
                lockscope.holder(locked, t.id, t.lock_scope) is not None:
            continue  # its lock scope is held (Claim refuses it too)
        out.append(t)
    # Within a priority, the coder who asked the human about a task gets it back first.
    out.sort(key=lambda t: (t.priority, coder is None or asked_by(t) != coder, t.created, t.id))
    return out


def reassigned_to(t: Task) -> str | None:
    """The coder the human reassigned `t` to (`git liza reassign`), while the task waits for
    that coder's claim; None once it claimed it, or when the task was not reassigned."""
    if t.status in (S.UNCLAIMED, S.REJECTED, S.INTEGRATION_FAILED) and t.history and \
            t.history[-1].event == "reassigned":
        return t.assigned_to
    return None


def is_claimable(board: Board, t: Task, now: str, coder: str | None = None,
                 expired: Collection[str] | None = None) -> bool:
    ok_state = t.status in (S.UNCLAIMED, S.REJECTED, S.INTEGRATION_FAILED) or (
        t.status == S.CLAIMED and (not (t.lease_expires and t.lease_expires > now)
                                   if expired is None else t.id in expired))
    if not ok_state or (coder is not None and coder in t.failed_by):
        return False
    if coder is not None and not placement.may_take(board, coder, t):
        return False  # its machine is drained, or lacks a label the task needs (Claim refuses)
    chosen = reassigned_to(t)
    if coder is not None and chosen not in (None, coder) and board.agent(chosen) is not None:
        return False  # the human gave it to another coder (Claim refuses it too)
    if coder is not None and t.status in (S.REJECTED, S.INTEGRATION_FAILED) and \
            t.assigned_to not in (None, coder):
        # Kept for its coder while that coder waits to re-claim it (the spec's supervisor
        # re-claims a rejected task for the original coder); another coder can still take it by
        # naming it, which counts the first one as failed.
        holder = board.agent(t.assigned_to)
        if holder is not None and holder.current_task == t.id and holder.status == "WAITING":
            return False
    return all((d := board.task(dep)) is not None and d.status == S.MERGED
               for dep in t.depends_on)


def reviewable(board: Board, now: str, reviewer: str | None = None) -> list[Task]:
    """READY_FOR_REVIEW tasks with no live review lease, oldest submission first."""
    if reviewer is not None and placement.drained_machine(board, reviewer) is not None:
        return []  # a drained machine's reviewer takes no new review (ClaimReview refuses)
    out = [t for t in board.tasks() if t.status == S.READY_FOR_REVIEW
           and (not (t.reviewing_by and t.review_lease_expires and t.review_lease_expires > now)
                or reviewer is not None and room(board.config, t, reviewer))
           and t.assigned_to != reviewer
           # Issue 40: one vote per reviewer and review commit (the quorum wants others).
           and not any(v.agent == reviewer and v.commit == t.review_commit
                       for v in t.review_votes)]
    out.sort(key=lambda t: (t.priority, t.history[-1].time if t.history else t.created, t.id))
    return out


def usage_problems(u: Usage) -> list[str]:
    """A run's usage: counts that cannot be negative, cached input that is part of the input,
    a cost with its source."""
    p = [f"{n} must not be negative" for n in ("input_tokens", "output_tokens", "cached_tokens",
                                                "duration") if getattr(u, n) < 0]
    if u.cached_tokens > u.input_tokens:
        p.append("cached_tokens must not exceed input_tokens")
    if (u.cost_micro_usd is None) != (u.cost_source is None):
        p.append("cost_micro_usd and cost_source go together")
    if u.cost_micro_usd is not None and u.cost_micro_usd < 0:
        p.append("cost_micro_usd must not be negative")
    return p


def problems_of_change(board: Board, keys: Iterable[tuple[str, str]]) -> list[Violation]:
    """The per-entity invariants of what a transition wrote (cheap; used on every write)."""
    out: list[Violation] = []
    for coll, key in keys:
        v = board.get(coll, key)
        if v is None:
            continue
        if coll in ("tasks", "archive"):
            out += [Violation(f"task {key}", r) for r in task_problems(v, archived=coll == "archive")]
        elif coll == "agents":
            out += [Violation(f"agent {key}", r) for r in agent_problems(v)]
        elif coll == "anomalies":
            out += [Violation(f"anomaly {key}", r) for r in anomaly_problems(v)]
        elif coll == "usage":
            out += [Violation(f"usage {key}", r) for r in usage_problems(v)]
    return out
