"""A renewal off the audit chain shared (services/liveness.py writes it): the agent's live ref
pushed alone when the remote's copy is older than a third of a lease (`push_due`,
core/presence/renewals.py), else nothing; a push the remote refuses (it holds a copy this clone
never saw) falls back to a full sync round."""
from __future__ import annotations

from typing import TYPE_CHECKING

from gitliza.core.presence import renewals
from gitliza.core.presence.renewals import Renewal
from gitliza.errors import LizaError
from gitliza.git import liveref
from gitliza.git.remotes import remote as remotes
from gitliza.git.remotes import transport
from gitliza.git.remotes.pushresults import PushStatus
from gitliza.git.repository import repo_path

if TYPE_CHECKING:
    from gitliza.services.api import Liza


PUSH_FLOOR = 10.0  # seconds a renewal's push may always take


def share(liza: Liza, done: Renewal, lease_seconds: int) -> None:
    """Share the renewal when the remote's copy of this agent's record is older than a third of
    a lease (and auto-sync is on: a sync remote and no --no-sync): one push of this agent's ref
    alone, with the copy last fetched as its lease (no fetch, no replay: no other agent moves this
    ref). Should the lease not hold (the remote has a copy this clone never saw), a full sync
    fetches it and pushes what is newer. A failure is said, never fatal: the renewal stands here
    and the next one shares it."""
    path = repo_path(liza.repo)
    ref = liveref.ref_of(done.agent)
    # A renewal not on the remote within a quarter of a lease is overtaken by the next one; and a
    # push into a link that went down mid-transfer (a partition: nothing fails, nothing answers)
    # would hold the lease keeper for the transport's whole timeout, so that it neither renews
    # nor sees the partition and stops the agent (fleet run 18: a cut-off coder worked on for
    # 50 s, and overlapped its task's taker by 11.6 s).
    # Not below 10 s: a push through the server's hook takes seconds on a loaded machine, and one
    # killed half-way (the remote may take it after all) leaves this clone's copy stale, so the
    # next push's lease fails and falls back to a sync.
    timeout = max(PUSH_FLOOR, min(transport.DEFAULT_TIMEOUT, lease_seconds / 4))
    try:
        remote = liza.sync_target()  # resolved once per Liza (an unknown name: said, below)
        if remote is None:
            return
        theirs = liveref.target(liza.repo, remotes.tracking_of(remote, ref))
        shared = liveref.read(liza.repo, theirs) if theirs is not None else None
        if not renewals.push_due(shared, done.heartbeat, lease_seconds):
            return
        assert done.commit is not None
        res = transport.push_refs(path, remote, [transport.RefUpdate(
            ref, done.commit, theirs, fast_forward=False)], timeout=timeout)
        if res.status in (PushStatus.OK, PushStatus.UP_TO_DATE):
            return
        # Only when the push alone did not do (a heartbeat loads no engine): one round, not the
        # six of a command's sync, so that the lease keeper is held a bounded time; the
        # follower's next sync shares what this one could not.
        from gitliza.services.sync import engine
        engine.sync(liza.store, remote, timeout=timeout, rounds=1)
    except LizaError as e:
        liza.notice(f"renewal of {done.agent} kept here, not shared yet: {e}")
