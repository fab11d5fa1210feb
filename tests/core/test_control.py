"""Control ops (pause, resume, abort, checkpoint) and the supervisor generation token."""
from __future__ import annotations

import pytest

from gitliza.core import clock
from gitliza.core.model import SprintStatus
from gitliza.core.ops import apply
from gitliza.core.ops.control import AbortOp, Checkpoint, Pause, Resume, Supervise
from gitliza.core.ops.work import Heartbeat
from gitliza.errors import LeaseLost, PermissionDenied, ValidationError
from tests.core.boards import team


def test_pause_resume_records_who_and_why() -> None:
    r = team()
    r.do(Pause, "human", reason="lunch")
    c = r.board.control
    assert c.paused and c.pause_reason == "lunch" and c.paused_by == "human"
    with pytest.raises(ValidationError, match="already paused"):
        r.do(Pause, "planner-1")
    out = r.do(Resume, "planner-1", decision="continue", note="back")
    c = r.board.control
    assert not c.paused and c.pause_reason is None
    assert (c.resumed_by, c.resume_decision, c.resume_note) == ("planner-1", "continue", "back")
    assert out.event.summary == "resume (pause) by planner-1: continue"
    with pytest.raises(ValidationError, match="neither paused"):
        r.do(Resume, "human")


def test_coders_and_reviewers_cannot_pull_the_levers() -> None:
    r = team()
    for cls in (Pause, AbortOp):
        with pytest.raises(PermissionDenied, match="allowed: human, planner"):
            r.do(cls, "coder-1")
    with pytest.raises(PermissionDenied):
        r.do(Checkpoint, "reviewer-1", reason="x")


def test_checkpoint_opens_on_the_sprint_and_resume_closes_it() -> None:
    r = team()
    r.do(Checkpoint, "human", reason="review the plan", trigger="analyze")
    s, c = r.board.sprint, r.board.control
    assert s.status == SprintStatus.CHECKPOINT and s.timeline.checkpoint_at == r.now()
    assert (c.checkpoint_reason, c.checkpoint_trigger, c.checkpoint_by) == \
        ("review the plan", "analyze", "human")
    with pytest.raises(ValidationError, match="only on a sprint IN_PROGRESS"):
        r.do(Checkpoint, "human", reason="again")
    with pytest.raises(ValidationError, match="trigger"):
        apply(r.board, Checkpoint(actor="human", time=r.now(), reason="x", trigger="whim"))
    r.do(Resume, "human", decision="replan")
    assert r.board.sprint.status == SprintStatus.IN_PROGRESS
    assert r.board.control.checkpoint_reason is None


def test_abort_is_final() -> None:
    r = team()
    r.do(AbortOp, "human", reason="wrong goal")
    assert r.board.control.aborted and r.board.control.abort_reason == "wrong goal"
    with pytest.raises(ValidationError, match="already aborted"):
        r.do(AbortOp, "human")
    with pytest.raises(ValidationError, match="aborted"):
        r.do(Pause, "human")


def test_supervisor_generation_one_live_holder_per_id() -> None:
    r = team()
    r.do(Supervise, "coder-1", mode="start", host="h", pid=1)
    sup = r.board.get("supervisors", "coder-1")
    assert sup.generation == 1 and sup.pid == 1
    assert sup.expires == clock.plus(r.now(), r.board.config.lease_duration)
    with pytest.raises(ValidationError, match="held by a live supervisor, generation 1"):
        r.do(Supervise, "coder-1", mode="start", pid=2)
    out = r.do(Supervise, "coder-1", mode="takeover", pid=2)
    assert r.board.get("supervisors", "coder-1").generation == 2
    assert "generation 1 of coder-1 must stand down" in out.notices[0]
    # The stale generation's writes are refused; the live one's go through.
    with pytest.raises(LeaseLost, match="generation 1 was superseded"):
        r.do(Heartbeat, "coder-1", gen=1)
    r.do(Heartbeat, "coder-1", gen=2)
    r.do(Supervise, "coder-1", mode="renew", gen=2)
    r.do(Supervise, "coder-1", mode="end", gen=2)
    assert r.board.get("supervisors", "coder-1").expires is None
    r.do(Supervise, "coder-1", mode="start")  # the id is free again
    assert r.board.get("supervisors", "coder-1").generation == 3


def test_an_expired_supervisor_token_can_be_taken() -> None:
    r = team()
    r.do(Supervise, "coder-1")
    r.minute += r.board.config.lease_duration // 60 + 1
    r.do(Supervise, "coder-1")
    assert r.board.get("supervisors", "coder-1").generation == 2
    with pytest.raises(PermissionDenied):
        r.do(Supervise, "human")


def test_a_takeover_of_a_dead_generation_is_refused_once_the_id_changed_hands() -> None:
    """Two new supervisors that both found generation 1 dead: only the first takes the id."""
    r = team()
    r.do(Supervise, "coder-1", host="h", pid=1, pid_start=100)
    assert r.board.get("supervisors", "coder-1").pid_start == 100
    r.do(Supervise, "coder-1", mode="takeover", pid=2, replaces=1)
    with pytest.raises(ValidationError, match="changed hands meanwhile \\(generation 2"):
        r.do(Supervise, "coder-1", mode="takeover", pid=3, replaces=1)
    assert r.board.get("supervisors", "coder-1").pid == 2


def test_the_human_frees_a_dead_supervisors_token_and_nothing_else() -> None:
    r = team()
    r.do(Supervise, "coder-1", host="h", pid=1)
    with pytest.raises(PermissionDenied, match="supervise free is not allowed for coder-2 "
                                               "\\(role coder\\); allowed: human$"):
        r.do(Supervise, "coder-2", mode="free", agent="coder-1", replaces=1)
    with pytest.raises(ValidationError, match="generation 1 holds it now"):
        r.do(Supervise, "human", mode="free", agent="coder-1", replaces=7)
    out = r.do(Supervise, "human", mode="free", agent="coder-1", replaces=1)
    assert out.event.actor == "human" and "supervise free coder-1" in out.event.summary
    assert r.board.get("supervisors", "coder-1").expires is None
    with pytest.raises(ValidationError, match="no supervisor token of coder-1 to free"):
        r.do(Supervise, "human", mode="free", agent="coder-1")
    r.do(Supervise, "coder-1")  # the id is free: no takeover needed
    assert r.board.get("supervisors", "coder-1").generation == 2


def test_a_refused_start_names_takeover() -> None:
    r = team()
    r.do(Supervise, "coder-1", host="h", pid=1)
    with pytest.raises(ValidationError) as e:
        r.do(Supervise, "coder-1", pid=2)
    assert "--takeover" in (e.value.hint or "")
