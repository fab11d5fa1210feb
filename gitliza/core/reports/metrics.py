"""Sprint metrics, derived from the tasks (their status and history), never stored.

The definitions are the original's (update-sprint-metrics.sh, sprint-governance.md): done counts
MERGED, ABANDONED and SUPERSEDED; in progress CLAIMED, READY_FOR_REVIEW, REJECTED and APPROVED;
blocked BLOCKED and INTEGRATION_FAILED; `iterations_total` sums the tasks' `iteration` and
`review_cycles_total` their `review_cycles_total`; the approval rates are whole percents rounded
down. A board outlives its goals: a task that was already terminal when the sprint started belongs
to an earlier sprint and is not counted (the original starts each goal on a fresh state.yaml).
"""
from __future__ import annotations

from typing import Iterable

from gitliza.core.model import Metrics, Task
from gitliza.core.states import TERMINAL, TaskState

S = TaskState
DONE = frozenset({S.MERGED, S.ABANDONED, S.SUPERSEDED})
IN_PROGRESS = frozenset({S.CLAIMED, S.READY_FOR_REVIEW, S.REJECTED, S.APPROVED})
BLOCKED = frozenset({S.BLOCKED, S.INTEGRATION_FAILED})
# The review quality warning (update-sprint-metrics.sh): more than 95 % approvals over 5 or more.
RUBBER_STAMP_MIN_REVIEWS = 5
RUBBER_STAMP_PERCENT = 95


def _pct(num: int, den: int) -> int | None:
    return num * 100 // den if den else None


def ended_before(t: Task, since: str) -> bool:
    """True when `t` was terminal before `since` (its last history entry is the terminal one)."""
    return t.status in TERMINAL and bool(t.history) and t.history[-1].time < since


def compute(tasks: Iterable[Task], since: str | None = None, until: str | None = None, *,
            sprint_started: str | None = None) -> Metrics:
    """The metrics of the tasks of the sprint that started at `sprint_started` (tasks terminal
    before it are an earlier sprint's); with `since`/`until`, the event counts (verdicts,
    submissions) only count history entries in [since, until): one sprint's share of a board
    that spans several (`sprint_metrics`)."""
    done = in_progress = blocked = iterations = cycles = 0
    approvals = rejections = submitted = 0
    for t in tasks:
        if sprint_started is not None and ended_before(t, sprint_started):
            continue
        done += t.status in DONE
        in_progress += t.status in IN_PROGRESS
        blocked += t.status in BLOCKED
        iterations += t.iteration or 0
        cycles += t.review_cycles_total
        for h in t.history:
            if (since is not None and h.time < since) or (until is not None and h.time >= until):
                continue
            ev = h.event
            approvals += ev == "approved"
            rejections += ev == "rejected"
            submitted += ev == "ready_for_review"
    verdicts = approvals + rejections
    return Metrics(
        tasks_done=done, tasks_in_progress=in_progress, tasks_blocked=blocked,
        iterations_total=iterations, review_cycles_total=cycles,
        review_verdict_approvals=approvals, review_verdict_rejections=rejections,
        review_verdict_count=verdicts,
        review_verdict_approval_rate_percent=_pct(approvals, verdicts),
        task_submitted_for_review_count=submitted,
        task_outcome_approval_rate_percent=_pct(approvals, submitted),
    )


def rubber_stamp_warning(m: Metrics) -> str | None:
    """The original's review quality warning, or None."""
    rate = m.review_verdict_approval_rate_percent
    if m.review_verdict_count >= RUBBER_STAMP_MIN_REVIEWS and rate is not None \
            and rate > RUBBER_STAMP_PERCENT:
        return (f"WARNING: high approval rate ({rate}% over {m.review_verdict_count} reviews): "
                "the code reviewer may be rubber-stamping; spot-check recently merged tasks")
    return None


AWAITING_NOTE = "awaiting human"  # the note of a `block --for-human` history entry (ops/blocking)


def asked_by(t: Task) -> str | None:
    """The coder whose question for the human (`block --for-human`) the human answered last,
    while the task waits for a coder again: the claim prefers it (it has the context), and the
    question was no failure of its. None for any other task."""
    if t.status != TaskState.UNCLAIMED or len(t.history) < 2 or t.history[-1].event != "unblocked":
        return None
    asked = t.history[-2]
    return asked.agent if asked.event == "blocked" and asked.note == AWAITING_NOTE else None


def human_wait(tasks: Iterable[Task], now: str, since: str | None = None) -> tuple[int, int, int]:
    """(seconds, questions, still open): the time tasks spent BLOCKED on questions for the human,
    from each `block --for-human` to the next event of the task (the answer), or to `now` for one
    still waiting; `since`: only blocks from then on (the sprint's start)."""
    from gitliza.core import clock
    total = asked = open_ = 0
    for t in tasks:
        h = t.history
        for i, entry in enumerate(h):
            if entry.event != "blocked" or entry.note != AWAITING_NOTE:
                continue
            if since is not None and entry.time < since:
                continue
            asked += 1
            end = h[i + 1].time if i + 1 < len(h) else now
            open_ += i + 1 == len(h)
            total += max(0, clock.to_epoch(end) - clock.to_epoch(entry.time))
    return total, asked, open_
