"""The remote follower (gitliza/services/sync/follower.py): real clones of a real bare remote.

A check asks the remote's refs/liza/* with one ls-remote and syncs only when they moved (or when
the local board holds ops the remote lacks); one follower leads per clone (a flock), another takes
over when it ends; the contact record says how long the remote has been silent, and `cut_off`
turns a silence longer than half a lease into a reason not to claim.
"""
from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pygit2

from gitliza.core.ops import Add
from gitliza.core.ops.goal import ConfigSet
from gitliza.git.remotes.remote import resolve
from gitliza.git.store import Store
from gitliza.governance.watch import Watcher
from gitliza.services.sync import droplog, engine, follower
from tests.governance.receiver import Receiver
from tests.conftest import git, remote_of
from tests.team.procs import until
from tests.services.test_sync import Clock, clone, liza, seed, tip





def test_a_check_syncs_only_when_the_remote_moved(tmp_path: Path) -> None:
    bare, _seed = seed(tmp_path)
    a, b = clone(bare, tmp_path / "a"), clone(bare, tmp_path / "b")
    sb = Store.discover(b)
    rem = resolve(b, "origin")
    assert follower.check(sb, rem) is None  # nothing moved: no fetch, no sync
    ha = liza(a)
    ha.do(Add, task="task-new", description="added on A", spec_ref="spec.md",
          done_when="tests", scope="src", ready=True)
    engine.sync(ha.store, remote_of(ha.store, "origin"))  # A shares it
    assert tip(b) != tip(bare)
    report = follower.check(sb, rem)
    assert report is not None and tip(b) == tip(bare)
    assert liza(b).board().task("task-new") is not None
    assert follower.check(sb, rem) is None  # and quiet again


def test_a_check_pushes_what_the_local_board_holds_and_the_remote_lacks(tmp_path: Path) -> None:
    bare, _seed = seed(tmp_path)
    b = clone(bare, tmp_path / "b")
    h = liza(b)  # in process: no auto-sync, as an auto-sync that lost every race
    h.do(Add, task="task-local", description="local", spec_ref="spec.md", done_when="tests",
         scope="src", ready=True)
    assert tip(b) != tip(bare)
    report = follower.check(Store.discover(b), resolve(b, "origin"))
    assert report is not None and tip(bare) == tip(b)


def test_one_follower_leads_per_clone_and_another_takes_over(tmp_path: Path) -> None:
    bare, _seed = seed(tmp_path)
    b = clone(bare, tmp_path / "b")
    liza(b).do(ConfigSet, key="follow_interval", value="1")
    lines: list[str] = []

    def open_store() -> Store:
        return Store(pygit2.Repository(str(b)))
    first = follower.RemoteFollower(open_store, "origin", lines.append).start()
    until(lambda: first.checks > 0, "the first follower never checked")
    second = follower.RemoteFollower(open_store, "origin", lines.append).start()
    until(lambda: second.tries >= 3, "the second follower never tried the lock")
    assert second.checks == 0 and not second.leading and first.leading
    first.stop()
    until(lambda: second.checks > 0, "the second follower never took over")
    second.stop()
    contact = follower.read_contact(pygit2.Repository(str(b)))
    assert contact is not None and contact.error is None and contact.ok is not None


def test_a_silent_remote_is_recorded_and_cuts_claims_off_after_half_a_lease(
        tmp_path: Path) -> None:
    bare, _seed = seed(tmp_path)
    b = clone(bare, tmp_path / "b")
    repo = pygit2.Repository(str(b))
    lines: list[str] = []
    f = follower.RemoteFollower(lambda: Store(pygit2.Repository(str(b))), "origin", lines.append)
    store = Store.discover(b)
    rem = resolve(b, "origin")
    assert not f._check(store, rem, False)  # answered
    ok = follower.read_contact(repo)
    assert ok is not None and ok.error is None
    assert follower.cut_off(repo, "origin", 20, 1, ok.ok + 1000) is None  # it answers
    git(b, "remote", "set-url", "origin", str(tmp_path / "nowhere.git"))
    rem = resolve(b, "origin")
    assert f._check(store, rem, False) and f._check(store, rem, True)
    assert sum("cannot reach origin" in ln for ln in lines) == 1  # said once per episode
    c = follower.read_contact(repo)
    assert c is not None and c.error is not None and c.ok == ok.ok
    assert follower.cut_off(repo, "origin", 20, 1, c.checked) is None or \
        c.checked - ok.ok > 10  # within half a lease: still claims
    why = follower.cut_off(repo, "origin", 20, 1, ok.ok + 11)
    assert why is not None and "cut off from origin" in why and "not claiming" in why
    assert follower.cut_off(repo, "other", 20, 1, ok.ok + 11) is None  # another remote's record
    # Healed: the next answer ends it.
    git(b, "remote", "set-url", "origin", str(bare))
    assert not f._check(store, resolve(b, "origin"), True)
    assert follower.cut_off(repo, "origin", 20, 1, c.checked + 1000) is None
    assert lines[-1] == "follower: origin answers again"
    raw = json.loads((Path(repo.path) / "liza" / follower.CONTACT).read_text())
    assert raw["error"] is None


def test_dropped_ops_are_said_by_the_follower_raised_as_an_alarm_and_sent(
        tmp_path: Path) -> None:
    """An op acknowledged here and dropped at a later sync (another machine got there first) is
    never silent: the drop record names it, the clone's follower prints it, the watcher fires
    DROPPED_OPS and the escalation webhook receives it, whichever process ran the sync."""
    bare, _seed = seed(tmp_path, tasks=1)
    a = clone(bare, tmp_path / "a", configure=False)
    b = clone(bare, tmp_path / "b", configure=False)
    with Receiver() as rx:
        hb = liza(b, now=Clock(offset=50))
        hb.do(ConfigSet, key="escalation_webhook", value=rx.url)
        hb.do(Add, task="task-9", description="from b", spec_ref="spec.md", done_when="tests",
              scope="src", ready=True)
        engine.sync(hb.store, remote_of(hb.store, "origin"))
        lines: list[str] = []
        repo_a = pygit2.Repository(str(a))
        f = follower.RemoteFollower(lambda: Store(repo_a), "origin", lines.append)
        f._drop_offset = droplog.size(repo_a)
        ha = liza(a, now=Clock(offset=10))
        ha.do(Add, task="task-9", description="from a", spec_ref="spec.md", done_when="tests",
              scope="src", ready=True)  # acknowledged here
        rep = engine.sync(Store.discover(a), remote_of(Store.discover(a), "origin"))  # e.g. an agent's auto-sync
        assert [d.op for d in rep.dropped] == ["add"]
        f._drops(repo_a)
        [said] = lines
        assert said.startswith("follower: DROPPED OPS: 1 acknowledged op(s)") and \
            "add task-9 by human" in said and "already exists" in said
        assert rep.dropped[0].original[:12] in said  # where the dropped record can be read
        f._drops(repo_a)
        assert len(lines) == 1  # said once
        w = Watcher(Store(pygit2.Repository(str(a))), err=io.StringIO(), notify=False,
                    remote=False)
        reports = w.tick()
        assert [r.alert.kind for r in reports if r.event == "fired"].count("DROPPED_OPS") == 1
        assert w.close(drain=60)
        docs = rx.wait_for(1)
        assert [d["event"] for d in docs] == ["DROPPED_OPS"] and "task-9" in docs[0]["line"]
    # A day later the alarm has ended; an entry whose rescue ref the human deleted too.
    entries, _ = droplog.read(repo_a)
    recorded = max(float(e["at"]) for e in droplog.current(entries))
    assert droplog.alerts(repo_a, recorded + droplog.WINDOW + 1) == []


def test_a_remote_that_answers_but_takes_no_push_is_not_a_cut(tmp_path: Path) -> None:
    """A remote that answers the check but whose push does not go through (here its hook refuses
    everything; on a busy fleet, every round of the sync losing the race to other machines'
    pushes) is busy, not silent: the contact record says it answers, and the clone's supervisors
    go on claiming and working. Recorded as silence, the partition rule stopped every agent of a
    loaded fleet (issue 48's scenario: 'cut off from origin for 84s' while it answered)."""
    bare, _seed = seed(tmp_path)
    b = clone(bare, tmp_path / "b")
    hook = bare / "hooks" / "pre-receive"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\necho 'no pushes today' >&2\nexit 1\n")
    hook.chmod(0o755)
    h = liza(b)  # in process: no auto-sync; the follower must push it
    h.do(Add, task="task-local", description="local", spec_ref="spec.md", done_when="tests",
         scope="src", ready=True)
    repo = pygit2.Repository(str(b))
    lines: list[str] = []
    f = follower.RemoteFollower(lambda: Store(pygit2.Repository(str(b))), "origin", lines.append)
    store, rem = Store.discover(b), resolve(b, "origin")
    assert not f._check(store, rem, False) and not f._check(store, rem, False)
    c = follower.read_contact(repo)
    assert c is not None and c.error is None, c
    assert follower.cut_off(repo, "origin", 20, 1, c.checked + 1000) is None
    said = [ln for ln in lines if "answers, but the sync did not finish" in ln]
    assert len(said) == 1 and "no pushes today" in said[0], lines  # once per streak
    assert tip(b) != tip(bare)  # still not shared: the next check tries again
