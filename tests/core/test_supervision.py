"""A supervisor's state as readers tell it (issue 36): live, stopped (its end recorded), expired
(its token ran out unrenewed), none; and the line a held task gets when nobody works on it."""
from __future__ import annotations

from gitliza.core import clock

from gitliza.core.presence import supervision
from gitliza.core.ops.control import Supervise
from gitliza.core.presence.supervision import SupState
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


def test_a_supervisor_registered_agent_is_removed_alike_whichever_generation_ends() -> None:
    """The first supervisor registered coder-1 and ended holding a task (the agent stays, for the
    lease); the next one starts on it, inherits "registered" from the token, and its clean end
    removes the agent, as the planner's and reviewer's were. A human's registration stays."""
    from gitliza.core.ops.goal import Register
    from gitliza.core.ops.work import Release
    r = team()
    r.do(Register, "human", agent="coder-9", role="coder")
    add_ready(r)
    r.do(Supervise, "coder-1", mode="start", registered=True)
    claim(r)
    r.do(Supervise, "coder-1", mode="end", gen=1, unregister=True)
    assert r.board.agent("coder-1") is not None  # it holds task-1
    r.do(Supervise, "coder-1", mode="start")  # the next supervisor: the agent exists
    assert r.board.get("supervisors", "coder-1").registered
    r.do(Release, "coder-1", task="task-1", gen=2)
    r.do(Supervise, "coder-1", mode="end", gen=2, unregister=True)
    assert r.board.agent("coder-1") is None
    assert not r.board.get("supervisors", "coder-1").registered  # gone with the agent
    # the human's agent: its supervisor did not register it, nothing inherited
    r.do(Supervise, "coder-9", mode="start")
    assert not r.board.get("supervisors", "coder-9").registered


def test_a_review_held_by_a_stopped_supervisor_is_not_offered_a_release() -> None:
    from gitliza.core.ops.review import ClaimReview
    from tests.core.boards import to_review
    r = team()
    add_ready(r)
    to_review(r)
    r.do(Supervise, "reviewer-1", mode="start")
    r.do(ClaimReview, "reviewer-1", task="task-1", gen=1)
    r.do(Supervise, "reviewer-1", mode="end", gen=1)
    line = supervision.of_agent(r.board, r.board.agent("reviewer-1"), r.now()).line(r.now())
    assert line is not None and line.startswith("task-1: held by reviewer-1, supervisor stopped")
    assert "release" not in line and "another reviewer takes it after that" in line
