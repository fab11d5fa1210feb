"""Lock scopes and conflicts before review through the real CLI on real repositories (issue 37):
`add --lock-scope`, `claim` waiting and `ready`/`status` naming the holder, a submit outside the
scope refused with one line and recorded, a submit that does not merge refused, a task in review
that a merge overtook sent back to its coder before a reviewer takes it, and `verify` content."""
from __future__ import annotations

import json
from pathlib import Path

from gitliza.services.api import Liza
from tests.conftest import git
from tests.services.test_lifecycle import (claimed, commit_file, fails, ok, run, setup_board,
                                           task, tip)


def add(repo: Path, tid: str, *scope: str) -> None:
    args = [a for g in scope for a in ("--lock-scope", g)]
    ok(repo, "add", tid, "--desc", f"do {tid}", "--spec-ref", "spec.md", "--done-when", "works",
       "--scope", "src", "--ready", *args, agent="p1")


def test_add_from_a_file_takes_lock_scopes(repo: Path) -> None:
    setup_board(repo, tasks=())
    (repo / "tasks.yaml").write_text(
        "tasks:\n"
        "  - id: a1\n    description: one\n    lock_scope: [CHANGELOG.md, 'src/**']\n"
        "  - id: a2\n    description: two\n    lock-scope: docs/, docs\n"
        "  - id: a3\n    description: three\n    lock_scope: [/etc/passwd]\n")
    before = tip(repo)
    err = fails(repo, 1, "add", "--from", "tasks.yaml", agent="p1")
    assert "tasks.yaml:" in err and "/etc/passwd" in err
    assert tip(repo) == before  # all or none
    text = (repo / "tasks.yaml").read_text()
    (repo / "tasks.yaml").write_text(text[:text.index("  - id: a3")])
    ok(repo, "add", "--from", "tasks.yaml", agent="p1")
    assert task(repo, "a1").lock_scope == ("CHANGELOG.md", "src/**")
    assert task(repo, "a2").lock_scope == ("docs",)


def test_claim_waits_for_the_lock_and_ready_and_status_say_for_which(repo: Path) -> None:
    setup_board(repo, tasks=())
    add(repo, "t1", "CHANGELOG.md", "src/a/**")
    add(repo, "t2", "CHANGELOG.md")
    add(repo, "t3", "docs/*")
    assert task(repo, "t1").lock_scope == ("CHANGELOG.md", "src/a/**")
    shown = run(repo, "show", "t1").stdout
    assert "lock_scope: CHANGELOG.md, src/a/**" in shown
    claimed(repo, "t1", "c1")
    err = fails(repo, 1, "claim", "t2", agent="c2")
    assert "waiting for t1" in err and err.count("\n") == 1 or "hint" in err
    ready = run(repo, "ready", agent="c2").stdout
    assert "t3" in ready and "t2 waits for the lock scope of t1" in ready
    status = run(repo, "status").stdout
    assert "lock:t1" in status
    data = json.loads(run(repo, "status", "--json").stdout)
    assert data["lock_waits"] == {"t2": "t1"}
    # Without naming a task, c2 gets the free one, never the locked one.
    assert claimed(repo, None, "c2")["task"] == "t3"


def test_a_submit_outside_the_lock_scope_is_refused_recorded_and_not_moved(repo: Path) -> None:
    setup_board(repo, tasks=())
    add(repo, "t1", "src/a.py")
    wt = Path(claimed(repo, "t1", "c1")["worktree"])
    commit_file(wt, "src/a.py", "a\n")
    commit_file(wt, "setup.py", "oops\n")
    before = Liza.open(repo).board().task("t1")
    r = run(repo, "submit", "t1", agent="c1", cwd=wt)
    assert r.returncode == 1, r.stderr
    first = r.stderr.strip().splitlines()[0]
    assert "SCOPE_VIOLATION" in first and "setup.py" in first and "src/a.py" not in first
    board = Liza.open(repo).board()
    assert board.task("t1") == before  # still CLAIMED by c1, nothing else moved
    found = [board.get("anomalies", k) for k in board.keys("anomalies")]
    assert [(a.type, a.task, dict(a.details)["files"]) for a in found] == \
        [("scope_violation", "t1", "setup.py")]
    # Back inside the scope, the submit goes through.
    git(wt, "rm", "-q", "setup.py")
    git(wt, "commit", "-q", "-m", "revert")
    ok(repo, "submit", "t1", agent="c1", cwd=wt)
    assert task(repo, "t1").status == "READY_FOR_REVIEW"


def test_conflicts_are_caught_before_review(repo: Path) -> None:
    """Two tasks on one file, no lock scopes: the first merged, the second, waiting for review,
    goes back to its coder instead of to a reviewer; its coder's fix is reviewed and merged; a
    submit that does not merge is refused. Nobody counted as failed."""
    setup_board(repo, tasks=("t1", "t2"))
    wt1 = Path(claimed(repo, "t1", "c1")["worktree"])
    wt2 = Path(claimed(repo, "t2", "c2")["worktree"])
    commit_file(wt1, "shared.txt", "one\n")
    commit_file(wt2, "shared.txt", "two\n")
    ok(repo, "submit", "t1", agent="c1", cwd=wt1)
    ok(repo, "submit", "t2", agent="c2", cwd=wt2)
    ok(repo, "claim-review", "t1", agent="r1")
    ok(repo, "verdict", "t1", "approve", agent="r1")
    ok(repo, "merge", "t1", agent="r1")
    t2 = task(repo, "t2")
    assert t2.status == "INTEGRATION_FAILED" and "shared.txt" in (t2.integration_failure or "")
    assert [h.event for h in t2.history if h.event == "review_claimed"] == []  # none spent
    # No reviewer can take it; its coder takes the fix.
    before = tip(repo)
    r = run(repo, "claim-review", agent="r2")
    assert r.returncode != 0 and tip(repo) == before
    assert claimed(repo, None, "c2")["task"] == "t2"
    # A submit that still conflicts is refused, nothing moves.
    commit_file(wt2, "shared.txt", "two, again\n")
    err = fails(repo, 1, "submit", "t2", agent="c2", cwd=wt2)
    assert "does not merge" in err and "shared.txt" in err
    git(wt2, "merge", "-q", "integration", "-X", "ours", "-m", "merge integration")
    ok(repo, "submit", "t2", agent="c2", cwd=wt2)
    ok(repo, "claim-review", "t2", agent="r1")
    ok(repo, "verdict", "t2", "approve", agent="r1")
    ok(repo, "merge", "t2", agent="r1")
    t2 = task(repo, "t2")
    assert t2.status == "MERGED" and t2.failed_by == ()
    assert [h.event for h in t2.history].count("review_claimed") == 1  # one review per task
    v = run(repo, "verify")
    assert v.returncode == 0, v.stderr
