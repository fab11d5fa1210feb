"""The team's live feed (gitliza/team/follow.py) prints each transition once: a sync that replays
this clone's ops on the remote's moves every local commit, and the feed must show only what is
new (the remote's ops), not the replayed ops again nor the board's history (issue 48)."""
from __future__ import annotations

from pathlib import Path

from gitliza.core.ops import Add
from gitliza.services.sync import engine
from gitliza.team.follow import Follower
from tests.team.procs import until
from tests.services.test_sync import Clock, clone, liza, seed
from tests.conftest import remote_of





def _add(h, task: str) -> None:  # type: ignore[no-untyped-def]
    h.do(Add, task=task, description=f"do {task}", spec_ref="spec.md", done_when="tests",
         scope="src", ready=True)


def test_a_replaying_sync_shows_the_remote_ops_once_and_nothing_again(tmp_path: Path) -> None:
    bare, _seed = seed(tmp_path)
    a = clone(bare, tmp_path / "a", configure=False)
    b = clone(bare, tmp_path / "b", configure=False)
    out: list[str] = []
    feed = Follower(b, out.append).start()
    try:
        hb = liza(b, now=Clock(offset=100))
        _add(hb, "task-b")  # local, not shared yet
        until(lambda: any("task-b" in ln for ln in out), "the local op was never shown")
        ha = liza(a, now=Clock(offset=200))
        _add(ha, "task-a")
        engine.sync(ha.store, remote_of(ha.store, "origin"))
        rep = engine.sync(hb.store, remote_of(hb.store, "origin"))  # task-b replayed on top of task-a: a new commit
        assert [r.op for r in rep.replayed] == ["add"]
        until(lambda: any("task-a" in ln for ln in out), "the remote's op was never shown")
    finally:
        feed.stop()
    assert len(out) == 2, out  # task-b, then task-a: no history, no second task-b
    assert "task-b" in out[0] and "task-a" in out[1]
