"""Issue 49 through the real CLI: the newest features as a person uses them. Co-reviews under a
quorum are legal (validate, watch, the webhook); the invariant still names what is illegal."""
from __future__ import annotations

from pathlib import Path

from gitliza.core import clock
from gitliza.core.board import Board
from gitliza.core.invariants import check_board
from gitliza.core.ops import ConfigSet
from gitliza.services.api import Liza
from tests.governance.receiver import Receiver
from tests.services.test_lifecycle import (claimed, commit_file, ok, run, setup_board)


def _two_reviewers_on_t1(repo: Path) -> None:
    setup_board(repo, tasks=("t1",))
    ok(repo, "config", "review_quorum", "2")
    wt = Path(claimed(repo, "t1", "c1")["worktree"])
    commit_file(wt, "a.txt", "a\n")
    ok(repo, "submit", "t1", agent="c1")
    ok(repo, "claim-review", "t1", agent="r1")
    ok(repo, "claim-review", "t1", agent="r2")


def test_two_reviewers_under_a_quorum_of_two_are_legal(repo: Path) -> None:
    with Receiver() as rx:
        _two_reviewers_on_t1(repo)
        Liza.open(repo, "human").do(ConfigSet, key="escalation_webhook", value=rx.url)
        v = run(repo, "validate")
        assert v.returncode == 0, v.stdout + v.stderr
        w = run(repo, "watch", "--once")
        assert "INVALID" not in w.stdout + w.stderr
        assert not [p for p in rx.posts if "INVALID" in str(p)]


def _board(repo: Path) -> Board:
    return Liza.open(repo).board()


def test_the_invariant_names_what_is_illegal(repo: Path) -> None:
    """Two coders on one task, a reviewer on its own task, more reviewers than the quorum."""
    from dataclasses import replace
    _two_reviewers_on_t1(repo)
    b = _board(repo)
    now = b.task("t1").history[-1].time

    def problems(board: Board) -> list[str]:
        return [v.rule for v in check_board(board, now) if not v.warning]

    assert problems(b) == []
    # A third reviewer under a quorum of two.
    r2 = b.agent("r2")
    r3 = replace(r2, id="r3")
    b3 = b.with_changes({("agents", "r3"): r3})
    assert any("3 reviewers on t1" in p and "review_quorum" in p for p in problems(b3))
    # Two coders on one task.
    c1 = b.agent("c1")
    c2 = replace(b.agent("c2"), status=c1.status, current_task="t1",
                 lease_expires=c1.lease_expires)
    b2 = b.with_changes({("agents", "c2"): c2})
    assert any("two coders" in p for p in problems(b2))


# -- questions for the human (items 2 and 3) ---------------------------------------------------
def _ask(repo: Path, coder: str = "c1", tid: str = "t1") -> None:
    claimed(repo, tid, coder)
    ok(repo, "block", tid, "--reason", "needs a product call", "--question", "EU or US dates?",
       "--for-human", agent=coder)


def test_an_answered_question_is_nobodys_failure(repo: Path) -> None:
    setup_board(repo, tasks=("t1", "t0"))
    _ask(repo)
    ok(repo, "unblock", "t1", "--answer", "EU, day first")
    # The asker gets it back first (it has the context), though t0 is as old and as urgent.
    assert ok(repo, "claim", agent="c1")["task"] == "t1"
    # Asked again, by the same coder, then by another: still nobody's failure.
    ok(repo, "block", "t1", "--reason", "r", "--question", "q?", "--for-human", agent="c1")
    ok(repo, "unblock", "t1", "--answer", "still EU")
    claimed(repo, "t1", "c2")
    ok(repo, "block", "t1", "--reason", "r", "--question", "q?", "--for-human", agent="c2")
    ok(repo, "unblock", "t1", "--answer", "yes")
    t = _board(repo).task("t1")
    assert t.failed_by == () and t.status == "UNCLAIMED"
    assert not [a for a in _board(repo).values("anomalies") if a.type == "hypothesis_exhaustion"]
    assert run(repo, "watch", "--once").stderr.count("EXHAUST") == 0


def test_awaiting_human_is_the_humans(repo: Path) -> None:
    from gitliza.core import prompts, wake
    setup_board(repo, tasks=("t1",))
    _ask(repo)
    board = _board(repo)
    assert wake.planner_triggers(board) == []  # no planner is woken for it
    text = prompts.planner_section(None, wake.sprint_state(board))
    assert "Waiting on the human (AWAITING HUMAN): t1" in text
    for op in (("unblock", "t1"), ("unblock", "t1", "--answer", "US"),
               ("abandon", "t1", "--reason", "meh")):
        r = run(repo, *op, agent="p1")
        assert r.returncode == 1 and "AWAITING HUMAN" in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    assert _board(repo).task("t1").status == "BLOCKED"
    ok(repo, "unblock", "t1", "--answer", "EU")  # the human's answer moves it
    assert _board(repo).task("t1").status == "UNCLAIMED"
