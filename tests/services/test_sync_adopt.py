"""Sync adopts only what verifies (gitliza/services/adopt.py): a forged board pushed with plain git to a
hookless remote is refused by every clone's sync, pull, auto-sync and first pull, through both
transports (in process for a plain bare remote on this machine, git through a real `git daemon`).
"""
from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from gitliza.services.sync import engine
from gitliza.core.encoding import record
from gitliza.services.sync.report import UP_TO_DATE
from gitliza.services.adopt import IntegrationRefused, RemoteRefused
from gitliza.core.ops import Claim, Note
from gitliza.git.remotes import remote as remotes
from gitliza.git.store import STATE_REF, Store
from tests.conftest import git, remote_of
from tests.forgery import forge, push_forgery
from tests.gitdaemon import GitDaemon, git_daemon  # noqa: F401  (the fixture)
from tests.services.test_sync import cli, clone, liza, seed, tip


@pytest.fixture(params=["path", "daemon"])
def remote(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Path, Path]:
    """(url, bare, seed clone): a hookless remote with a board of 4 ready tasks."""
    bare, work = seed(tmp_path)
    if request.param == "path":
        return str(bare), bare, work
    daemon: GitDaemon = request.getfixturevalue("git_daemon")
    served = daemon.base_path / "served.git"
    git(tmp_path, "clone", "-q", "--bare", "--mirror", str(bare), str(served))
    (served / "git-daemon-export-ok").touch()
    git(work, "remote", "set-url", "origin", daemon.url("served.git"))
    return daemon.url("served.git"), served, work


def test_forged_board_is_refused_local_board_and_work_kept(
        remote: tuple[str, Path, Path], tmp_path: Path) -> None:
    url, bare, _work = remote
    a, b = clone(url, tmp_path / "a"), clone(url, tmp_path / "b")
    # A has local work not shared yet.
    mine = liza(a).do(Note, message="mine, not shared yet").commit
    forged = forge(b, "task-1")
    push_forgery(b, forged)
    assert tip(bare) == forged
    tracking = remotes.tracking_ref(remote_of(a, "origin"))
    tracking_before = tip(a, tracking)
    with pytest.raises(RemoteRefused) as err:
        engine.sync(Store.discover(a), remote_of(Store.discover(a), "origin"))
    text = str(err.value)
    assert forged[:12] in text and "(note)" in text and "task-1.toml changed" in text
    assert tip(a) == mine  # the local board stayed, with the local op
    assert tip(a, tracking) == tracking_before != forged  # the refused tip is not kept either
    # The CLI: one line, exit 4; again on the next sync (nothing was adopted meanwhile).
    for _ in range(2):
        r = cli(a, "sync")
        assert r.returncode == 4, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and forged[:12] in r.stderr
        assert tip(a) == mine
    assert tip(bare) == forged  # nothing pushed over it by the refusing clone


def test_garbage_blob_does_not_brick_the_clones(remote: tuple[str, Path, Path],
                                                tmp_path: Path) -> None:
    url, _bare, _work = remote
    a, b = clone(url, tmp_path / "a"), clone(url, tmp_path / "b")
    forged = forge(b, "task-2", garbage=True)
    push_forgery(b, forged)
    r = cli(a, "pull")
    assert r.returncode == 4 and forged[:12] in r.stderr, r.stderr
    assert cli(a, "status").returncode == 0
    assert cli(a, "validate").returncode == 0


def test_first_pull_of_a_new_clone_checks_the_whole_chain(remote: tuple[str, Path, Path],
                                                          tmp_path: Path) -> None:
    url, bare, work = remote
    good = clone(url, tmp_path / "good")
    rep = engine.pull(Store.discover(tmp_path / "good"), remote_of(Store.discover(tmp_path / "good")))
    assert rep.verified == 0  # nothing new: nothing checked
    total = sum(1 for _ in Store.discover(good).history())
    fresh = tmp_path / "fresh"
    git(tmp_path, "clone", "-q", url, str(fresh))
    rep = engine.pull(Store.discover(fresh), remote_of(Store.discover(fresh), "origin"))
    assert rep.verified == total  # the whole chain, once
    # One more op on the remote: the next pull checks that one commit only.
    h = liza(work)
    engine.pull(h.store, remote_of(h.store, "origin"))
    h.do(Note, message="one more")
    engine.sync(h.store, remote_of(h.store, "origin"))
    assert engine.pull(Store.discover(fresh), remote_of(Store.discover(fresh), "origin")).verified == 1
    # A forgery deep in the chain: a new clone refuses it and has no board at all.
    forged = forge(good, "task-3")
    liza(good).do(Note, message="after the forgery")
    push_forgery(good, git(good, "rev-parse", STATE_REF))
    new = tmp_path / "new"
    git(tmp_path, "clone", "-q", url, str(new))
    r = cli(new, "pull")
    assert r.returncode == 4 and forged[:12] in r.stderr, r.stderr
    assert tip(new) is None and tip(bare) != forged


def test_auto_sync_refuses_and_keeps_the_op(remote: tuple[str, Path, Path],
                                            tmp_path: Path) -> None:
    url, _bare, _work = remote
    a, b = clone(url, tmp_path / "a"), clone(url, tmp_path / "b")
    forged = forge(b, "task-1")
    push_forgery(b, forged)
    r = cli(a, "note", "kept locally")  # liza.remote is set: auto-sync
    assert r.returncode == 4 and forged[:12] in r.stderr, r.stderr
    assert "note committed locally, not shared: refusing origin's board" in r.stderr
    assert "kept locally" in git(a, "log", "-1", "--format=%B", STATE_REF)


def test_claim_does_not_follow_a_forged_board_or_unapproved_integration(
        remote: tuple[str, Path, Path], tmp_path: Path) -> None:
    """`claim` pulls the integration branch only (pull_branches): the board that judges it must
    verify, and what it brings in must be approved."""
    url, _bare, work = remote
    integ = liza(work).board().config.integration_branch
    git(work, "push", "-q", "origin", f"main:refs/heads/{integ}")
    a = clone(url, tmp_path / "a")
    before = git(a, "rev-parse", f"refs/heads/{integ}")
    # An unreviewed commit pushed straight to the integration branch.
    git(work, "checkout", "-q", "-b", integ)
    (work / "evil.txt").write_text("unreviewed\n")
    git(work, "add", "evil.txt")
    git(work, "commit", "-q", "-m", "sneak it in")
    git(work, "push", "-q", "--no-verify", "origin", integ)
    with pytest.raises(IntegrationRefused) as err:
        engine.pull_branches(Store.discover(a), remote_of(Store.discover(a), "origin"))
    assert "never approved" in str(err.value)
    assert git(a, "rev-parse", f"refs/heads/{integ}") == before
    r = cli(a, "sync")
    assert r.returncode == 4 and "never approved" in r.stderr, r.stderr
    assert git(a, "rev-parse", f"refs/heads/{integ}") == before


def test_forged_board_refused_before_claim_moves_anything(remote: tuple[str, Path, Path],
                                                         tmp_path: Path) -> None:
    url, _bare, _work = remote
    a, b = clone(url, tmp_path / "a"), clone(url, tmp_path / "b")
    push_forgery(b, forge(b, "task-4"))
    with pytest.raises(RemoteRefused):
        engine.pull_branches(Store.discover(a), remote_of(Store.discover(a), "origin"))
    before = tip(a)
    r = cli(a, "claim", "task-2", agent="a1")
    # The claim pulls the team's integration branch first: refused there, before anything moved.
    assert r.returncode == 4 and "refusing origin's board" in r.stderr, r.stderr
    assert tip(a) == before and liza(a).board().task("task-2").status.value == "UNCLAIMED"
    assert not (a / ".worktrees" / "task-2").exists()
    assert tip(a, remotes.tracking_ref(remote_of(a, "origin"))) != git(b, "rev-parse", STATE_REF)


def test_repeated_ops_of_a_rebuilt_remote_are_not_applied_twice(tmp_path: Path) -> None:
    """sync's replay skips a local op the remote's new commits already carry (what a remote
    rebuilt by `git liza repair` looks like to a clone that had the old chain)."""
    bare, work = seed(tmp_path)
    a = clone(bare, tmp_path / "a")
    h = liza(a, agent="a1")
    c = h.do(Claim, task="task-1", worktree=".worktrees/task-1", base_commit=git(a, "rev-parse",
                                                                                   "HEAD"))
    note = h.do(Note, message="twice?")
    # The remote gets the same two ops in other commits (on top of another op).
    w = liza(work)
    engine.pull(w.store, remote_of(w.store, "origin"))
    w.do(Note, message="first on the remote")
    repo = pygit2.Repository(str(a))
    ops = [record.parse(repo[pygit2.Oid(hex=x)].message).op for x in (c.commit, note.commit)]
    for op in ops:
        w.apply(lambda _b, _now, op=op: op)
    engine.sync(w.store, remote_of(w.store, "origin"))
    rep = engine.sync(h.store, remote_of(h.store, "origin"))
    assert rep.action == UP_TO_DATE or rep.replayed == []
    notes = [x for x in liza(a).board().values("human_notes") if x.message == "twice?"]
    assert len(notes) == 1
    assert tip(a) == tip(bare)


def test_first_pull_on_a_terminal_shows_a_bar(tmp_path: Path) -> None:
    """A new clone's first pull checks the whole chain; on a terminal it says so with a bar."""
    import os
    import pty
    import sys
    bare, work = seed(tmp_path)
    h = liza(work)
    for i in range(300):  # above adopt.BAR_FROM
        h.do(Note, message=f"n{i}")
    engine.sync(h.store, remote_of(h.store, "origin"))
    fresh = tmp_path / "fresh"
    git(tmp_path, "clone", "-q", str(bare), str(fresh))
    pid, fd = pty.fork()
    if pid == 0:  # the child: `git liza pull` with a terminal on stdout and stderr
        os.chdir(fresh)
        os.execv(sys.executable, [sys.executable, "-m", "gitliza", "pull"])
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    text = out.decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 0, text
    assert "verifying origin's board" in text and "fast-forwarded" in text, text
    assert tip(fresh) == tip(bare)
