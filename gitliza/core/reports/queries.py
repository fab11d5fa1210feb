"""Questions about a board that several callers ask (commands, the supervisor, prompt builders).

Pure: a board in, plain values out; nothing here reads the clock or git.
"""
from __future__ import annotations

from gitliza.core.board import Board
from gitliza.core.model import HumanNote, Task
from gitliza.core.states import TERMINAL


def all_tasks_terminal(board: Board) -> bool:
    """Whether every task of the board is MERGED, ABANDONED or SUPERSEDED (vacuously true with no
    task): the condition for `complete-goal`. Terminal tasks live under archive/, so only the live
    collection is read."""
    return all(t.status in TERMINAL for t in board.tasks())


def of_current_goal(board: Board, t: Task) -> bool:
    """Whether task `t` belongs to the board's current goal. A task records no goal: a new goal
    starts with no live task (`init` refuses one), so every live task is the current goal's, and an
    archived one is if it was added after the goal started. A task added in the very second of the
    `init` counts if it moved later; an earlier goal's task, terminal before that `init`, never
    does (its last move is at or before it)."""
    if t.status not in TERMINAL:
        return True
    started = board.goal.created
    if t.created != started:
        return t.created > started
    return max((h.time for h in t.history), default=t.created) > started


def goal_tasks(board: Board) -> list[Task]:
    """The current goal's tasks, live and archived (earlier goals' archived tasks left out)."""
    return [t for t in board.all_tasks() if of_current_goal(board, t)]


def goal_has_tasks(board: Board) -> bool:
    """Whether the current goal has any task yet (cheap when a task is live)."""
    return any(True for _ in board.tasks()) or \
        any(of_current_goal(board, t) for t in board.values("archive"))


def notes_for(board: Board, task_id: str) -> list[HumanNote]:
    """The human notes addressed to `task_id` (`note --for TASK`), oldest first: what an agent must
    read before it starts on the task (task-lifecycle.md, "Read `human_notes` if present"). Journal
    keys start with the note's time, so key order is chronological; the timestamp sort makes that
    explicit and keeps notes of the same second in key order."""
    notes = [n for n in board.values("human_notes") if n.for_task == task_id]
    return sorted(notes, key=lambda n: n.timestamp)


def why_nothing_ready(board: Board, kind: str) -> str:
    """Why `ready` lists nothing (`kind`: claimable or reviewable): where the live tasks are, so an
    empty list is never only a header. E.g. "nothing claimable: 2 DRAFT (`git liza finalize
    TASK` makes one UNCLAIMED), 1 UNCLAIMED waiting on its dependencies (t2 on t1)"."""
    from gitliza.core.states import TaskState as S
    live = list(board.tasks())
    if not live:
        return f"nothing {kind}: the board has no live task (`git liza add` adds one)"
    counts: dict[str, int] = {}
    waiting: list[str] = []
    for t in live:
        unmet = [d for d in t.depends_on
                 if (dep := board.task(d)) is None or dep.status != S.MERGED]
        if t.status in (S.UNCLAIMED, S.REJECTED, S.INTEGRATION_FAILED) and unmet:
            waiting.append(f"{t.id} on {', '.join(unmet)}")
            continue
        counts[t.status.value] = counts.get(t.status.value, 0) + 1
    parts = []
    for status, n in sorted(counts.items()):
        extra = {"DRAFT": " (`git liza finalize TASK` makes one UNCLAIMED)",
                 "CLAIMED": " (held under a lease)",
                 "READY_FOR_REVIEW": " (reviewed by a code_reviewer: `git liza claim-review`)"
                 if kind == "claimable" else " (each under a live review lease, or yours)",
                 }.get(status, "")
        parts.append(f"{n} {status}{extra}")
    if waiting:
        parts.append(f"{len(waiting)} waiting on dependencies not MERGED yet ({'; '.join(waiting[:3])}"
                     + (" ..." if len(waiting) > 3 else "") + ")")
    return f"nothing {kind}: " + ", ".join(parts)
