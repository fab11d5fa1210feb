"""A wedged supervisor loses its lease the way a dead one does: the lease keeper renews the task
lease and the token only while the supervisor's main loop feeds its watchdog. Real repository,
real board writes, the real lease keeper thread; the "stuck" main loop is a watchdog nobody feeds.
"""
from __future__ import annotations

import time
from pathlib import Path

from gitliza.core.states import Role
from gitliza.services.api import Liza
from gitliza.services.lifecycle import claim as claiming
from gitliza.team.generation import Generation
from gitliza.team.heartbeat import Watchdog, lease_keeper
from tests.cli.test_board import liza, ok
from tests.team.procs import WAIT, add_task, make_board


def _claimed(repo: Path) -> tuple[Liza, Generation]:
    # A lease long enough that the stuck spell below (three beat times) does not lose the task:
    # then renewing resumes. (Stuck longer, the lease expires and the keeper reports the task
    # lost, as for a dead supervisor.)
    make_board(repo, lease_duration="30", heartbeat_interval="1")
    add_task(repo, "t1")
    lz = Liza.open(repo, agent="coder-1")
    token = Generation("coder-1")
    token.take(lz, Role.CODER, takeover=False)
    claiming.claim(lz, "t1")
    return lz, token


def _beats(repo: Path, since: str | None) -> int:
    """Whether coder-1 renewed (off the chain: refs/liza/live/coder-1) since its renewal `since`;
    and the board itself must not have taken a renewal (liveness is off the audit chain)."""
    import json
    log = json.loads(ok(liza(repo, "log", "--json", "--all", agent=None)))
    assert not [e for e in log if e["op"] == "heartbeat" or
                (e["op"] == "supervise" and (e.get("args") or {}).get("mode") == "renew")]
    return int(_commits(repo) != since)


def _commits(repo: Path) -> str | None:
    """coder-1's renewal now (the commit of its live ref)."""
    import pygit2
    try:
        return str(pygit2.Repository(str(repo)).references["refs/liza/live/coder-1"].target)
    except KeyError:
        return None


def test_a_stuck_loop_stops_renewing_and_a_moving_one_renews(repo: Path) -> None:
    lz, token = _claimed(repo)
    said: list[str] = []
    dog = Watchdog()
    dog.stamp -= 60  # the main loop last moved a minute ago: stuck
    opener = lambda: Liza.open(repo, agent="coder-1")  # noqa: E731
    hb = lease_keeper(lz, opener, token, Role.CODER, "t1", lambda _why: None, said.append,
                      beat_now=True, watchdog=dog).start()
    try:
        start = _commits(repo)
        deadline = time.monotonic() + WAIT
        while hb.beats < 3 and time.monotonic() < deadline:  # three beat times went by
            time.sleep(0.1)
        assert hb.beats >= 3
        assert _beats(repo, start) == 0, "a stuck supervisor renewed its lease"
        assert sum("shows no progress" in s for s in said) == 1  # said once, not per beat
        before = _commits(repo)
        while time.monotonic() < deadline:  # the loop moves again: it stamps as it waits
            dog.feed()
            if _beats(repo, before):
                break
            time.sleep(0.2)
        assert _beats(repo, before) >= 1, "renewing did not resume"
        assert any("moves again" in s for s in said)
    finally:
        hb.stop()


def test_without_a_watchdog_the_keeper_beats_as_before(repo: Path) -> None:
    lz, token = _claimed(repo)
    opener = lambda: Liza.open(repo, agent="coder-1")  # noqa: E731
    start = _commits(repo)
    hb = lease_keeper(lz, opener, token, Role.CODER, "t1", lambda _why: None, lambda _s: None,
                      beat_now=True).start()
    try:
        deadline = time.monotonic() + WAIT
        while _beats(repo, start) == 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _beats(repo, start) >= 1
    finally:
        hb.stop()
