"""A merge whose auto-sync could not share it is taken back (issue 48, the fleet scenario): kept, a
MERGED record the remote lacks wedged the clone as soon as the remote's integration branch moved
on (every later sync, so every op of the clone, failed IntegrationDiverged; under load machine B's
whole team exited 2). A real bare remote with the server hook; the push fails (a push URL that
leads nowhere) while the fetch works, as when every round of the sync loses the race."""
from __future__ import annotations

from pathlib import Path

from tests.conftest import git
from tests.services.test_lifecycle import ok, run, to_review
from tests.services.test_liveness import clones  # noqa: F401


def _status_on(repo: Path, task: str) -> str:
    data = ok(repo, "show", task)
    return str(data["status"])


def approved_on_each(a: Path, b: Path, *, t3: bool = False) -> None:
    """t1 approved on clone A; t2 added, then approved on clone B (each shared); with `t3`, a
    ready t3 added on A, and A synced."""
    ok(a, "add", "t2", "--desc", "do t2", "--spec-ref", "spec.md", "--done-when", "it works",
       "--scope", "src", "--ready", agent="p1")
    to_review(a, "t1", "c1", "r1")
    ok(a, "verdict", "t1", "approve", agent="r1")
    ok(b, "sync")
    to_review(b, "t2", "c2", "r2", text="y\n")
    ok(b, "verdict", "t2", "approve", agent="r2")
    if t3:
        ok(a, "add", "t3", "--desc", "do t3", "--spec-ref", "spec.md", "--done-when", "it works",
           "--scope", "src", "--ready", agent="p1")
        ok(a, "sync")


def test_a_merge_the_remote_did_not_take_is_taken_back_and_merged_once_it_can_be(
        clones: tuple[Path, Path, Path]) -> None:
    bare, a, _b = clones
    to_review(a, "t1", "c1", "r1")
    ok(a, "verdict", "t1", "approve", agent="r1")
    integ_before = git(a, "rev-parse", "integration")
    remote_integ = git(bare, "rev-parse", "integration")
    git(a, "config", "remote.origin.pushurl", str(a.parent / "nowhere.git"))
    r = run(a, "merge", "t1", agent="r1")
    assert r.returncode != 0, r.stdout + r.stderr  # not "merged" with nothing shared
    assert "did not reach the remote; taken back" in r.stderr, r.stderr
    # Taken back: the board says APPROVED, the integration branch is where it was.
    assert _status_on(a, "t1") == "APPROVED"
    assert git(a, "rev-parse", "integration") == integ_before
    assert git(bare, "rev-parse", "integration") == remote_integ
    # The remote answers pushes again: the reviewer's next merge is shared.
    git(a, "config", "--unset", "remote.origin.pushurl")
    ok(a, "merge", "t1", agent="r1")
    assert _status_on(a, "t1") == "MERGED"
    assert git(bare, "rev-parse", "integration") == git(a, "rev-parse", "integration")
    ok(a, "sync")
    ok(a, "verify")


def test_an_unshared_merge_no_longer_the_newest_op_is_dropped_not_left_to_wedge_the_clone(
        clones: tuple[Path, Path, Path]) -> None:
    """The fleet scenario's run 10: machine C's merge of t04 never reached the remote, another op
    of C came after it (so `merge` could not take it back), and the remote's integration branch
    moved on. Every later sync of C, so every op of C, failed IntegrationDiverged: a claim made
    then stayed on C's board with its worktree removed by the failing command, and the coder
    started in it exited 1. Now the sync drops that merge as a lost race, said like every dropped
    op, the task stays APPROVED and is merged again on the new tip."""
    from tests.services.test_lifecycle import setup_board  # noqa: F401 (the fixture's board)
    import pygit2

    from gitliza.services.sync import droplog
    bare, a, b = clones
    approved_on_each(a, b, t3=True)
    # A merges t1 without sharing it, and makes another op after it: the merge is no longer the
    # newest op on A's board. Then B merges t2 and shares it: the integration branches diverge.
    ok(a, "merge", "t1", "--no-sync", agent="r1")
    unshared = git(a, "rev-parse", "integration")
    ok(a, "claim", "t3", "--no-sync", agent="c1")
    ok(b, "merge", "t2", agent="r2")
    assert git(bare, "rev-parse", "integration") != unshared
    # Before: exit 2, "integration on origin moved on while this clone merged t1", every time.
    r = run(a, "sync")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "dropped merge t1 by r1" in r.stdout + r.stderr, r.stdout + r.stderr
    # The claim after it survived and is shared; the merge is not on the board, t1 is APPROVED.
    assert _status_on(a, "t1") == "APPROVED"
    assert _status_on(a, "t3") == "CLAIMED"
    assert git(a, "rev-parse", "refs/liza/state") == git(bare, "rev-parse", "refs/liza/state")
    # Said, never silently: the DROPPED_OPS alarm names the merge and where its commit is kept.
    alerts = droplog.alerts(pygit2.Repository(str(a)))
    assert len(alerts) == 1 and "merge t1 by r1" in alerts[0].text, alerts
    assert "refs/liza-rescue/" in alerts[0].text, alerts[0].text
    rescue = [ln.split()[0] for ln in git(a, "for-each-ref", "refs/liza-rescue/").splitlines()]
    assert len(rescue) == 1
    kept = git(a, "for-each-ref", "--format=%(objectname)", "refs/liza-rescue/")
    assert git(a, "rev-parse", f"{kept}^1") == unshared  # the unshared merge commit is kept
    # The integration branch went back to the remote's; the next merge of t1 is shared.
    assert git(a, "rev-parse", "integration") == git(bare, "rev-parse", "integration")
    ok(a, "merge", "t1", agent="r1")
    assert _status_on(a, "t1") == "MERGED"
    assert git(bare, "rev-parse", "integration") == git(a, "rev-parse", "integration")
    ok(a, "verify")
    ok(b, "sync")
    ok(b, "verify")


def test_a_merge_after_an_older_unshared_one_merges_on_the_remotes_tip(
        clones: tuple[Path, Path, Path]) -> None:
    """A's older merge of t1 never reached the remote (and is no longer A's newest op); B merges
    t3; then A merges t2. The pull before the merge drops t1's merge (the remote's integration
    branch moved past it) and returns A's integration branch to the remote's, so t2 merges on the
    remote's tip (before: the pull failed IntegrationDiverged, and so did the merge)."""
    bare, a, b = clones
    for tid in ("t2", "t3"):
        ok(a, "add", tid, "--desc", f"do {tid}", "--spec-ref", "spec.md", "--done-when",
           "it works", "--scope", "src", "--ready", agent="p1")
    to_review(a, "t1", "c1", "r1")
    ok(a, "verdict", "t1", "approve", agent="r1")
    to_review(a, "t2", "c1", "r1", text="z\n")
    ok(a, "verdict", "t2", "approve", agent="r1")
    ok(b, "sync")
    to_review(b, "t3", "c2", "r2", text="y\n")
    ok(b, "verdict", "t3", "approve", agent="r2")
    ok(a, "sync")
    ok(a, "merge", "t1", "--no-sync", agent="r1")
    ok(a, "heartbeat", "--no-sync", agent="c1")  # the merge is no longer A's newest op
    ok(b, "merge", "t3", agent="r2")
    r = run(a, "merge", "t2", agent="r1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert _status_on(a, "t2") == "MERGED" and _status_on(a, "t1") == "APPROVED"
    assert git(bare, "rev-parse", "integration") == git(a, "rev-parse", "integration")
    ok(a, "merge", "t1", agent="r1")
    assert _status_on(a, "t1") == "MERGED"
    ok(a, "verify")
