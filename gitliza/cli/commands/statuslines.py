"""The lines `status` and `show` print beside their tables: a task's review quorum and votes,
the merge queue, lock-scope waits, the sprint's figures and the control flags (PAUSED, ABORTED,
CHECKPOINT). Split from view.py, which runs the commands, so each stays one screenful."""
from __future__ import annotations

from typing import Any

from gitliza.core import mergequeue
from gitliza.core.board import Board
from gitliza.core.model import Metrics, Task
from gitliza.core.states import TaskState


def show_votes(out: Any, board: Board, t: Task) -> None:
    from gitliza.core import quorum
    out.line(f"  review quorum: {quorum.tally(board.config, t)}")
    for v in t.review_votes:
        by = " ".join(x for x in (v.cli, v.model) if x)
        out.line(f"    {v.time}  {v.agent} approved {v.commit[:12]}" + (f"  ({by})" if by else ""))
        for e in v.evidence:
            digest = f"  {e.digest}" if e.digest else ""
            out.line(f"      criterion {e.criterion}: {e.kind} {e.ref}{digest}")


def status_cell(board: Board, t: Task) -> str:
    """The task's state; a review under a quorum shows its approvals so far (`1/2`)."""
    if t.status is not TaskState.READY_FOR_REVIEW:  # most rows: the board's config not read
        return t.status.value
    cfg = board.config
    if not (t.review_votes or cfg.review_quorum > 1 or cfg.quorum_rules):
        return t.status.value
    from gitliza.core import quorum  # only then: status loads what it shows
    votes = quorum.votes_of(t)
    return f"{t.status.value} {len(votes)}/{quorum.required(cfg, t)}"


def queue_line(board: Board) -> str:
    """The merge queue, next first (core/mergequeue.py)."""
    q = mergequeue.queue(board)
    return "merge queue: " + (", ".join(t.id + (" (fix)" if t.integration_fix else "")
                                        for t in q) if q else "empty")


def invariants_mod() -> Any:
    from gitliza.core import invariants
    return invariants


def lock_waits(board: Board, tasks: list[Task]) -> dict[str, str]:
    """invariants.lock_waits; a board whose live `tasks` hold no lock scope waits for none, and
    `status` then does not load the invariants (lock scopes are seldom used)."""
    if not any(t.lock_scope for t in tasks):
        return {}
    waits: dict[str, str] = invariants_mod().lock_waits(board)
    return waits


def lock_lines(board: Board) -> list[str]:
    """One line per task that waits only for a lock scope held by a task in flight."""
    return [f"{tid} waits for the lock scope of {holder} (in flight)"
            for tid, holder in sorted(invariants_mod().lock_waits(board).items())]


def ready_lines(board: Board, kind: str, now: str, agent: str) -> list[str]:
    """`ready`'s lines under its table: lock scopes a claimable task waits for, tasks waiting
    for a label no live machine offers, and the asker's own drained machine (core/presence/hosts.py)."""
    from gitliza.core.presence.hosts import label_lines
    return (lock_lines(board) if kind == "claimable" else []) + label_lines(board, now, agent)


def sprint_line(board: Board, m: Metrics) -> str:
    """sprint.metrics of the schema, computed from the tasks (never a stale stored copy)."""
    def pct(v: int | None) -> str:
        return "n/a" if v is None else f"{v}%"
    sp = board.sprint
    return (f"sprint {sp.id} [{sp.status}]  iterations {m.iterations_total}  review cycles "
            f"{m.review_cycles_total}  verdicts {m.review_verdict_count} (approved "
            f"{pct(m.review_verdict_approval_rate_percent)})  submitted "
            f"{m.task_submitted_for_review_count} (outcome approval "
            f"{pct(m.task_outcome_approval_rate_percent)})")


def control_lines(board: Board) -> list[str]:
    """PAUSED / ABORTED / CHECKPOINT, when set (the board's record, not the local files)."""
    c, lines = board.control, []
    if c.aborted:
        lines.append(f"ABORTED by {c.aborted_by} at {c.aborted_at}"
                     + (f": {c.abort_reason}" if c.abort_reason else ""))
    if c.paused:
        lines.append(f"PAUSED by {c.paused_by} at {c.paused_at}"
                     + (f": {c.pause_reason}" if c.pause_reason else ""))
    if board.sprint.status == "CHECKPOINT":
        lines.append(f"CHECKPOINT ({c.checkpoint_trigger or 'manual'}) by {c.checkpoint_by} at "
                     f"{board.sprint.timeline.checkpoint_at}"
                     + (f": {c.checkpoint_reason}" if c.checkpoint_reason else ""))
    return lines
