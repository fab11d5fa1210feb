"""Review of the ops the remote will never take (services/sync/doomed.py, issue 48): what a sync
drops at once, and what its drop does to the branches. Real bare remotes (with the server hook, and
without it where a peer can push anything), real clones, the real CLI."""
from __future__ import annotations

from pathlib import Path

import pytest

from gitliza.core import clock
from tests.conftest import git
from tests.services.test_lifecycle import claimed, later, ok, run, task, tip, to_review
from tests.services.test_liveness import clones  # noqa: F401
from tests.services.test_merge_unshared import approved_on_each


def test_a_forged_integration_tip_is_never_adopted_through_a_dropped_merge(
        tmp_path: Path, clones: tuple[Path, Path, Path]) -> None:
    """A peer with push access to a remote without the hook puts an unreviewed commit on the
    integration branch. A clone refuses to fast-forward to it (IntegrationRefused); but a clone
    holding an unshared merge judged that merge lost against the forged tip, dropped it, and its
    rescue returned the local integration branch to the forged tip, unchecked: the next merge
    built on the forgery."""
    from gitliza.hooks.install import uninstall
    bare, a, _b = clones
    uninstall(bare)  # a remote without the server hook, as a hosted one
    to_review(a, "t1", "c1", "r1")
    ok(a, "verdict", "t1", "approve", agent="r1")
    ok(a, "merge", "t1", "--no-sync", agent="r1")
    unshared = git(a, "rev-parse", "integration")
    # The peer: plain git, an unreviewed commit on top of the remote's integration branch.
    peer = tmp_path / "peer"
    git(tmp_path, "clone", "-q", "-b", "integration", str(bare), str(peer))
    (peer / "evil.txt").write_text("nobody reviewed this\n")
    git(peer, "add", "evil.txt")
    git(peer, "commit", "-qm", "unreviewed")
    forged = git(peer, "rev-parse", "HEAD")
    git(peer, "push", "-q", "origin", "HEAD:integration")
    r = run(a, "sync")
    mine = git(a, "rev-parse", "integration")
    assert mine != forged, r.stdout + r.stderr
    assert not _is_ancestor(a, forged, mine), r.stdout + r.stderr
    assert mine == unshared, r.stdout + r.stderr


def _is_ancestor(repo: Path, old: str, new: str) -> bool:
    import subprocess
    return subprocess.run(["git", "merge-base", "--is-ancestor", old, new], cwd=repo,
                          capture_output=True).returncode == 0


def test_a_dropped_takeover_leaves_a_shareable_merge_on_the_integration_branch(
        clones: tuple[Path, Path, Path]) -> None:
    """B holds an unshared merge the remote can take (a fast-forward of its integration branch)
    and a takeover a renewal outran. The sync drops the takeover (the remote will never take it);
    the merge must be shared, not taken off the integration branch by the drop's rescue (which
    returns the integration branch whenever any op is dropped)."""
    bare, a, b = clones
    t = later(0)
    ok(a, "add", "t2", "--desc", "do t2", "--spec-ref", "spec.md", "--done-when", "it works",
       "--scope", "src", "--ready", agent="p1")
    to_review(a, "t1", "c1", "r1")
    ok(a, "verdict", "t1", "approve", agent="r1")
    claimed(a, "t2", "c1", now=clock.plus(t, -1500))
    ok(b, "sync", now=clock.plus(t, -1400))  # B first sees c1's lease mark here
    git(b, "fetch", "-q", "origin", "refs/heads/liza/t1")  # t1's review commit
    ok(b, "claim", "t2", "--no-sync", agent="c2", now=clock.plus(t, -1400 + 300 + 60 + 10))
    ok(a, "heartbeat", agent="c1", now=clock.plus(t, -1210))  # c1 renews: B's takeover outrun
    ok(b, "merge", "t1", "--no-sync", agent="r1")
    merged = git(b, "rev-parse", "integration")
    assert git(bare, "rev-parse", "integration") != merged
    r = run(b, "sync")
    out = r.stdout + r.stderr
    assert "dropped claim t2 by c2" in out, out
    assert r.returncode == 0, out
    assert task(b, "t1").status == "MERGED", out
    assert git(bare, "rev-parse", "integration") == merged, out
    assert tip(b) == tip(bare)


def test_a_merge_replayed_by_another_process_is_still_its_commands_own(
        clones: tuple[Path, Path, Path]) -> None:
    """`git liza merge` handles its own lost race (IntegrationDiverged: it takes its merge back
    and merges again), so its sync exempts its op from the veto. Another process of the clone (a
    `git liza pull`, a claim's pull) may replay that op first, giving it a new commit id: the
    exemption must follow the op, not the id it was first committed with. Before, the merge's own
    sync dropped it as lost (a DROPPED_OPS alarm for a merge its command was about to redo)."""
    import pygit2

    from gitliza.git.remotes.remote import resolve
    from gitliza.git.store import Store
    from gitliza.services.sync import droplog, engine
    from gitliza.services.sync.branches import IntegrationDiverged
    bare, a, b = clones
    approved_on_each(a, b)
    ok(a, "merge", "t1", "--no-sync", agent="r1")  # as the merge command's commit, before its sync
    own = tip(a)
    # The remote's board moves on, not its integration branch.
    ok(b, "add", "t3", "--desc", "do t3", "--spec-ref", "spec.md", "--done-when", "it works",
       "--scope", "src", agent="p1")
    ok(a, "pull")  # another process of A replays the merge op onto the remote's board
    assert tip(a) != own and task(a, "t1").status == "MERGED"
    ok(b, "merge", "t2", agent="r2")  # now the integration branch moves on
    store = Store.discover(a)
    try:
        engine.sync(store, resolve(a, "origin"), own=own)
        raised = False
    except IntegrationDiverged:
        raised = True
    assert raised, droplog.alerts(pygit2.Repository(str(a)))
    assert not droplog.alerts(pygit2.Repository(str(a)))


def test_a_refused_merge_leaves_the_local_board_where_it_was(
        clones: tuple[Path, Path, Path]) -> None:
    """A command refused (exit 1) changes nothing. `git liza merge` pulls first; with the veto,
    that pull (mode "pull", no `own`) dropped an unshared merge of this clone even when the local
    board was only ahead of the remote's, so a merge refused for bad input moved refs/liza/state.
    A board only ahead is now rebuilt by a two-way sync alone. (Behind or diverged, a pull moves
    the board, as before the veto: the remote's ops come in.)"""
    bare, a, b = clones
    approved_on_each(a, b)
    from gitliza.git.remotes.remote import resolve
    from gitliza.git.store import Store
    from gitliza.services.sync import engine
    from gitliza.services.sync.branches import IntegrationDiverged
    ok(a, "merge", "t1", "--no-sync", agent="r1")
    own = tip(a)
    ok(a, "add", "t3", "--desc", "do t3", "--spec-ref", "spec.md", "--done-when", "it works",
       "--scope", "src", "--no-sync", agent="p1")  # the merge is no longer A's newest op
    ok(b, "merge", "t2", agent="r2")  # the remote's integration branch moves on
    # The merge's own sync (as its command runs it): the remote's ops come in, the merge is
    # replayed on them, the push fails. A's board is now only ahead of the remote's.
    with pytest.raises(IntegrationDiverged):
        engine.sync(Store.discover(a), resolve(a, "origin"), own=own)
    assert task(a, "t1").status == "MERGED"
    before = tip(a)
    r = run(a, "merge", "t1", agent="r9")  # no such agent: refused
    assert r.returncode == 1, r.stderr
    assert tip(a) == before, r.stderr


def test_a_kept_merge_above_a_dropped_one_does_not_keep_the_dropped_work_on_the_branch(
        clones: tuple[Path, Path, Path]) -> None:
    """The integration branch stays for a merge the sync kept, but not when it also holds a merge
    the sync dropped: the dropped work must leave it (else every merge made again builds on it and
    fails the same way). Here the merge command's own op (t2, kept: its command takes it back)
    sits on the local branch above an older unshared merge (t1) the remote's branch moved past."""
    from gitliza.git.remotes.remote import resolve
    from gitliza.git.store import Store
    from gitliza.services.sync import engine
    from gitliza.services.sync.branches import IntegrationDiverged
    bare, a, b = clones
    approved_on_each(a, b, t3=True)
    to_review(a, "t3", "c1", "r1", text="z\n")
    ok(a, "verdict", "t3", "approve", agent="r1")
    ok(a, "merge", "t1", "--no-sync", agent="r1")
    ok(a, "merge", "t3", "--no-sync", agent="r1")
    own = tip(a)
    ok(b, "merge", "t2", agent="r2")  # the remote's integration branch moves past both
    with pytest.raises(IntegrationDiverged):
        engine.sync(Store.discover(a), resolve(a, "origin"), own=own)
    assert task(a, "t1").status == "APPROVED"
    assert git(a, "rev-parse", "integration") == git(bare, "rev-parse", "integration")
