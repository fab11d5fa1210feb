"""The merge queue (docs/locks.md): the order in which approved tasks are merged into the
integration branch, derived from the board (no queue table: a task is queued while APPROVED).

Order: by rank, the time of the task's (latest) approval, moved earlier by `AGING_STEP` seconds
per priority level above the lowest, and by `FIX_BONUS` for an integration fix. A task approved
at T is therefore passed only by tasks approved before T + 4 * AGING_STEP + FIX_BONUS (a
bounded window), so no approved task waits more than the number of approvals in that window
plus those before it: nothing starves, unlike a newest-first or pure-priority queue.
"""
from __future__ import annotations

from gitliza.core import clock
from gitliza.core.board import Board
from gitliza.core.forgerules import forge_merges, waits_for_checks
from gitliza.core.model import Task
from gitliza.core.states import TaskState

AGING_STEP = 300  # seconds of approval age one priority level is worth
FIX_BONUS = 1800  # seconds an integration fix goes ahead (it was approved before, and overtaken)


def approved_at(t: Task) -> str:
    """When `t` was last approved (its creation when the history has no approval)."""
    for h in reversed(t.history):
        if h.event in ("approved", "approval_carried"):
            return h.time
    return t.created


def rank(t: Task) -> str:
    shift = (5 - t.priority) * AGING_STEP + (FIX_BONUS if t.integration_fix else 0)
    return clock.plus(approved_at(t), -shift)


def queue(board: Board) -> list[Task]:
    """The APPROVED tasks, the next to merge first; a task whose forge checks are required and
    have not passed on its approved commit waits out of it (core/forgerules.py); with forge_merge on
    the queue is empty: the forge merges."""
    config = board.config
    if forge_merges(config):  # the forge merges, the bridge records it: no second merge here
        return []
    return sorted((t for t in board.tasks() if t.status == TaskState.APPROVED
                   and not waits_for_checks(config, t)), key=lambda t: (rank(t), t.id))


def waited(t: Task, now: str) -> int:
    """Seconds `t` has been in the queue."""
    return max(0, clock.to_epoch(now) - clock.to_epoch(approved_at(t)))


def figures(board: Board, now: str) -> dict[str, float | int | None]:
    """The flow figures of the board: integration conflicts per 10 merged tasks,
    reviews (verdicts) spent per merged task, and time in the merge queue (seconds: the mean
    and the longest of the merged tasks, and the longest wait of a task still queued)."""
    merged = conflicts = verdicts = 0
    queue_times: list[int] = []
    for t in list(board.tasks()) + list(board.values("archive")):
        approved = None
        for h in t.history:
            if h.event == "integration_failed":
                conflicts += 1
            elif h.event in ("approved", "rejected"):
                verdicts += 1
                approved = h.time if h.event == "approved" else approved
            elif h.event == "approval_carried":
                approved = h.time
            elif h.event == "merged" and approved is not None:
                queue_times.append(max(0, clock.to_epoch(h.time) - clock.to_epoch(approved)))
        if t.status == TaskState.MERGED:
            merged += 1
    waiting = [waited(t, now) for t in queue(board)]
    return {
        "merged": merged,
        "conflicts_per_10_merged": round(10 * conflicts / merged, 1) if merged else None,
        "reviews_per_merged": round(verdicts / merged, 2) if merged else None,
        "queue_seconds_mean": round(sum(queue_times) / len(queue_times)) if queue_times else None,
        "queue_seconds_max": max(queue_times) if queue_times else None,
        "queued": len(waiting),
        "queue_wait_seconds_max": max(waiting) if waiting else None,
    }


def figures_line(f: dict[str, float | int | None]) -> str:
    """`figures` as the one line `status` and the sprint summary show."""
    def shown(v: float | int | None, unit: str = "") -> str:
        return "n/a" if v is None else f"{v}{unit}"
    return (f"flow: conflicts {shown(f['conflicts_per_10_merged'])} per 10 merged, reviews "
            f"{shown(f['reviews_per_merged'])} per merged task, time in merge queue mean "
            f"{shown(f['queue_seconds_mean'], 's')} max {shown(f['queue_seconds_max'], 's')}, "
            f"{f['queued']} queued")
