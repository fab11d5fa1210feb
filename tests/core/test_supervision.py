"""A supervisor's state as readers tell it (issue 36): live, stopped (its end recorded), expired
(its token ran out unrenewed), none; and the line a held task gets when nobody works on it."""
from __future__ import annotations

from gitliza.core import clock, supervision
from gitliza.core.ops.control import Supervise
from gitliza.core.supervision import SupState
from tests.core.boards import add_ready, claim, team

NOTE = "task-1: held by coder-1, supervisor stopped, lease ends in "


def test_stopped_expired_and_live_supervisors_are_told_apart() -> None:
    r = team()
    add_ready(r)
    me = r.board.agent("coder-1")
    assert supervision.of_agent(r.board, me, r.now()).state == SupState.NONE
    r.do(Supervise, "coder-1", mode="start")
    claim(r)
    me = r.board.agent("coder-1")
    live = supervision.of_agent(r.board, me, r.now())
    assert live.state == SupState.LIVE and live.task == "task-1" and live.line(r.now()) is None
    # its token runs out unrenewed (killed): gone, though the task's lease may still run
    later = clock.plus(r.board.get("supervisors", "coder-1").expires, 1)
    gone = supervision.of_agent(r.board, me, later)
    assert gone.state == SupState.EXPIRED
    r.do(Supervise, "coder-1", mode="end", gen=1)
    me = r.board.agent("coder-1")
    stopped = supervision.of_agent(r.board, me, r.now())
    assert stopped.state == SupState.STOPPED and not stopped.running
    line = stopped.line(r.now())
    assert line is not None and line.startswith(NOTE), line
    assert "`git liza release task-1`" in line
    t = r.board.task("task-1")
    after = clock.plus(t.lease_expires, 120)
    assert "lease ended 2m ago: another agent may take it over" in (stopped.line(after) or "")


def test_ago_units() -> None:
    t = "2026-01-01T00:00:00Z"
    assert [supervision.ago(t, clock.plus(t, s)) for s in (5, 240, 7300, 200000)] == \
        ["5s", "4m", "2h", "2d"]
