"""Machines as the board sees them (core/presence/hosts.py): grouped by the host each supervisor
recorded, live while a token is unexpired, unreachable once the newest expired without being
given back (killed, or cut off), gone once every supervisor ended cleanly; `status`'s line only
when there is news."""
from __future__ import annotations

from gitliza.core import clock
from gitliza.core.presence.hosts import GONE, LIVE, UNREACHABLE, machines, status_line
from gitliza.core.ops.control import Supervise
from tests.core.boards import add_ready, claim, team


def test_live_unreachable_and_gone_machines_are_told_apart() -> None:
    r = team()
    add_ready(r)
    r.do(Supervise, "coder-1", mode="start", host="m-a", pid=1)
    r.do(Supervise, "coder-2", mode="start", host="m-b", pid=2)
    r.do(Supervise, "reviewer-1", mode="start", host="m-b", pid=3)
    claim(r, coder="coder-2")
    now = r.now()
    rows = {m.host: m for m in machines(r.board, now)}
    assert rows["m-a"].status == rows["m-b"].status == LIVE
    assert rows["m-b"].agents == ["coder-2", "reviewer-1"] and rows["m-b"].tasks == ["task-1"]
    assert status_line(r.board, now) is not None  # two machines: news
    # Both of m-b's tokens run out unrenewed; m-a ends cleanly.
    r.do(Supervise, "coder-1", mode="end", gen=1)
    later = clock.plus(max(s.expires for s in r.board.values("supervisors")
                           if s.expires is not None), 1)
    rows = {m.host: m for m in machines(r.board, later)}
    assert rows["m-b"].status == UNREACHABLE and rows["m-a"].status == GONE
    assert [m.host for m in machines(r.board, later)] == ["m-b", "m-a"]  # the news first
    line = status_line(r.board, later)
    assert line is not None and "m-b UNREACHABLE (coder-2, reviewer-1; holds task-1)" in line


def test_one_live_machine_is_no_news() -> None:
    r = team()
    r.do(Supervise, "coder-1", mode="start", host="m-a", pid=1)
    assert status_line(r.board, r.now()) is None
    assert machines(r.board, r.now())[0].last_seen is not None
