"""The board's fetch and push in process for a plain bare remote on this machine
(gitliza/git/remotes/direct.py), and git for every other remote: real bare repositories and clones.

Whether git ran is read from GIT_TRACE2_EVENT: every git process started while it is set appends
to that file, so an absent file means no git process at all.
"""
from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from gitliza.services.sync import engine
from gitliza.core.ops import Note
from gitliza.errors import ConcurrencyConflict
from gitliza.git.remotes import direct
from gitliza.git.remotes import pushresults
from gitliza.git.remotes import transport
from gitliza.git.store import STATE_REF, Store
from tests.conftest import git, remote_of
from tests.services.test_sync import clone, liza, seed


def _traced(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    trace = tmp_path / "trace2.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    return trace


def _hook(bare: Path, name: str, body: str = "exit 0") -> Path:
    log = bare / f"{name}.log"
    hook = bare / "hooks" / name
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f"#!/bin/sh\necho ran >> '{log}'\n{body}\n")
    hook.chmod(0o755)
    return log


def _seeded(tmp_path: Path, hooked: bool) -> tuple[Path, Path, Path]:
    """A remote with a board (with a harmless hook, so that git must reach it, when `hooked`),
    its seed and a clone: (bare, seed, clone)."""
    bare, work = seed(tmp_path)
    if hooked:
        _hook(bare, "post-update")
    return bare, work, clone(bare, tmp_path / "a")


def _whole(*repos: Path) -> None:
    for r in repos:
        git(r, "fsck", "--no-progress", "--no-dangling")  # every object reachable is there


def test_a_sync_with_a_plain_bare_remote_runs_no_git(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    bare, _work = seed(tmp_path)
    a, b = clone(bare, tmp_path / "a"), clone(bare, tmp_path / "b")
    hb = liza(b, agent="b1")
    hb.do(Note, message="from b")
    engine.sync(hb.store, remote_of(hb.store, "origin"))
    ha = liza(a, agent="a1")
    ha.do(Note, message="from a")
    trace = _traced(monkeypatch, tmp_path)
    rep = engine.sync(ha.store, remote_of(ha.store, "origin"))
    assert (rep.action, rep.fetched, rep.pushed, len(rep.replayed)) == ("replayed", 1, True, 1)
    assert not trace.exists()  # fetch, replay and push, all in process
    monkeypatch.delenv("GIT_TRACE2_EVENT")
    tip = git(a, "rev-parse", STATE_REF)
    assert git(bare, "rev-parse", STATE_REF) == tip
    assert git(a, "rev-parse", "refs/remotes/origin/liza/state") == tip
    assert git(a, "log", "--format=%s", "-2", STATE_REF).count("note") == 2
    _whole(bare, a)
    # and git reads what was written in process: b brings a's op with git's own fetch
    git(b, "fetch", "-q", "origin", "refs/liza/state:refs/remotes/probe/state")
    assert git(b, "rev-parse", "refs/remotes/probe/state") == tip
    _whole(b)


def test_a_remote_with_a_receive_hook_is_reached_through_git_and_its_hook_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bare, _work = seed(tmp_path)
    a = clone(bare, tmp_path / "a")
    log = _hook(bare, "post-receive")
    assert direct.open_remote(pygit2.Repository(str(a)), a, "origin") is None
    ha = liza(a, agent="a1")
    ha.do(Note, message="from a")
    trace = _traced(monkeypatch, tmp_path)
    rep = engine.sync(ha.store, remote_of(ha.store, "origin"))
    assert rep.pushed and trace.exists()
    assert log.read_text() == "ran\n"
    assert git(bare, "rev-parse", STATE_REF) == git(a, "rev-parse", STATE_REF)


def test_a_hook_that_refuses_still_refuses(tmp_path: Path) -> None:
    bare, _work = seed(tmp_path)
    a = clone(bare, tmp_path / "a")
    before = git(bare, "rev-parse", STATE_REF)
    _hook(bare, "pre-receive", "echo 'no board changes today' >&2; exit 1")
    ha = liza(a, agent="a1")
    ha.do(Note, message="refused")
    with pytest.raises(pushresults.PushRejected, match="no board changes today"):
        engine.sync(ha.store, remote_of(ha.store, "origin"))
    assert git(bare, "rev-parse", STATE_REF) == before


@pytest.mark.parametrize("setup", ["config", "hooks-path", "non-bare", "push-url", "url-scheme",
                                   "global-config", "local-rewrite", "git-c", "alternates"])
def test_what_git_would_do_differently_goes_through_git(tmp_path: Path, setup: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    bare, _work = seed(tmp_path)
    a = clone(bare, tmp_path / "a")
    local = pygit2.Repository(str(a))
    assert direct.open_remote(local, a, "origin") is not None  # the plain case
    remote: str | Path = "origin"
    if setup == "config":
        git(bare, "config", "receive.denyNonFastForwards", "true")
    elif setup == "hooks-path":
        git(bare, "config", "core.hooksPath", str(tmp_path / "elsewhere"))
    elif setup == "non-bare":
        remote = tmp_path / "seed"
    elif setup == "push-url":
        git(a, "config", "remote.origin.pushurl", str(tmp_path / "other.git"))
    elif setup == "url-scheme":
        remote = "git://127.0.0.1:1/remote.git"
    elif setup == "local-rewrite":
        git(a, "config", f"url.{tmp_path / 'other.git'}.insteadOf", str(bare))
    elif setup == "alternates":
        (bare / "objects" / "info").mkdir(parents=True, exist_ok=True)
        (bare / "objects" / "info" / "alternates").write_text(f"{tmp_path}/seed/.git/objects\n")
    elif setup == "git-c":
        monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'protocol.file.allow'='never'")
    else:
        git(a, "config", "--global", "transfer.fsckObjects", "true")
    assert direct.open_remote(local, a, str(remote)) is None


def test_a_file_url_and_a_relative_path_are_local_remotes(tmp_path: Path) -> None:
    bare, _work = seed(tmp_path)
    a = clone(bare, tmp_path / "a")
    local = pygit2.Repository(str(a))
    for url in (f"file://{bare}", "../remote.git"):
        got = direct.open_remote(local, a, url)
        assert got is not None and Path(got.path).resolve() == bare.resolve()


def test_a_sync_with_nothing_to_send_runs_no_push(tmp_path: Path) -> None:
    bare, _work = seed(tmp_path)
    a, b = clone(bare, tmp_path / "a"), clone(bare, tmp_path / "b")
    log = _hook(bare, "pre-receive")  # git's push runs it: it logs every push that reaches us
    hb = liza(b, agent="b1")
    hb.do(Note, message="from b")
    engine.sync(hb.store, remote_of(hb.store, "origin"))
    assert log.read_text() == "ran\n"
    rep = engine.sync(Store.discover(a), remote_of(Store.discover(a), "origin"))
    assert (rep.action, rep.pushed) == ("fast-forward", False)
    assert log.read_text() == "ran\n"  # no second push
    rep = engine.sync(Store.discover(a), remote_of(Store.discover(a), "origin"))
    assert (rep.action, rep.pushed) == ("up-to-date", False)
    assert log.read_text() == "ran\n"
    assert git(a, "rev-parse", STATE_REF) == git(bare, "rev-parse", STATE_REF)


@pytest.mark.parametrize("hooked", [False, True], ids=["in-process", "git"])
def test_a_task_branch_the_remote_pruned_loses_its_tracking_ref(tmp_path: Path,
                                                                hooked: bool) -> None:
    bare, work, a = _seeded(tmp_path, hooked)
    for t in ("task-1", "task-2"):
        git(work, "push", "-q", "origin", f"main:refs/heads/liza/{t}")
    got = transport.fetch_board(a, remote_of(a, "origin"), integration="main", task_branches=True)
    assert sorted(got.branches) == ["refs/heads/liza/task-1", "refs/heads/liza/task-2",
                                    "refs/heads/main"]
    git(bare, "update-ref", "-d", "refs/heads/liza/task-2")
    got = transport.fetch_board(a, remote_of(a, "origin"), integration="main", task_branches=True)
    assert sorted(got.branches) == ["refs/heads/liza/task-1", "refs/heads/main"]
    assert git(a, "for-each-ref", "--format=%(refname)", "refs/remotes/origin/liza-tasks/") \
        == "refs/remotes/origin/liza-tasks/task-1"
    # and a sync afterwards is an ordinary one
    h = liza(a, agent="a1")
    h.do(Note, message="after the prune")
    assert engine.sync(h.store, remote_of(h.store, "origin")).pushed
    assert git(bare, "rev-parse", STATE_REF) == git(a, "rev-parse", STATE_REF)


def test_a_branch_with_objects_this_clone_lacks_is_fetched_by_git(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bare, work = seed(tmp_path)
    a = clone(bare, tmp_path / "a")
    (work / "code.txt").write_text("new work\n")
    git(work, "add", "code.txt")
    git(work, "commit", "-q", "-m", "work")
    git(work, "push", "-q", "origin", "main")
    trace = _traced(monkeypatch, tmp_path)
    got = transport.fetch_board(a, remote_of(a, "origin"), integration="main")
    assert trace.exists()  # code objects: git's fetch, not the board's copy
    head = git(work, "rev-parse", "main")
    assert got.branches["refs/heads/main"] == head
    assert git(a, "cat-file", "-t", head) == "commit"
    _whole(a)


def test_a_locked_remote_ref_is_a_lost_race_and_nothing_moves(tmp_path: Path) -> None:
    bare, _work = seed(tmp_path)
    a = clone(bare, tmp_path / "a")
    before = git(bare, "rev-parse", STATE_REF)
    ha = liza(a, agent="a1")
    ha.do(Note, message="blocked")
    lock = bare / "refs" / "liza" / "state.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("")  # another push holds the ref
    mine = git(a, "rev-parse", STATE_REF)
    res = transport.push_board(a, remote_of(a, "origin"), mine, before)
    assert res.status == pushresults.PushStatus.STALE and res.needs_replay
    assert git(bare, "rev-parse", STATE_REF) == before
    lock.unlink()
    assert transport.push_board(a, remote_of(a, "origin"), mine, before).status == pushresults.PushStatus.OK
    assert git(bare, "rev-parse", STATE_REF) == mine
    _whole(bare)


def test_a_first_push_copies_the_whole_board(tmp_path: Path) -> None:
    _bare, work = seed(tmp_path)
    empty = tmp_path / "empty.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(empty))
    tip = git(work, "rev-parse", STATE_REF)
    res = transport.push_board(work, remote_of(work, str(empty)), tip, None)
    assert res.status == pushresults.PushStatus.OK and res.summary == "[new reference]"
    assert git(empty, "rev-parse", STATE_REF) == tip
    _whole(empty)
    fresh = tmp_path / "fresh"
    git(tmp_path, "init", "-q", "-b", "main", str(fresh))
    got = transport.fetch_board(fresh, remote_of(fresh, str(empty)))
    assert got.new_oid == tip
    _whole(fresh)


@pytest.mark.parametrize("hooked", [False, True], ids=["in-process", "git"])
def test_a_pruned_tracking_ref_frees_its_name_for_the_board(tmp_path: Path, hooked: bool) -> None:
    bare, work, a = _seeded(tmp_path, hooked)
    head = git(a, "rev-parse", "HEAD")
    git(a, "update-ref", "-d", "refs/remotes/origin/liza/state")
    git(a, "update-ref", "refs/remotes/origin/liza/state/old", head)  # a stale ref in the way
    got = transport.fetch_board(a, remote_of(a, "origin"))
    assert got.new_oid == git(bare, "rev-parse", STATE_REF) == git(work, "rev-parse", STATE_REF)
    assert git(a, "for-each-ref", "--format=%(refname)", "refs/remotes/origin/liza/") \
        == "refs/remotes/origin/liza/state"


@pytest.mark.parametrize("hooked", [False, True], ids=["in-process", "git"])
def test_a_locked_tracking_ref_fails_the_fetch_as_a_race(tmp_path: Path, hooked: bool) -> None:
    bare, _work, a = _seeded(tmp_path, hooked)
    hb = liza(clone(bare, tmp_path / "b"), agent="b1")
    hb.do(Note, message="news")
    engine.sync(hb.store, remote_of(hb.store, "origin"))
    before = git(a, "rev-parse", "refs/remotes/origin/liza/state")
    lock = a / ".git" / "refs" / "remotes" / "origin" / "liza" / "state.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("")  # another process is writing it, and never finishes
    with pytest.raises(ConcurrencyConflict):
        transport.fetch_board(a, remote_of(a, "origin"))
    lock.unlink()
    assert git(a, "rev-parse", "refs/remotes/origin/liza/state") == before
    assert transport.fetch_board(a, remote_of(a, "origin")).new_oid == git(bare, "rev-parse", STATE_REF)
