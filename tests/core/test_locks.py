"""Lock scopes (issue 37, docs/locks.md): the glob overlap decision is sound (checked against
brute force), a task whose scope overlaps one in flight cannot be claimed and says for which, the
lock goes with the task's state (released by merge, release, block, abandon; kept by a lease
that ran out), two overlapping scopes in flight is an invalid board, a submit outside the scope
is refused, and an integration conflict goes back to the coder without counting as a failure."""
from __future__ import annotations

import itertools
import random

import pytest

from gitliza.core import lockscope
from gitliza.core.invariants import check_board, claimable, lock_waits
from gitliza.core.ops import (Abandon, Add, Block, Claim, Conflict, Edit, Merge, Release,
                              Submit, Verdict)
from gitliza.core.ops import ClaimReview
from gitliza.errors import IllegalTransition, ScopeViolation, ValidationError
from tests.core.boards import BASE, C1, MERGE_C, S, Runner, add_ready, claim, team

TIP = "e" * 40


# ---------------------------------------------------------------- the glob decision

@pytest.mark.parametrize("a,b,want", [
    ("src/*.py", "src/a*", True), ("src/*.py", "docs/*", False),
    ("**/__init__.py", "pkg/*/__init__.py", True), ("*.md", "*.txt", False),
    ("a/[!b]c", "a/[b]c", False), ("a/[!b]c", "a/[bd]c", True),
    ("src", "src/x/**", True), ("src/a", "src/b", False), ("**", "x", True),
    ("a/*/c", "a/b/*", True), ("*/c", "a/b/c", False), ("a?", "ab/c", True),
    ("a*z", "*b*", True), ("CHANGELOG.md", "CHANGELOG.md", True),
    ("CHANGELOG.md", "CHANGELOG.md.bak", False), ("src/api", "src/api/v1/*.py", True),
])
def test_overlap_decisions(a: str, b: str, want: bool) -> None:
    assert lockscope.globs_overlap(a, b) is want
    assert lockscope.globs_overlap(b, a) is want


def test_overlap_is_exact_against_brute_force() -> None:
    """Every pair of random globs over a tiny alphabet: if some path (all paths up to length 5
    over it) matches both, the decision must say overlap (soundness); and when it says overlap,
    a witness exists among longer paths or it is one of the cases only long paths show."""
    rng = random.Random(37)
    atoms = ["a", "b", "/", "*", "?", "**/", "[ab]", "[!a]"]
    paths = ["".join(p) for n in range(1, 6) for p in itertools.product("ab/", repeat=n)]
    paths = [p for p in paths if not p.startswith("/") and not p.endswith("/")
             and "//" not in p]
    globs: list[str] = []
    while len(globs) < 60:
        g = "".join(rng.choice(atoms) for _ in range(rng.randint(1, 4)))
        try:
            globs.append(lockscope.check_glob(g))
        except ValidationError:
            continue
    for a, b in itertools.combinations(globs, 2):
        witness = any(lockscope.matches(a, p) and lockscope.matches(b, p) for p in paths)
        if witness:
            assert lockscope.globs_overlap(a, b), (a, b)


@pytest.mark.parametrize("bad", ["", " a", "/abs", "a/../b", "a//b", "a\\b", "[ab", "./a"])
def test_bad_globs_are_refused(bad: str) -> None:
    with pytest.raises(ValidationError):
        lockscope.check_glob(bad)


# ---------------------------------------------------------------- the lock on the board

def two_on_one_file(**extra: object) -> Runner:
    r = team()
    add_ready(r, "task-1", lock_scope=("CHANGELOG.md", "src/a.py"))
    add_ready(r, "task-2", lock_scope=("CHANGELOG.md",), **extra)
    add_ready(r, "task-3", lock_scope=("docs/**",))
    add_ready(r, "task-4")  # no scope: today's behaviour, locks nothing
    return r


def test_claim_waits_for_an_overlapping_task_in_flight_and_says_which() -> None:
    r = two_on_one_file()
    claim(r, "task-1", "coder-1")
    assert [t.id for t in claimable(r.board, r.now(), "coder-2")] == ["task-3", "task-4"]
    assert lock_waits(r.board) == {"task-2": "task-1"}
    before = r.board
    with pytest.raises(ValidationError, match="waiting for task-1.*CHANGELOG.md"):
        claim(r, "task-2", "coder-2")
    assert r.board is before
    claim(r, "task-3", "coder-2")  # disjoint scopes run side by side
    claim(r, "task-4", "coder-3")
    assert [v for v in check_board(r.board, r.now()) if not v.warning] == []


@pytest.mark.parametrize("end", ["merge", "release", "block", "abandon"])
def test_the_lock_is_released_with_the_task(end: str) -> None:
    r = two_on_one_file()
    claim(r, "task-1", "coder-1")
    if end == "merge":
        r.do(Submit, "coder-1", task="task-1", commit=C1, changed=("CHANGELOG.md",))
        r.do(ClaimReview, "reviewer-1", task="task-1")
        r.do(Verdict, "reviewer-1", task="task-1", verdict="approve", commit=C1)
        # Approved and waiting for its merge: still in flight, still locked.
        assert lock_waits(r.board) == {"task-2": "task-1"}
        r.do(Merge, "reviewer-1", task="task-1", result="merged", merge_commit=MERGE_C)
    elif end == "release":
        r.do(Release, "coder-1", task="task-1")
    elif end == "block":
        r.do(Block, "coder-1", task="task-1", reason="stuck", questions=("why?",))
    else:
        r.do(Abandon, "planner-1", task="task-1", reason="not needed")
    assert lock_waits(r.board) == {}
    claim(r, "task-2", "coder-2")


def test_a_lease_that_ran_out_keeps_the_lock_for_the_next_coder() -> None:
    r = two_on_one_file()
    claim(r, "task-1", "coder-1")
    r.minute += 60 * 24  # far past the lease
    assert "task-2" not in [t.id for t in claimable(r.board, r.now(), "coder-2")]
    with pytest.raises(ValidationError, match="waiting for task-1"):
        claim(r, "task-2", "coder-2")
    claim(r, "task-1", "coder-2")  # the takeover keeps the lock, and nobody failed
    t = r.board.task("task-1")
    assert t is not None and t.assigned_to == "coder-2" and t.failed_by == ()


def test_two_overlapping_scopes_in_flight_is_an_invalid_board() -> None:
    r = two_on_one_file()
    claim(r, "task-1", "coder-1")
    t2 = r.board.task("task-2")
    assert t2 is not None
    forged = r.board.with_changes({("tasks", "task-2"): t2.__class__(
        **{**{f: getattr(t2, f) for f in t2.__slots__}, "status": S.CLAIMED,
           "assigned_to": "coder-2", "worktree": ".worktrees/task-2", "base_commit": BASE,
           "lease_expires": r.now()})})
    found = [str(v) for v in check_board(forged, r.now()) if not v.warning]
    assert any("lock scope overlaps that of task-2" in v for v in found), found


def test_edit_and_add_store_the_scope_checked() -> None:
    r = team()
    add_ready(r, "task-1", lock_scope=("src/", "src", "docs/*.md"))
    t = r.board.task("task-1")
    assert t is not None and t.lock_scope == ("src", "docs/*.md")
    r.do(Edit, "planner-1", task="task-1", lock_scope=("lib/**",))
    t = r.board.task("task-1")
    assert t is not None and t.lock_scope == ("lib/**",)
    r.do(Edit, "planner-1", task="task-1", clear_lock_scope=True)
    t = r.board.task("task-1")
    assert t is not None and t.lock_scope == ()
    before = r.board
    with pytest.raises(ValidationError):
        r.do(Edit, "planner-1", task="task-1", lock_scope=("../etc",))
    with pytest.raises(ValidationError):
        r.do(Add, "planner-1", task="task-9", description="x", lock_scope=("/abs",))
    assert r.board is before


# ---------------------------------------------------------------- submit inside the scope

def test_a_submit_outside_the_scope_is_refused_and_nothing_changes() -> None:
    r = two_on_one_file()
    claim(r, "task-1", "coder-1")
    before = r.board
    with pytest.raises(ScopeViolation, match="SCOPE_VIOLATION: task-1 .*: setup.py"):
        r.do(Submit, "coder-1", task="task-1", commit=C1, changed=("CHANGELOG.md", "setup.py"))
    assert r.board is before
    r.do(Submit, "coder-1", task="task-1", commit=C1, changed=("CHANGELOG.md", "src/a.py"))
    t = r.board.task("task-1")
    assert t is not None and t.status == S.READY_FOR_REVIEW


# ---------------------------------------------------------------- conflicts are not failures

def test_a_conflict_goes_back_to_its_coder_and_is_nobodys_failure() -> None:
    r = team()
    add_ready(r, "task-1")
    claim(r, "task-1", "coder-1")
    r.do(Submit, "coder-1", task="task-1", commit=C1)
    r.do(Conflict, "reviewer-1", task="task-1", reason="conflicts in: a.txt", tip=TIP)
    t = r.board.task("task-1")
    assert t is not None and (t.status, t.integration_failure) == \
        (S.INTEGRATION_FAILED, "conflicts in: a.txt")
    # Kept for its coder, which is waiting for it; a second conflict and another coder's fix
    # count nobody as failed (today: two such made it BLOCKED, hypothesis exhaustion).
    assert [x.id for x in claimable(r.board, r.now(), "coder-2")] == []
    claim(r, "task-1", "coder-1")
    r.do(Submit, "coder-1", task="task-1", commit=C1)
    r.do(ClaimReview, "reviewer-1", task="task-1")
    r.do(Verdict, "reviewer-1", task="task-1", verdict="approve", commit=C1)
    r.do(Conflict, "reviewer-1", task="task-1", reason="conflicts in: a.txt", tip=TIP)
    claim(r, "task-1", "coder-2")
    r.do(Submit, "coder-2", task="task-1", commit=C1)
    r.do(ClaimReview, "reviewer-1", task="task-1")
    r.do(Verdict, "reviewer-1", task="task-1", verdict="approve", commit=C1)
    r.do(Merge, "reviewer-1", task="task-1", result="failed", reason="conflicts in: a.txt")
    claim(r, "task-1", "coder-3")
    t = r.board.task("task-1")
    assert t is not None and t.status == S.CLAIMED and t.failed_by == ()


def test_a_conflict_never_takes_a_review_from_its_reviewer() -> None:
    r = team()
    add_ready(r, "task-1")
    claim(r, "task-1", "coder-1")
    r.do(Submit, "coder-1", task="task-1", commit=C1)
    r.do(ClaimReview, "reviewer-1", task="task-1")
    before = r.board
    with pytest.raises(IllegalTransition, match="being reviewed by reviewer-1"):
        r.do(Conflict, "reviewer-2", task="task-1", reason="conflicts in: a.txt", tip=TIP)
    with pytest.raises(ValidationError):  # a planner may not
        r.do(Conflict, "planner-1", task="task-1", reason="conflicts in: a.txt", tip=TIP)
    assert r.board is before
