"""Moving a task to BLOCKED because work on it failed: the coders who failed it (`failed_by`),
hypothesis exhaustion when two distinct coders did, and the anomaly an automatic block records.
Shared by the coder ops (claim, block: work.py) and the verdict (review deadlock: review.py)."""
from __future__ import annotations

from gitliza.core.board import journal_key
# The note of a "blocked" history entry whose questions are the human's: what the time waiting
# for the human is measured from (core/reports/metrics.py human_wait).
from gitliza.core.reports.metrics import AWAITING_NOTE
from gitliza.core.model import Anomaly, Task
from gitliza.core.ops.base import Ctx, replace
from gitliza.core.states import TaskState

S = TaskState


def add_anomaly(ctx: Ctx, type_: str, task: str | None, **details: str | int | bool) -> None:
    # Canonical order like `anomaly` (the details every such entry ever had were already sorted,
    # so this changes no existing bytes; it keeps doctor's legacy check free of false alarms).
    # Imported here, not at the top, for start-up only: an op that records no anomaly (a claim,
    # a verdict) then never loads the journal ops.
    from gitliza.core.ops.journal import canonical_details

    entry = Anomaly(timestamp=ctx.op.time, type=type_, reporter=ctx.op.actor, task=task,
                    details=canonical_details(tuple(details.items())))
    ctx.put("anomalies", journal_key(entry, ctx.op.time), entry)


def with_failed(task: Task, coder: str | None) -> tuple[str, ...]:
    if coder is None or coder in task.failed_by:
        return task.failed_by
    return task.failed_by + (coder,)



def answer_note(ctx: Ctx, task: str, answer: str) -> None:
    """The human's answer to a blocked task's questions, as a human note for the task (what the
    next agent's briefing shows), in the same transition as the unblock."""
    from gitliza.core.model import HumanNote
    from gitliza.core.ops.journal import _append  # lazily, as add_anomaly: few ops answer

    _append(ctx, "human_notes", HumanNote(timestamp=ctx.op.time, message=f"answer to the blocked "
                                          f"questions: {answer}", for_task=task,
                                          author=ctx.op.actor), True)


def block_fields(ctx: Ctx, t: Task, reason: str, questions: tuple[str, ...],
                 failed_by: tuple[str, ...], for_human: bool = False) -> Task:
    """Move `t` to BLOCKED; two distinct failed coders make it hypothesis exhaustion."""
    if len(failed_by) >= 2 and len(t.failed_by) < 2:
        add_anomaly(ctx, "hypothesis_exhaustion", t.id, coders=", ".join(failed_by))
        reason = f"Two coders failed ({', '.join(failed_by)}): hypothesis exhaustion. {reason}"
        questions = questions + ("Should the task be rescoped or split?",)
    blocked: Task = replace(
        t, status=S.BLOCKED, blocked_reason=reason, blocked_questions=questions[:3],
        failed_by=failed_by, lease_expires=None, reviewing_by=None, review_lease_expires=None,
        awaiting_human=for_human,
        history=ctx.history(t, "blocked", agent=ctx.op.actor, reason=reason,
                            **({"note": AWAITING_NOTE} if for_human else {})))
    return blocked
