"""Sprint metrics, derived from the tasks (their status and history), never stored."""
from __future__ import annotations

from typing import Iterable

from gitliza.core.model import Metrics, Task
from gitliza.core.states import TaskState

S = TaskState
IN_PROGRESS = frozenset({S.CLAIMED, S.READY_FOR_REVIEW, S.REJECTED, S.APPROVED,
                         S.INTEGRATION_FAILED})


def _pct(num: int, den: int) -> int | None:
    return round(num * 100 / den) if den else None


def compute(tasks: Iterable[Task], since: str | None = None, until: str | None = None) -> Metrics:
    """The metrics of the tasks; with `since`/`until`, the event counts (iterations, verdicts,
    submissions) only count history entries in [since, until): one sprint's share of a board that
    spans several (`sprint_metrics`)."""
    done = in_progress = blocked = iterations = approvals = rejections = submitted = 0
    for t in tasks:
        done += t.status == S.MERGED
        in_progress += t.status in IN_PROGRESS
        blocked += t.status == S.BLOCKED
        for h in t.history:
            if (since is not None and h.time < since) or (until is not None and h.time >= until):
                continue
            ev = h.event
            iterations += ev in ("claimed", "reclaimed")
            approvals += ev == "approved"
            rejections += ev == "rejected"
            submitted += ev == "ready_for_review"
    verdicts = approvals + rejections
    return Metrics(
        tasks_done=done, tasks_in_progress=in_progress, tasks_blocked=blocked,
        iterations_total=iterations, review_cycles_total=rejections,
        review_verdict_approvals=approvals, review_verdict_rejections=rejections,
        review_verdict_count=verdicts,
        review_verdict_approval_rate_percent=_pct(approvals, verdicts),
        task_submitted_for_review_count=submitted,
        task_outcome_approval_rate_percent=_pct(approvals, submitted),
    )
