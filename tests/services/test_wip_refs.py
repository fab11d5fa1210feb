"""Work-in-progress snapshots on the remote (issue 48): refs/liza/wip/<task>/<agent>, made with a
throw-away index, pushed by sync, replaced by each snapshot, judged by the real server hook of a
real bare remote: only a snapshot of the agent its name says, only while that agent holds the task;
dropped (kept in the attic first) once the task leaves it."""
from __future__ import annotations

from pathlib import Path

import pygit2

from gitliza.services import wip
from tests.conftest import git
from tests.services.test_lifecycle import claimed, ok
from tests.services.test_liveness import clones  # noqa: F401


def _snap(repo: Path, wt: Path, task: str, agent: str, parent: str | None = None) -> str:
    oid = wip.snapshot(pygit2.Repository(str(repo)), task, agent, wt, parent)
    assert oid is not None
    return str(oid)


def _remote(bare: Path, ref: str) -> str:
    return git(bare, "for-each-ref", "--format=%(objectname)", ref)


def test_a_snapshot_holds_uncommitted_work_reaches_the_remote_and_is_replaced(
        clones: tuple[Path, Path, Path]) -> None:
    bare, a, _b = clones
    wt = Path(claimed(a, "t1", "c1")["worktree"])
    (wt / "edit.txt").write_text("uncommitted\n")
    index_before = (Path(git(wt, "rev-parse", "--git-dir")) / "index").read_bytes()
    first = _snap(a, wt, "t1", "c1")
    # The worktree and its index are untouched; nothing changed: no new snapshot.
    assert git(wt, "status", "--porcelain") == "?? edit.txt"
    assert (Path(git(wt, "rev-parse", "--git-dir")) / "index").read_bytes() == index_before
    assert wip.snapshot(pygit2.Repository(str(a)), "t1", "c1", wt) is None
    assert git(a, "show", f"{first}:edit.txt") == "uncommitted"
    ok(a, "sync")
    ref = wip.ref_name("t1", "c1")
    assert _remote(bare, ref) == first
    # The next snapshot replaces it (no fast-forward asked: a sibling over the same commit).
    (wt / "edit.txt").write_text("more\n")
    second = _snap(a, wt, "t1", "c1")
    ok(a, "sync")
    assert _remote(bare, ref) == second
    # The task leaves c1 (released): the snapshot is kept in the attic, then dropped there too.
    ok(a, "release", "t1", agent="c1")
    ok(a, "sync")
    ok(a, "sync")
    assert _remote(bare, ref) == ""
    assert git(a, "for-each-ref", "--format=%(refname)", "refs/liza/wip/") == ""
    kept = git(bare, "for-each-ref", "--format=%(refname)", "refs/liza-attic/t1/").split()
    assert kept and any(git(bare, "show", f"{k}:edit.txt") == "more" for k in kept), kept


def test_the_server_hook_refuses_another_agent_replacing_your_snapshot(
        clones: tuple[Path, Path, Path]) -> None:
    bare, a, b = clones
    wt = Path(claimed(a, "t1", "c1")["worktree"])
    (wt / "edit.txt").write_text("c1's work\n")
    mine = _snap(a, wt, "t1", "c1")
    ok(a, "sync")
    ref = wip.ref_name("t1", "c1")
    assert _remote(bare, ref) == mine
    # On B, c2 (registered, not holding t1) snapshots t1 and pushes it over c1's: refused.
    ok(b, "sync")
    git(b, "worktree", "add", "-q", "--detach", str(b.parent / "bwt"), "HEAD")
    bwt = b.parent / "bwt"
    (bwt / "edit.txt").write_text("c2 overwrites\n")
    # Over c1's snapshot: a fast-forward, which the rule of the other refs/liza/* refs allows.
    theirs = _snap(b, bwt, "t1", "c2", parent=mine)
    out = git(b, "push", "--force", "origin", f"{theirs}:{ref}", check=False)
    assert _remote(bare, ref) == mine, out
    # Nor may c2 keep one of its own on a task it does not hold, nor delete c1's while c1 holds t1.
    git(b, "push", "--force", "origin", f"{theirs}:{wip.ref_name('t1', 'c2')}", check=False)
    assert _remote(bare, wip.ref_name("t1", "c2")) == ""
    git(b, "push", "origin", f":{ref}", check=False)
    assert _remote(bare, ref) == mine
    # A commit that is no snapshot at all, under c1's name: refused too.
    plain = git(b, "commit-tree", git(b, "rev-parse", "HEAD^{tree}"), "-m", "c1's, says b")
    git(b, "push", "--force", "origin", f"{plain}:{ref}", check=False)
    assert _remote(bare, ref) == mine
    # c1's own next snapshot replaces it (not a fast-forward): accepted.
    (wt / "edit.txt").write_text("c1 goes on\n")
    nxt = _snap(a, wt, "t1", "c1")
    ok(a, "sync")
    assert _remote(bare, ref) == nxt


def test_a_new_snapshot_is_pushed_alone_and_a_lost_lease_is_said_then_synced(
        clones: tuple[Path, Path, Path]) -> None:
    """services/sync/wipshare.py: the snapshot thread's own push of one wip ref. It lands (the
    tracking ref follows); the same snapshot already pushed by the follower's sync is no failure;
    a lease lost to another value is said (the snapshot stays here) and the next sync pushes it."""
    from gitliza.services.api import Liza
    from gitliza.services.sync import wipshare
    bare, a, _b = clones
    wt = Path(claimed(a, "t1", "c1")["worktree"])
    liza_a = Liza.open(a, "c1")
    ref = wip.ref_name("t1", "c1")
    tracking = "refs/remotes/origin/liza/wip/t1/c1"
    (wt / "edit.txt").write_text("one\n")
    first = _snap(a, wt, "t1", "c1")
    assert wipshare.share(liza_a, "t1", "c1", pygit2.Oid(hex=first)) is None
    assert _remote(bare, ref) == first and git(a, "rev-parse", tracking) == first
    # The follower's sync pushed the next snapshot first; this clone's tracking ref lags.
    (wt / "edit.txt").write_text("two\n")
    second = _snap(a, wt, "t1", "c1")
    git(a, "push", "-q", "--force", "origin", f"{second}:{ref}")
    git(a, "update-ref", tracking, first)
    assert wipshare.share(liza_a, "t1", "c1", pygit2.Oid(hex=second)) is None
    # A third, with the lease on `first` while the remote holds `second`: not pushed, said.
    git(a, "update-ref", tracking, first)
    (wt / "edit.txt").write_text("three\n")
    third = _snap(a, wt, "t1", "c1")
    why = wipshare.share(liza_a, "t1", "c1", pygit2.Oid(hex=third))
    assert why is not None and why.startswith("stale"), why
    assert _remote(bare, ref) == second
    ok(a, "sync")  # the follower's next sync shares it
    assert _remote(bare, ref) == third
