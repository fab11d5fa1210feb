"""`git liza watch` as a real process: --once for cron, and the loop reacting to transitions made by
another process (fire once, resolve), with alerts on stderr/stdout and in .liza/alerts.log."""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from gitliza.core import clock
from gitliza.core.ops import Claim, Unblock
from gitliza.core.ops.work import Block
from gitliza.governance.watch import Watcher
from gitliza.git.store import Store
from tests.governance.conftest import Team


def env_at(now: str) -> dict[str, str]:
    e = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
             LIZA_NOW=now)
    e.pop("LIZA_AGENT_ID", None)
    return e


def block(team: Team, task: str = "task-1") -> None:
    (team.repo / ".worktrees" / task).mkdir(parents=True, exist_ok=True)  # a CLAIMED task's
    team.do("coder-1", Claim, task=task, worktree=f".worktrees/{task}", base_commit="a" * 40)
    team.do("coder-1", Block, task=task, reason="spec gap", questions=("which API?",))


def test_once_exits_1_while_an_alarm_is_active(team: Team) -> None:
    now = team.now()
    r = subprocess.run(["git", "liza", "watch", "--once"], cwd=team.repo, env=env_at(now),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    block(team)
    now = team.now()
    r = subprocess.run(["git", "liza", "watch", "--once"], cwd=team.repo, env=env_at(now),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert r.stderr == f"[{now}] \u26a0\ufe0f BLOCKED: task-1 \u2014 spec gap\n"
    log = (team.repo / ".liza" / "alerts.log").read_text()
    assert log.endswith(f"[{now}] \u26a0\ufe0f BLOCKED: task-1 \u2014 spec gap\n")


def _reader(stream: Any, q: queue.Queue[str]) -> None:
    for line in stream:
        q.put(line)


@pytest.mark.slow
def test_the_loop_reacts_to_another_process_once_per_change(team: Team) -> None:
    now = team.now()
    proc = subprocess.Popen(["git", "liza", "watch", "--json"], cwd=team.repo, env=env_at(now),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    q: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_reader, args=(proc.stdout, q), daemon=True).start()
    try:
        block(team)
        got = json.loads(q.get(timeout=60))  # a hang guard, not a timing assertion
        assert (got["event"], got["kind"], got["subject"]) == ("fired", "BLOCKED", "task-1")
        # Unrelated changes do not repeat the alert; the end of the condition is reported.
        team.do("planner-1", Unblock, task="task-1")
        got = json.loads(q.get(timeout=60))
        assert (got["event"], got["kind"], got["line"]) == (
            "resolved", "BLOCKED", "\u2705 RESOLVED: BLOCKED: task-1 \u2014 spec gap")
        block(team, "task-2")
        got = json.loads(q.get(timeout=60))
        assert (got["event"], got["subject"]) == ("fired", "task-2")
        assert q.empty()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    lines = (team.repo / ".liza" / "alerts.log").read_text().splitlines()
    assert len(lines) == 3 and "RESOLVED: BLOCKED: task-1" in lines[1]


def test_escalation_file_for_a_stuck_checkpoint(team: Team) -> None:
    store = Store.discover(team.repo)
    start = team.now()
    clock_now = [start]
    w = Watcher(store, now=lambda: clock_now[0], notify=False, err=open(os.devnull, "w"))
    (team.repo / ".liza").mkdir(exist_ok=True)
    (team.repo / ".liza" / "CHECKPOINT").write_text(start + "\nhuman review\n")
    w.tick()
    esc = team.repo / ".liza" / "ESCALATION"
    clock_now[0] = clock.plus(start, 1801)
    assert [r.event for r in w.tick()] == ["fired"] and not esc.exists()
    clock_now[0] = clock.plus(start, 7201)
    assert [r.alert.text for r in w.tick()][0].startswith("CHECKPOINT STUCK")
    assert esc.read_text().startswith(f"CHECKPOINT_STUCK since {start} (2h 0m)")
    (team.repo / ".liza" / "CHECKPOINT").unlink()
    ended = [(r.event, r.alert.kind) for r in w.tick()]
    assert ("resolved", "CHECKPOINT") in ended and not esc.exists()
    assert ("fired", "STALLED") in ended  # a checkpoint no longer explains the silence


def test_the_timer_runs_to_the_next_threshold_on_the_watchers_clock(team: Team) -> None:
    team.do("coder-1", Claim, task="task-1", worktree=".worktrees/task-1", base_commit="a" * 40)
    store = Store.discover(team.repo)
    lease = store.board()[0].task("task-1").lease_expires
    now = team.now()
    w = Watcher(store, now=lambda: now, notify=False, err=open(os.devnull, "w"))
    w.tick()
    # The lease alarm (120 s grace) is the first time-based change (an expired WORKING lease is
    # no INVALID STATE: liza-validate.sh only warns of it).
    timeout = w.next_timeout()
    assert timeout is not None
    assert abs(timeout - (clock.to_epoch(lease) + 121 - clock.to_epoch(now) + 0.05)) < 1e-6


def test_a_claimed_task_without_its_worktree_is_invalid_state(team: Team) -> None:
    (team.repo / ".worktrees" / "task-1").mkdir(parents=True)
    team.do("coder-1", Claim, task="task-1", worktree=".worktrees/task-1", base_commit="a" * 40)
    store = Store.discover(team.repo)
    now = team.now()
    w = Watcher(store, now=lambda: now, notify=False, err=open(os.devnull, "w"))
    assert not [r for r in w.tick() if r.alert.kind == "INVALID_STATE"]
    (team.repo / ".worktrees" / "task-1").rmdir()
    fired = [r.alert.text for r in w.tick() if r.alert.kind == "INVALID_STATE"]
    assert fired and "CLAIMED task worktree path must exist (.worktrees/task-1)" in fired[0]


@pytest.mark.parametrize("tracked", [True, False])
def test_alerts_never_go_through_a_link_out_of_the_repository(team: Team, tracked: bool) -> None:
    """Hostile input (issue 26): `.liza/alerts.log` as a link to a file outside the repository,
    committed (a clone brings it) or planted in an untracked `.liza/`. The alert still reaches
    the screen; nothing is appended outside, and one line says why not."""
    outside = team.repo.parent / "outside.txt"
    outside.write_text("the user's file\n")
    (team.repo / ".liza").mkdir(exist_ok=True)
    (team.repo / ".liza" / "alerts.log").symlink_to(os.path.relpath(outside, team.repo / ".liza"))
    if tracked:
        subprocess.run(["git", "add", "-f", ".liza/alerts.log"], cwd=team.repo, check=True)
        subprocess.run(["git", "commit", "-q", "-m", "a link"], cwd=team.repo, check=True)
    block(team)
    now = team.now()
    r = subprocess.run(["git", "liza", "watch", "--once"], cwd=team.repo, env=env_at(now),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "BLOCKED: task-1" in r.stderr, r.stderr
    why = "is tracked by git" if tracked else "is a symbolic link"
    refused = [line for line in r.stderr.splitlines() if "cannot append" in line]
    assert len(refused) == 1 and why in refused[0], r.stderr
    assert outside.read_text() == "the user's file\n"
    assert (team.repo / ".liza" / "alerts.log").is_symlink()
