"""Machines the human drains and the labels tasks need (core/presence/placement.py, the drain and
undrain ops): the board refuses the claim, so an agent that claims by hand cannot get round it,
and `claimable`/`reviewable` skip what it would refuse, so a supervisor does not try."""
from __future__ import annotations

import pytest

from gitliza.core.presence import placement
from gitliza.core.invariants import claimable, reviewable
from gitliza.core.presence.hosts import DRAINED, DRAINING, machines, status_line
from gitliza.core.ops.goal import ConfigSet
from gitliza.core.ops.control import Drain, Supervise, Undrain
from gitliza.core.ops.review import ClaimReview
from gitliza.core.ops.work import Release, Submit
from gitliza.errors import PermissionDenied, ValidationError
from tests.core.boards import C1, add_ready, claim, team, verdict


def two_machines():  # type: ignore[no-untyped-def]
    r = team()
    r.do(ConfigSet, "human", key="lease_duration", value="3600")  # the tokens stay live
    r.do(Supervise, "coder-1", mode="start", host="m-a", pid=1)
    r.do(Supervise, "coder-2", mode="start", host="m-b", pid=2, labels=("gpu",))
    r.do(Supervise, "reviewer-1", mode="start", host="m-a", pid=3)
    r.do(Supervise, "reviewer-2", mode="start", host="m-b", pid=4)
    return r


def test_a_drained_machines_agents_finish_their_task_and_claim_nothing_new() -> None:
    r = two_machines()
    add_ready(r, "task-1")
    add_ready(r, "task-2")
    claim(r, "task-1", "coder-1")
    r.do(Drain, "human", machine="m-a", reason="kernel update")
    now = r.now()
    assert [t.id for t in claimable(r.board, now, "coder-1")] == []
    assert [t.id for t in claimable(r.board, now, "coder-2")] == ["task-2"]
    with pytest.raises(ValidationError, match="machine m-a is drained"):
        claim(r, "task-2", "coder-1")  # by hand: the board refuses it too
    rows = {m.host: m for m in machines(r.board, r.now())}
    assert rows["m-a"].drain == DRAINING and rows["m-b"].drain is None
    line = status_line(r.board, r.now())
    assert line is not None and "m-a live, DRAINING" in line
    # Its current task it finishes: its submit goes through, and a submitted task still counts
    # as held (a rejection brings it back to its coder) ...
    r.do(Submit, "coder-1", task="task-1", commit=C1)
    assert {m.host: m for m in machines(r.board, r.now())}["m-a"].drain == DRAINING
    # ... its reviewer takes no new review; the other machine's does.
    assert reviewable(r.board, r.now(), "reviewer-1") == []
    with pytest.raises(ValidationError, match="machine m-a is drained"):
        r.do(ClaimReview, "reviewer-1", task="task-1")
    assert [t.id for t in reviewable(r.board, r.now(), "reviewer-2")] == ["task-1"]
    verdict(r, "reject", "task-1", "reviewer-2")
    claim(r, "task-1", "coder-1")  # its own task back, drained or not
    r.do(Release, "coder-1", task="task-1")
    assert {m.host: m for m in machines(r.board, r.now())}["m-a"].drain == DRAINED
    assert [t.id for t in claimable(r.board, r.now(), "coder-1")] == []
    r.do(Undrain, "human", machine="m-a")
    assert [t.id for t in claimable(r.board, r.now(), "coder-1")] == ["task-1", "task-2"]
    claim(r, "task-2", "coder-1")


def test_drain_is_the_humans_and_says_each_mistake_in_one_line() -> None:
    r = two_machines()
    with pytest.raises(PermissionDenied):
        r.do(Drain, "coder-2", machine="m-a")  # an agent does not drain its peers
    with pytest.raises(PermissionDenied):
        r.do(Drain, "planner-1", machine="m-a")
    with pytest.raises(ValidationError, match="not drained"):
        r.do(Undrain, "human", machine="m-a")
    with pytest.raises(ValidationError, match="not a machine name"):
        r.do(Drain, "human", machine="two words")
    out = r.do(Drain, "human", machine="m-new")  # not seen yet: allowed, and said
    assert any("will start drained" in n for n in out.notices)
    with pytest.raises(ValidationError, match="already drained"):
        r.do(Drain, "human", machine="m-new")
    rows = {m.host: m for m in machines(r.board, r.now())}
    assert rows["m-new"].drain == DRAINED and rows["m-new"].agents == []
    # A supervisor that starts there later takes nothing.
    r.do(Supervise, "coder-3", mode="start", host="m-new", pid=5)
    add_ready(r, "task-1")
    assert claimable(r.board, r.now(), "coder-3") == []


def test_a_task_that_needs_a_label_goes_only_to_a_supervisor_offering_it() -> None:
    r = two_machines()
    add_ready(r, "task-1", needs=("gpu",))
    add_ready(r, "task-2")
    now = r.now()
    assert [t.id for t in claimable(r.board, now, "coder-1")] == ["task-2"]
    assert [t.id for t in claimable(r.board, now, "coder-2")] == ["task-1", "task-2"]
    with pytest.raises(ValidationError, match="needs label.s. gpu, which coder-1's supervisor "
                                              "does not offer"):
        claim(r, "task-1", "coder-1")
    with pytest.raises(ValidationError, match="needs label.s. gpu"):
        claim(r, "task-1", "coder-3")  # no supervisor at all: no label
    claim(r, "task-1", "coder-2")
    assert r.board.task("task-1").assigned_to == "coder-2"


def test_ready_says_when_no_live_machine_offers_a_needed_label() -> None:
    r = two_machines()
    add_ready(r, "task-1", needs=("gpu", "macos"))
    waits = placement.label_waits(r.board, r.now(), list(r.board.tasks()))
    assert [(t.id, m) for t, m in waits] == [("task-1", ["macos"])]
    r.do(Drain, "human", machine="m-b")  # the gpu machine drained: gpu is offered no more
    waits = placement.label_waits(r.board, r.now(), list(r.board.tasks()))
    assert [(t.id, m) for t, m in waits] == [("task-1", ["gpu", "macos"])]


def test_labels_and_needs_are_checked() -> None:
    r = team()
    with pytest.raises(ValidationError, match="is not a label"):
        add_ready(r, "task-1", needs=("g p u",))
    assert placement.check_labels(["gpu,macos", "gpu", " x "]) == ("gpu", "macos", "x")
    with pytest.raises(ValidationError, match="is not a label"):
        r.do(Supervise, "coder-1", mode="start", host="m-a", pid=1, labels=("a b",))


def test_the_release_of_a_drained_machines_task_leaves_it_to_others() -> None:
    r = two_machines()
    add_ready(r, "task-1")
    claim(r, "task-1", "coder-1")
    r.do(Drain, "human", machine="m-a")
    r.do(Release, "coder-1", task="task-1")
    assert [t.id for t in claimable(r.board, r.now(), "coder-2")] == ["task-1"]
