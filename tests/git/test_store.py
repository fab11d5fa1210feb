"""The state ref store: CAS writes, retries, lock handling, trailers, layout, fsck, --at."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pygit2
import pytest

from gitliza.core.encoding import layout, record
from gitliza.core.ops import Add, Finalize, Init, Register, apply
from gitliza.core.ops.planning import Abandon
from gitliza.errors import ConcurrencyConflict, IllegalTransition, InconsistentState
from gitliza.git.store import JITTER, RETRY_DELAYS, STATE_REF, Store
from tests.conftest import git

T = "2025-01-17T14:00:00Z"


def now() -> str:
    return T


def new_store(repo: Path) -> Store:
    s = Store.discover(repo)
    s.transact(lambda b, t: Init(actor="human", time=t, goal="g"), now)
    s.transact(lambda b, t: Register(actor="human", time=t, agent="planner-1", role="planner"),
               now)
    return s


def add(s: Store, task: str, **kw: Any) -> Any:
    return s.transact(lambda b, t: Add(actor="planner-1", time=t, task=task, description="d",
                                       spec_ref="s", done_when="w", scope="x", **kw), now)


def loose_objects(repo: Path) -> set[str]:
    objs = repo / ".git" / "objects"
    return {str(p) for p in objs.glob("??/*")}


def test_each_transition_is_one_linear_commit_with_readable_trailers(repo: Path) -> None:
    s = new_store(repo)
    for i in range(5):
        add(s, f"task-{i}", ready=True)
    s.transact(lambda b, t: Abandon(actor="planner-1", time=t, task="task-0",
                                    reason="multi\nline: reason"), now)
    revs = git(repo, "rev-list", "--parents", STATE_REF).splitlines()
    assert len(revs) == 8
    assert all(len(line.split()) == 2 for line in revs[:-1]) and len(revs[-1].split()) == 1
    ops = git(repo, "log", "--format=%(trailers:key=Liza-Op,valueonly,separator=)",
              STATE_REF).split()
    assert ops == ["abandon"] + ["add"] * 5 + ["register", "init"]
    msg = git(repo, "log", "-1", "--format=%B", STATE_REF)
    import subprocess
    parsed = subprocess.run(["git", "interpret-trailers", "--parse"], input=msg, text=True,
                            capture_output=True, check=True, cwd=repo).stdout
    keys = [line.split(":")[0] for line in parsed.splitlines()]
    assert keys == ["Liza-Op", "Liza-Actor", "Liza-Task", "Liza-From", "Liza-To", "Liza-Time",
                    "Liza-Args"]
    args = json.loads(parsed.splitlines()[-1].split(": ", 1)[1])
    assert args == {"reason": "multi\nline: reason", "task": "task-0"}
    assert record.parse(msg).op.args() == args
    assert git(repo, "fsck", "--strict", "--no-dangling") == ""


def test_every_commit_replays_to_its_tree(repo: Path) -> None:
    s = new_store(repo)
    for i in range(4):
        add(s, f"task-{i}")
    s.transact(lambda b, t: Finalize(actor="planner-1", time=t, task="task-2"), now)
    for commit in s.history():
        parent = commit.parents[0] if commit.parents else None
        rec = record.parse(commit.message)
        out = apply(s.board_at(parent), rec.op)
        record.check_consistent(rec, out.event)
        assert s.build_tree(parent.tree if parent else None, out.changes) == commit.tree.id


def test_refused_op_leaves_ref_and_object_store_untouched(repo: Path) -> None:
    s = new_store(repo)
    add(s, "task-1", ready=True)
    tip, objs = s.tip(), loose_objects(repo)
    with pytest.raises(IllegalTransition):
        s.transact(lambda b, t: Finalize(actor="planner-1", time=t, task="task-1"), now)
    assert s.tip() == tip and loose_objects(repo) == objs


def test_lost_race_is_retried_on_the_new_tip(repo: Path) -> None:
    s, other = new_store(repo), Store.discover(repo)
    calls = []

    def make(board: Any, t: str) -> Any:
        calls.append(board)
        if len(calls) == 1:  # a real concurrent writer moves the ref under us
            add(other, "task-other")
        return Add(actor="planner-1", time=t, task="task-mine", description="d")

    done = s.transact(make, now, sleep=lambda _: None)
    assert done.attempts == 2
    board = s.board()[0]
    assert board.task("task-other") and board.task("task-mine")
    assert calls[1].task("task-other") is not None  # re-applied on the fresh board
    assert git(repo, "rev-list", "--count", STATE_REF) == "4"


def test_conflict_after_every_retry_exits_2_and_changes_nothing_of_ours(repo: Path) -> None:
    s, other = new_store(repo), Store.discover(repo)
    slept: list[float] = []
    n = [0]

    def make(board: Any, t: str) -> Any:
        n[0] += 1
        add(other, f"task-x{n[0]}")
        return Add(actor="planner-1", time=t, task="task-mine", description="d")

    with pytest.raises(ConcurrencyConflict) as exc:
        s.transact(make, now, sleep=slept.append)
    assert exc.value.exit_code == 2 and "nothing was changed" in str(exc.value)
    assert n[0] == len(RETRY_DELAYS) + 1
    # the spec's schedule: immediately, 100 ms, 250 ms, 500 ms (plus jitter)
    assert len(slept) == len(RETRY_DELAYS)
    assert all(d0 <= d <= d0 + JITTER for d, d0 in zip(slept, RETRY_DELAYS))
    assert s.board()[0].task("task-mine") is None


def test_held_lock_is_retried_then_reported_and_a_stale_one_names_the_fix(repo: Path) -> None:
    s = new_store(repo)
    tip = s.tip()
    lock = repo / ".git" / "refs" / "liza" / "state.lock"
    lock.write_text("")
    with pytest.raises(ConcurrencyConflict, match="locked by another writer"):
        add(s, "task-1")
    old = time.time() - 60
    os.utime(lock, (old, old))
    with pytest.raises(ConcurrencyConflict, match="crashed") as exc:
        s.transact(lambda b, t: Add(actor="planner-1", time=t, task="task-1", description="d"),
                   now, sleep=lambda _: None)
    assert "doctor --fix" in str(exc.value)
    assert s.tip() == tip
    lock.unlink()
    add(s, "task-1")


def test_fan_out_and_archive_layout(repo: Path) -> None:
    s = new_store(repo)
    for i in range(60):
        add(s, f"task-{i}", ready=True)
    s.transact(lambda b, t: Abandon(actor="planner-1", time=t, task="task-7", reason="r"), now)
    paths = git(repo, "ls-tree", "-r", "--name-only", STATE_REF).splitlines()
    for p in paths:
        assert p == layout.FORMAT_FILE or layout.parse_path(p) is not None, p
    assert "archive/" in next(p for p in paths if p.endswith("/task-7.toml"))
    tasks = [p for p in paths if p.startswith("tasks/")]
    assert len(tasks) == 59 and all(len(p.split("/")) == 4 for p in tasks)
    assert len(git(repo, "ls-tree", f"{STATE_REF}:tasks").splitlines()) <= 16
    board = s.board()[0]
    assert board.task("task-7").status == "ABANDONED" and len(board.keys("tasks")) == 59


def test_reading_past_revisions(repo: Path) -> None:
    s = new_store(repo)
    add(s, "task-1")
    add(s, "task-2")
    assert s.board("refs/liza/state~1")[0].task("task-2") is None
    assert s.board("refs/liza/state~1")[0].task("task-1") is not None
    assert s.board(git(repo, "rev-parse", "refs/liza/state~3"))[0].agent("planner-1") is None


def test_unknown_format_is_refused(repo: Path) -> None:
    s = new_store(repo)
    r = s.repo
    tip = r[s.tip()]
    tb = r.TreeBuilder(tip.tree)
    tb.insert("format", r.create_blob(b"gitliza-state 99\n"), pygit2.GIT_FILEMODE_BLOB)
    sig = pygit2.Signature("x", "x@y", 0, 0)
    c = r.create_commit(None, sig, sig, "future", tb.write(), [tip.id])
    r.lookup_reference(STATE_REF).set_target(c)
    # A newer format than ours: exit 4 (not a missing dependency: the board is out of this
    # gitliza's reach), one line naming both versions, before any entity is read.
    with pytest.raises(InconsistentState, match="storage format 99; this gitliza reads formats "
                                                "up to 2") as e:
        s.board()
    assert e.value.exit_code == 4 and "\n" not in str(e.value)
