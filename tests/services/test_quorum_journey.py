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
