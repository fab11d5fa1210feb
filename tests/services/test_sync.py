"""Sharing the board through a git remote: gitliza/services/sync/ and `git liza sync|pull|push`.

Every test uses real repositories: a bare remote (a path, or git:// through a real `git daemon`),
clones made by `git clone`, and the real git executable for fetch and push.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pygit2
import pytest

from gitliza.services.sync import engine
from gitliza.services.sync.replay import Rebuilt
from gitliza.services.sync.report import (AHEAD, BEHIND, FAST_FORWARD, NO_BOARD, PUSHED, REPLAYED,
                                          UP_TO_DATE, SyncGaveUp)
from gitliza.services.api import Liza
from gitliza.services.autosync import OpDropped, after_commit
from gitliza.core import clock
from gitliza.core.encoding import record
from gitliza.core.ops import Add, Claim, Init, Note, Register
from gitliza.core.states import TaskState
from gitliza.errors import ConcurrencyConflict, GitFailure, ValidationError
from gitliza.git.worktrees import tasktrees as worktrees
from gitliza.git.remotes import pushresults
from gitliza.git.remotes import transport
from gitliza.git.worktrees import listing as worktree_list
from gitliza.git.store import STATE_REF, Store
from tests.conftest import git, remote_of
from tests.gitdaemon import GitDaemon, git_daemon  # noqa: F401  (the fixture)

T0 = "2030-01-01T00:00:00Z"


class Clock:
    """A fake clock for ops: one second later on every call, from `start` (+ `offset` seconds)."""

    def __init__(self, start: str = T0, offset: int = 0) -> None:
        self.t = clock.to_epoch(start) + offset

    def __call__(self) -> str:
        self.t += 1
        return clock.from_epoch(self.t)


def liza(path: Path, agent: str = "human", now: Clock | None = None) -> Liza:
    return Liza.open(path, agent, now=now or Clock())


def seed(tmp: Path, tasks: int = 4, agents: tuple[str, ...] = ("a1", "b1"),
         now: Clock | None = None) -> tuple[Path, Path]:
    """A bare remote holding `main` and a board (tasks task-1..N ready, coder agents)."""
    bare = tmp / "remote.git"
    git(tmp, "init", "-q", "--bare", "-b", "main", str(bare))
    work = tmp / "seed"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    (work / "README.md").write_text("project\n")
    git(work, "add", "README.md")
    git(work, "commit", "-q", "-m", "initial")
    git(work, "remote", "add", "origin", str(bare))
    git(work, "push", "-q", "origin", "main")
    h = liza(work, now=now or Clock())
    h.do(Init, goal="ship it")
    for a in agents:
        h.do(Register, agent=a, role="coder")
    for i in range(1, tasks + 1):
        h.do(Add, task=f"task-{i}", description=f"do {i}", spec_ref="spec.md", done_when="tests",
             scope="src", ready=True)
    engine.sync(h.store, remote_of(h.store, "origin"))
    return bare, work


def clone(bare: Path | str, dest: Path, configure: bool = True) -> Path:
    git(dest.parent, "clone", "-q", str(bare), str(dest))
    engine.pull(Store.discover(dest), remote_of(Store.discover(dest), "origin"))
    if configure:
        git(dest, "config", "liza.remote", "origin")
    return dest


def head(path: Path) -> str:
    return git(path, "rev-parse", "HEAD")


def tip(path: Path | str, ref: str = STATE_REF) -> str | None:
    out = git(path, "rev-parse", "--verify", "--quiet", ref, check=False)
    return out or None


def chain(path: Path) -> list[pygit2.Commit]:
    return list(Store.discover(path).history())


def assert_linear_and_verified(path: Path) -> None:
    commits = chain(path)
    assert all(len(c.parents) == 1 for c in commits[:-1]) and not commits[-1].parents
    from gitliza.services.verify.engine import verify
    rep = verify(Store.discover(path), progress=False)
    assert rep.commits == len(commits)


def cli(cwd: Path, *args: str, agent: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if agent:
        env["LIZA_AGENT_ID"] = agent
    return subprocess.run([sys.executable, "-m", "gitliza", *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=120)


# --------------------------------------------------------------------------------------------------
# The three basic cases


def test_remote_without_a_board_receives_ours_then_up_to_date(tmp_path: Path) -> None:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    git(work, "remote", "add", "origin", str(bare))
    store = Store.discover(work)
    assert engine.sync(store, remote_of(store)).action == NO_BOARD
    liza(work).do(Init, goal="g")
    rep = engine.sync(store, remote_of(store))
    assert rep.action == PUSHED and rep.pushed and rep.remote_before is None
    assert tip(bare) == tip(work) == rep.remote_after
    again = engine.sync(store, remote_of(store))
    assert again.action == UP_TO_DATE and not again.pushed


def test_clone_fast_forwards_then_pushes(tmp_path: Path) -> None:
    bare, _ = seed(tmp_path)
    a = clone(bare, tmp_path / "a")
    assert tip(a) == tip(bare)
    b = clone(bare, tmp_path / "b")
    liza(a, now=Clock(offset=100)).do(Note, message="from a")
    rep = engine.sync(Store.discover(a), remote_of(Store.discover(a)))
    assert rep.action == PUSHED and tip(bare) == tip(a)
    rep = engine.pull(Store.discover(b), remote_of(Store.discover(b)))
    assert rep.action == FAST_FORWARD and rep.fetched == 1 and tip(b) == tip(bare)


def test_pull_never_pushes_and_push_never_rewrites(tmp_path: Path) -> None:
    bare, _ = seed(tmp_path)
    a = clone(bare, tmp_path / "a")
    b = clone(bare, tmp_path / "b")
    liza(a, now=Clock(offset=100)).do(Note, message="a")
    assert engine.pull(Store.discover(a), remote_of(Store.discover(a))).action == AHEAD
    assert engine.push(Store.discover(a), remote_of(Store.discover(a))).action == PUSHED
    liza(b, now=Clock(offset=200)).do(Note, message="b")
    before = tip(b)
    with pytest.raises(ConcurrencyConflict):
        engine.push(Store.discover(b), remote_of(Store.discover(b)))  # diverged: push alone refuses, nothing moves
    assert tip(b) == before and tip(bare) == tip(a)
    rep = engine.pull(Store.discover(b), remote_of(Store.discover(b)))  # replays locally, does not push
    assert rep.action == REPLAYED and not rep.pushed and tip(bare) == tip(a)
    assert [r.op for r in rep.replayed] == ["note"] and rep.replayed[0].original == before
    assert engine.push(Store.discover(b), remote_of(Store.discover(b))).action == PUSHED and tip(bare) == tip(b)
    assert engine.push(Store.discover(a), remote_of(Store.discover(a))).action == BEHIND


def test_unrelated_boards_are_refused(tmp_path: Path) -> None:
    bare, _ = seed(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    git(other, "remote", "add", "origin", str(bare))
    liza(other).do(Init, goal="another goal")
    before = tip(other)
    with pytest.raises(ValidationError, match="share no history"):
        engine.sync(Store.discover(other), remote_of(Store.discover(other)))
    assert tip(other) == before


# --------------------------------------------------------------------------------------------------
# Divergence


@pytest.mark.slow
def test_diverged_by_300_ops_each_reconcile_into_one_linear_history(tmp_path: Path) -> None:
    agents = tuple(f"a{i}" for i in range(1, 11)) + tuple(f"b{i}" for i in range(1, 11))
    bare, _ = seed(tmp_path, tasks=15, agents=agents)
    a = clone(bare, tmp_path / "a")
    b = clone(bare, tmp_path / "b")
    base = head(a)
    # B's ops are made LATER (by the clock) than A's, and still win: the remote's order rules.
    ca, cb = Clock(offset=1000), Clock(offset=1100)
    for i in range(1, 11):  # b1..b10 claim task-6..15
        liza(b, f"b{i}", cb).do(Claim, task=f"task-{i + 5}", worktree=f".worktrees/task-{i + 5}",
                                base_commit=base)
    hb = liza(b, now=cb)
    for i in range(290):
        hb.do(Note, message=f"b note {i}")
    assert engine.sync(Store.discover(b), remote_of(Store.discover(b))).action == PUSHED
    for i in range(1, 11):  # a1..a10 claim task-1..10: task-6..10 collide with B
        liza(a, f"a{i}", ca).do(Claim, task=f"task-{i}", worktree=f".worktrees/task-{i}",
                                base_commit=base)
    ha = liza(a, now=ca)
    for i in range(290):
        ha.do(Note, message=f"a note {i}")
    a_before = tip(a)
    rep = engine.sync(Store.discover(a), remote_of(Store.discover(a)))
    assert rep.action == REPLAYED and rep.pushed and rep.fetched == 300
    assert len(rep.replayed) == 295
    dropped = {(d.op, d.actor, d.task) for d in rep.dropped}
    assert dropped == {("claim", f"a{i}", f"task-{i}") for i in range(6, 11)}
    for d in rep.dropped:
        assert d.stand_down and d.code == "INVALID_TRANSITION" and "already claimed by b" in d.reason
    assert a_before in {d.original for d in rep.dropped} | {r.original for r in rep.replayed}
    assert tip(a) == tip(bare) == rep.local_after
    assert len(chain(a)) == len(chain(b)) + 295
    assert_linear_and_verified(a)
    board = liza(a).board()
    for i in range(1, 16):
        t = board.task(f"task-{i}")
        assert t is not None and t.status == TaskState.CLAIMED
        assert t.assigned_to == (f"a{i}" if i <= 5 else f"b{i - 5}")
    # Replayed ops keep their recorded time (never re-stamped).
    repo_a = pygit2.Repository(str(a))
    for r in rep.replayed:
        original = record.parse(repo_a[r.original].message).op  # type: ignore[attr-defined]
        now = record.parse(repo_a[r.commit].message).op  # type: ignore[attr-defined]
        assert now == original and now.time == r.time
    # A's lost claims were made 100 s BEFORE B's: the remote's order won, not the clock.
    assert all(d.time < "2030-01-01T00:18:20Z" for d in rep.dropped)
    # B catches up by a fast-forward: one history everywhere.
    assert engine.sync(Store.discover(b), remote_of(Store.discover(b))).action == FAST_FORWARD and tip(b) == tip(a)


def lose_a_claim(tmp_path: Path) -> tuple[Path, worktrees.TaskWorktree]:
    """b1 claims task-1 and pushes; then a1, in clone `a`, claims it too, in a real worktree."""
    bare, _ = seed(tmp_path, tasks=2)
    a = clone(bare, tmp_path / "a")
    b = clone(bare, tmp_path / "b")
    base = head(a)
    liza(b, "b1", Clock(offset=50)).do(Claim, task="task-1", worktree=".worktrees/task-1",
                                       base_commit=base)
    engine.sync(Store.discover(b), remote_of(Store.discover(b)))
    wt = worktrees.add_task_worktree(pygit2.Repository(str(a)), "task-1", pygit2.Oid(hex=base))
    liza(a, "a1", Clock(offset=60)).do(Claim, task="task-1", worktree=".worktrees/task-1",
                                       base_commit=base)
    return a, wt


def test_a_lost_claim_stands_down_and_its_clean_worktree_goes(tmp_path: Path) -> None:
    a, wt = lose_a_claim(tmp_path)
    repo_a = pygit2.Repository(str(a))
    rep = engine.sync(Store.discover(a), remote_of(Store.discover(a)))
    [d] = rep.dropped
    assert d.stand_down and d.actor == "a1" and d.worktree and d.worktree.startswith("removed")
    assert not wt.path.exists() and "task-1" not in worktree_list.list_task_branches(repo_a)
    assert "a1 must stand down from task-1" in d.describe()


def test_a_lost_claim_with_work_in_its_worktree_is_flagged_not_removed(tmp_path: Path) -> None:
    a, wt = lose_a_claim(tmp_path)
    (wt.path / "work.py").write_text("unsaved work\n")
    [d] = engine.sync(Store.discover(a), remote_of(Store.discover(a))).dropped
    assert d.stand_down and d.worktree and d.worktree.startswith("kept") and "dirty" in d.worktree
    assert (wt.path / "work.py").exists()


def test_ops_depending_on_a_dropped_op_are_dropped_too(tmp_path: Path) -> None:
    bare, _ = seed(tmp_path, tasks=1)
    a = clone(bare, tmp_path / "a")
    b = clone(bare, tmp_path / "b")
    liza(b, now=Clock(offset=50)).do(Add, task="task-9", description="from b")
    engine.sync(Store.discover(b), remote_of(Store.discover(b)))
    ha = liza(a, now=Clock(offset=10))
    ha.do(Add, task="task-9", description="from a")
    ha.do(Note, message="about 9", for_task="task-9")  # applies: task-9 exists (B's)
    ha.do(Note, message="unrelated")
    rep = engine.sync(Store.discover(a), remote_of(Store.discover(a)))
    assert [(d.op, d.code) for d in rep.dropped] == [("add", "VALIDATION")]
    assert "task task-9 already exists" in rep.dropped[0].reason
    assert [r.op for r in rep.replayed] == ["note", "note"]
    board = liza(a).board()
    t = board.task("task-9")
    assert t is not None and t.description == "from b"


# --------------------------------------------------------------------------------------------------
# Failure safety


def behind_by_one_note(tmp_path: Path) -> tuple[Path, Path]:
    """(remote, clone a) where the remote got a note from clone b that a has not fetched."""
    bare, _ = seed(tmp_path)
    a = clone(bare, tmp_path / "a")
    b = clone(bare, tmp_path / "b")
    liza(b, now=Clock(offset=50)).do(Note, message="b")
    engine.sync(Store.discover(b), remote_of(Store.discover(b)))
    return bare, a


def test_a_failure_midway_leaves_the_local_ref_alone(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    bare, a = behind_by_one_note(tmp_path)
    liza(a, now=Clock(offset=60)).do(Note, message="a")
    before = tip(a)

    def boom(*_a: Any, **_k: Any) -> Any:
        raise GitFailure("disk on fire")
    monkeypatch.setattr(Store, "stage_commit", boom)
    with pytest.raises(GitFailure):
        engine.sync(Store.discover(a), remote_of(Store.discover(a)))
    assert tip(a) == before
    monkeypatch.undo()
    # Unreachable remote: nothing moves either.
    git(a, "remote", "set-url", "origin", str(tmp_path / "nowhere.git"))
    with pytest.raises(GitFailure):
        engine.sync(Store.discover(a), remote_of(Store.discover(a)))
    assert tip(a) == before


def test_a_local_commit_during_the_replay_is_kept(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    bare, a = behind_by_one_note(tmp_path)
    ha = liza(a, now=Clock(offset=60))
    ha.do(Note, message="a1")
    real = engine.replay
    calls = []

    def racing(*args: Any, **kw: Any) -> Rebuilt:
        out = real(*args, **kw)
        if not calls:
            ha.do(Note, message="a2 (committed while the sync replayed)")
        calls.append(1)
        return out
    monkeypatch.setattr(engine, "replay", racing)
    rep = engine.sync(Store.discover(a), remote_of(Store.discover(a)), sleep=lambda _s: None)
    assert rep.rounds == 2 and len(calls) == 2
    messages = [record.parse(c.message).op for c in chain(a)[:2]]
    assert [getattr(m, "message") for m in messages] == ["a2 (committed while the sync replayed)",
                                                         "a1"]
    assert tip(bare) == tip(a)


def test_a_fetch_that_loses_the_tracking_ref_to_another_sync_is_a_lost_round(
        tmp_path: Path) -> None:
    """Two syncs in one clone (two supervisors, a heartbeat thread): git's fetch finds the
    tracking ref locked by the other; the sync fetches again in its next round."""
    bare, a = behind_by_one_note(tmp_path)
    liza(a, now=Clock(offset=60)).do(Note, message="a")
    lock = a / ".git" / "refs" / "remotes" / "origin" / "liza" / "state.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("held by the other sync\n")
    rounds: list[float] = []

    def other_sync_done(seconds: float) -> None:
        rounds.append(seconds)
        lock.unlink()
    rep = engine.sync(Store.discover(a), remote_of(Store.discover(a)), sleep=other_sync_done)
    assert len(rounds) == 1 and rep.rounds == 2
    assert rep.pushed and tip(bare) == tip(a)


def test_gives_up_after_the_bounded_rounds_with_exit_2(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    bare, _ = seed(tmp_path)
    a = clone(bare, tmp_path / "a")
    liza(a, now=Clock(offset=60)).do(Note, message="a")

    def stale(path: Any, remote: Any, local: str, expected: str | None, *a: Any,
              **k: Any) -> pushresults.PushResult:
        return pushresults.PushResult(pushresults.PushStatus.STALE, str(remote), STATE_REF, local,
                                      expected, "[rejected] (stale info)")
    monkeypatch.setattr(transport, "push_board", stale)
    with pytest.raises(SyncGaveUp) as info:
        engine.sync(Store.discover(a), remote_of(Store.discover(a)), rounds=3, sleep=lambda _s: None)
    assert info.value.exit_code == 2 and info.value.report.rounds == 3


# --------------------------------------------------------------------------------------------------
# Auto-sync and the CLI


def test_auto_sync_reports_this_op_dropped(tmp_path: Path) -> None:
    bare, _ = seed(tmp_path, tasks=2)
    a = clone(bare, tmp_path / "a")
    b = clone(bare, tmp_path / "b")
    base = head(a)
    lb = liza(b, "b1", Clock(offset=50))
    lb.after_commit.append(after_commit)
    lb.do(Claim, task="task-1", worktree=".worktrees/task-1", base_commit=base)
    assert tip(bare) == tip(b)  # auto-pushed
    la = liza(a, "a1", Clock(offset=60))
    la.after_commit.append(after_commit)
    with pytest.raises(OpDropped, match="claim task-1 was committed locally, then dropped") as e:
        la.do(Claim, task="task-1", worktree=".worktrees/task-1", base_commit=base)
    assert e.value.exit_code == 1 and e.value.dropped.stand_down
    assert tip(a) == tip(bare) == tip(b)
    la.do(Claim, task="task-2", worktree=".worktrees/task-2", base_commit=base)  # another one
    assert tip(bare) == tip(a)


def test_auto_sync_offline_keeps_the_op_and_warns(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    bare, _ = seed(tmp_path)
    a = clone(bare, tmp_path / "a")
    git(a, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    la = liza(a, now=Clock(offset=60))
    la.after_commit.append(after_commit)
    done = la.do(Note, message="offline")
    assert tip(a) == done.commit
    assert "committed locally but not shared" in capsys.readouterr().err


def test_cli_auto_sync_no_sync_and_a_dropped_command_exits_1(tmp_path: Path) -> None:
    bare, _ = seed(tmp_path)
    a = clone(bare, tmp_path / "a")
    b = clone(bare, tmp_path / "b")
    r = cli(a, "note", "shared at once")
    assert r.returncode == 0, r.stderr
    assert tip(bare) == tip(a)
    r = cli(a, "note", "kept here", "--no-sync")
    assert r.returncode == 0 and tip(bare) != tip(a)
    git(b, "config", "--unset", "liza.remote")
    git(b, "config", "sync.remote", "origin")  # the alias works too
    r = cli(b, "add", "task-9", "--desc", "from b")
    assert r.returncode == 0, r.stderr
    r = cli(a, "add", "task-9", "--desc", "from a")
    assert r.returncode == 1
    assert "add task-9 was committed locally, then dropped" in r.stderr
    assert "already exists" in r.stderr
    assert tip(bare) == tip(a)  # the --no-sync note went along with this sync
    r = cli(a, "sync", "--json")
    data = json.loads(r.stdout)
    assert r.returncode == 0 and data["action"] == "up-to-date" and data["dropped"] == []


def test_cli_sync_json_reports_replayed_and_dropped(tmp_path: Path) -> None:
    bare, _ = seed(tmp_path)
    a = clone(bare, tmp_path / "a", configure=False)
    b = clone(bare, tmp_path / "b", configure=False)
    assert cli(b, "add", "task-9", "--desc", "b").returncode == 0
    assert cli(b, "push").returncode == 0
    assert cli(a, "add", "task-9", "--desc", "a").returncode == 0
    assert cli(a, "note", "hello").returncode == 0
    r = cli(a, "sync", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["action"] == "replayed" and data["pushed"] and data["fetched"] == 1
    assert [d["op"] for d in data["dropped"]] == ["add"]
    assert [x["op"] for x in data["replayed"]] == ["note"]
    assert data["remote_after"] == tip(bare) == tip(a)
    r = cli(b, "pull")
    assert r.returncode == 0 and "fast-forwarded" in r.stdout and tip(b) == tip(a)


def test_commands_without_a_remote_do_not_import_the_sync_engine(repo: Path) -> None:
    code = textwrap.dedent("""
        import sys
        from gitliza.cli.commands import Env
        from gitliza.core.ops import Init
        env = Env(path=__import__("pathlib").Path("."))
        env.liza().do(Init, goal="g")
        print("gitliza.services.sync" in sys.modules, "gitliza.git.remotes.transport" in sys.modules)
    """)
    r = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True,
                       timeout=60)
    assert r.stdout.split() == ["False", "False"], r.stderr


# --------------------------------------------------------------------------------------------------
# Real network transport and concurrency


@pytest.mark.slow
def test_offline_clone_reconnects_over_git_daemon(tmp_path: Path, git_daemon: GitDaemon) -> None:
    remote = git_daemon.init_bare("board.git")
    _, seed_work = seed(tmp_path, tasks=3, agents=("a1", "c1"))
    git(seed_work, "push", "-q", str(remote), "main", "refs/liza/state:refs/liza/state")
    url = git_daemon.url("board.git")
    a = clone(url, tmp_path / "a")
    c = clone(url, tmp_path / "c")
    base = head(a)
    git_daemon.stop()  # c goes offline: its commands keep working locally
    lc = liza(c, "c1", Clock(offset=100))
    lc.after_commit.append(after_commit)
    lc.do(Claim, task="task-1", worktree=".worktrees/task-1", base_commit=base)
    hc = liza(c, now=Clock(offset=101))
    hc.after_commit.append(after_commit)
    for i in range(5):
        hc.do(Note, message=f"offline {i}")
    # Meanwhile a1 claims task-1 on the shared board (through the path, the daemon being down).
    git(a, "remote", "set-url", "origin", str(remote))
    liza(a, "a1", Clock(offset=200)).do(Claim, task="task-1", worktree=".worktrees/task-1",
                                        base_commit=base)
    assert engine.sync(Store.discover(a), remote_of(Store.discover(a))).pushed
    # c reconnects (the daemon comes back, on another port).
    git_daemon.start()
    git(c, "remote", "set-url", "origin", git_daemon.url("board.git"))
    r = cli(c, "sync", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert [(d["op"], d["actor"], d["stand_down"]) for d in data["dropped"]] == \
        [("claim", "c1", True)]
    assert len(data["replayed"]) == 5 and data["pushed"]
    assert tip(c) == tip(remote)
    assert_linear_and_verified(c)


WORKER = textwrap.dedent("""
    import json, sys, time
    from gitliza.git.remotes.remote import resolve
    from gitliza.services.sync import engine
    from gitliza.services.api import Liza
    from gitliza.services.autosync import OpDropped, after_commit
    from gitliza.core.ops import Claim
    from gitliza.core.states import TaskState
    from gitliza.errors import LizaError

    clone, base, agents, budget = sys.argv[1], sys.argv[2], sys.argv[3].split(","), sys.argv[4]
    deadline = time.monotonic() + float(budget)
    libs = {a: Liza.open(clone, a) for a in agents}
    for lib in libs.values():
        lib.after_commit.append(after_commit)
    store = libs[agents[0]].store
    stats = {"won": 0, "dropped": 0, "refused": 0, "sync_failures": 0}

    def synced():
        try:
            engine.sync(store, resolve(clone))
            return True
        except LizaError:
            stats["sync_failures"] += 1
            return False

    while time.monotonic() < deadline:
        board = store.board()[0]
        free = sorted(t.id for t in board.tasks() if t.status == TaskState.UNCLAIMED)
        idle = [a for a in agents if board.agent(a).current_task is None]
        if not free or not idle:
            if synced():
                board = store.board()[0]
                if not any(t.status == TaskState.UNCLAIMED for t in board.tasks()):
                    break
                if not any(board.agent(a).current_task is None for a in agents):
                    break
            continue
        try:  # everyone goes for the same (first) task: maximal contention
            libs[idle[0]].do(Claim, task=free[0], worktree=".worktrees/" + free[0],
                             base_commit=base)
            stats["won"] += 1
        except OpDropped:
            stats["dropped"] += 1
        except LizaError:
            stats["refused"] += 1
    while time.monotonic() < deadline and not synced():
        pass
    print(json.dumps(stats))
""")


@pytest.mark.slow
def test_concurrent_agents_in_three_clones_claim_each_task_exactly_once(tmp_path: Path) -> None:
    agents = {name: [f"{name}{i}" for i in range(1, 5)] for name in ("x", "y", "z")}
    bare, _ = seed(tmp_path, tasks=9, agents=tuple(a for group in agents.values() for a in group))
    clones = {name: clone(bare, tmp_path / name) for name in agents}
    base = head(clones["x"])
    procs = {name: subprocess.Popen(
        [sys.executable, "-c", WORKER, str(path), base, ",".join(agents[name]), "40"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=path)
        for name, path in clones.items()}
    stats = {}
    for name, p in procs.items():
        out, err = p.communicate(timeout=90)
        assert p.returncode == 0, err
        stats[name] = json.loads(out.strip().splitlines()[-1])
    print("claim stats per clone:", stats)  # contention seen (dropped/refused), for -s runs
    for path in clones.values():  # everyone converges on one board
        engine.sync(Store.discover(path), remote_of(Store.discover(path)))
    for path in clones.values():
        engine.sync(Store.discover(path), remote_of(Store.discover(path)))
    tips = {tip(path) for path in clones.values()}
    assert tips == {tip(bare)}
    x = clones["x"]
    board = liza(x).board()
    holders = [t.assigned_to for t in board.tasks()]
    assert all(t.status == TaskState.CLAIMED for t in board.tasks()) and len(holders) == 9
    assert len(set(holders)) == 9  # nobody holds two tasks
    claims = [record.parse(c.message).op for c in chain(x)]
    claimed = sorted(getattr(op, "task") for op in claims if op.NAME == "claim")
    assert claimed == sorted(f"task-{i}" for i in range(1, 10))  # each claimed exactly once
    assert sum(s["won"] for s in stats.values()) - sum(s["dropped"] for s in stats.values()) <= 9
    assert_linear_and_verified(x)
    git(bare, "fsck", "--no-progress", "--no-dangling")  # racing pushes left it whole


def test_cli_claim_lost_to_another_machine_moves_on_to_the_next_task(tmp_path: Path) -> None:
    bare, _ = seed(tmp_path, tasks=2)
    a = clone(bare, tmp_path / "a")
    b = clone(bare, tmp_path / "b")
    for c in (a, b):
        git(c, "branch", "integration", "main")
    r = cli(b, "claim", "task-1", agent="b1")
    assert r.returncode == 0, r.stderr
    # a has not fetched: task-1 looks free there, is claimed locally, then dropped by the sync.
    r = cli(a, "claim", "task-1", agent="a1")
    assert r.returncode == 1 and "dropped when syncing with origin" in r.stderr, r.stderr
    assert not (a / ".worktrees" / "task-1").exists()
    r = cli(a, "claim", "--json", agent="a1")  # the best candidate, after the fresh sync
    assert r.returncode == 0, r.stderr
    assert tip(a) == tip(bare)
    engine.pull(Store.discover(b), remote_of(Store.discover(b)))
    board = liza(b).board()
    t1, t2 = board.task("task-1"), board.task("task-2")
    assert t1 is not None and t1.assigned_to == "b1" and t2 is not None and t2.assigned_to == "a1"
    assert (a / ".worktrees" / "task-2").is_dir()
