"""The merge queue (issue 37, docs/locks.md): approval order, integration fixes first, priority
with aging, bounded waits; and the flow figures (conflicts per 10 merged, reviews per merged
task, time in queue)."""
from __future__ import annotations

from gitliza.core import clock, mergequeue

from gitliza.core.agents import wake
from gitliza.core.ops import ClaimReview, Conflict, Merge, Submit, Verdict
from tests.core.boards import C1, MERGE_C, Runner, add_ready, claim, team

TIP = "e" * 40


def approve(r: Runner, tid: str, coder: str) -> None:
    claim(r, tid, coder)
    r.do(Submit, coder, task=tid, commit=C1)
    r.do(ClaimReview, "reviewer-1", task=tid)
    r.do(Verdict, "reviewer-1", task=tid, verdict="approve", commit=C1)


def test_approval_order_with_priority_aging_and_fixes_first() -> None:
    r = team()
    for tid, pri in (("a", 3), ("b", 3), ("c", 1), ("d", 5)):
        add_ready(r, tid, priority=pri)
    approve(r, "a", "coder-1")
    approve(r, "b", "coder-2")
    assert [t.id for t in mergequeue.queue(r.board)] == ["a", "b"]  # approval order
    r.minute += 30  # c is approved 30+ minutes after b: its priority no longer jumps b
    approve(r, "c", "coder-3")
    assert [t.id for t in mergequeue.queue(r.board)] == ["a", "b", "c"]
    approve(r, "d", "coder-1")  # right after c, lowest priority: behind it
    assert [t.id for t in mergequeue.queue(r.board)] == ["a", "b", "c", "d"]
    # An integration fix goes ahead of tasks approved shortly before it...
    r.do(Conflict, "reviewer-1", task="d", reason="conflicts in: x", tip=TIP)
    claim(r, "d", "coder-1")
    r.do(Submit, "coder-1", task="d", commit=C1)
    r.do(ClaimReview, "reviewer-1", task="d")
    r.do(Verdict, "reviewer-1", task="d", verdict="approve", commit=C1)
    # (d re-approved 9 minutes after c: its 30-minute fix bonus puts it ahead of c, not of a
    # and b, approved 40 minutes before it.)
    assert [t.id for t in mergequeue.queue(r.board)] == ["a", "b", "d", "c"]
    # Every task that goes ahead of another was approved at most the bounded window after it.
    window = 4 * mergequeue.AGING_STEP + mergequeue.FIX_BONUS
    q = mergequeue.queue(r.board)
    for i, t in enumerate(q):
        for u in q[:i]:
            assert clock.to_epoch(mergequeue.approved_at(u)) <= \
                clock.to_epoch(mergequeue.approved_at(t)) + window


def test_any_reviewer_merges_the_queue() -> None:
    r = team()
    add_ready(r, "a")
    approve(r, "a", "coder-1")
    assert wake.work_for(r.board, wake.Role.CODE_REVIEWER, "reviewer-2", r.now()) == ["a"]


def test_flow_figures() -> None:
    r = team()
    add_ready(r, "a")
    add_ready(r, "b")
    approve(r, "a", "coder-1")
    r.minute += 2
    r.do(Merge, "reviewer-1", task="a", result="merged", merge_commit=MERGE_C)
    approve(r, "b", "coder-2")
    r.do(Conflict, "reviewer-1", task="b", reason="conflicts in: x", tip=TIP)
    # A conflict sent back is the coder's to fix: it wakes no planner.
    assert wake.planner_triggers(r.board) == []
    approve(r, "b", "coder-2")
    r.do(Merge, "reviewer-1", task="b", result="merged", merge_commit=MERGE_C)
    f = mergequeue.figures(r.board, r.now())
    assert f["merged"] == 2
    assert f["conflicts_per_10_merged"] == 5.0  # 1 conflict, 2 merged
    assert f["reviews_per_merged"] == 1.5  # 3 verdicts
    assert f["queue_seconds_max"] == 180 and f["queued"] == 0
    assert "conflicts 5.0 per 10 merged" in mergequeue.figures_line(f)
