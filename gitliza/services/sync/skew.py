"""Clock skew at sync: named in one line, never silently accepted, and the lease
sightings refreshed (gitliza/services/leasewatch.py).

Two measures, each of a real clock: a fetched board whose newest op is dated ahead of this clock
means this clock is behind the machine that wrote it ("this machine's clock is N s behind
origin's"); the server hook, which has origin's own clock, says so for a push dated ahead of it
("this machine's clock is N s ahead of origin's", relayed from the push, engine._push). Up to
core/presence/leasemarks.MAX_SKEW a skew is tolerated (leases are judged by each observer's own clock);
beyond it the server refuses the push.
"""
from __future__ import annotations

import pygit2

from gitliza.core import clock
from gitliza.core.presence import leasemarks
from gitliza.git.store import Store
from gitliza.services import leasewatch as seen
from gitliza.services.api import now_utc
from gitliza.services.sync.report import SyncReport


def op_time(commit: pygit2.Commit) -> str | None:
    """The `Liza-Time` trailer of a state commit (None when it has none or a bad one)."""
    for line in commit.message.splitlines():
        if line.startswith("Liza-Time: "):
            value = line[11:].strip()
            try:
                return clock.check_ts(value)
            except ValueError:
                return None
    return None


def behind_origin(store: Store, remote_tip: pygit2.Oid, rep: SyncReport) -> None:
    """A notice when the fetched board's newest op is dated more than WARN_SKEW after this
    machine's clock: no op is made in the future, so this clock is behind its writer's."""
    when = op_time(store.commit(remote_tip))
    if when is None:
        return
    now = now_utc()
    ahead = clock.to_epoch(when) - clock.to_epoch(now)
    if ahead > leasemarks.WARN_SKEW:
        rep.notices.append(
            f"this machine's clock is {ahead} s behind origin's (its board's newest op is dated "
            f"{when}, this clock says {now}); leases are judged by each clone's own clock, but "
            f"fix it: beyond {leasemarks.MAX_SKEW} s the server refuses the ops")


def after_sync(store: Store) -> None:
    """Refresh this clone's lease sightings from the board the sync left: the leases its agents
    hold (found through the agents, not every task: core/presence/leasemarks.held_leases)."""
    if store.tip() is None:
        return
    board = store.board()[0]
    seen.observe(store.repo, leasemarks.held_leases(board), now_utc(), whole=False)
