"""A new work-in-progress snapshot goes to the remote at once (issue 48), pushed by the snapshot
thread itself (team/wipsnap.py): one push of that wip ref alone, with the copy last fetched as its
lease, no fetch and no replay (no other agent moves this ref: services/wip.py `check`).

Before, a snapshot waited for the clone's remote follower to notice it (up to 1.25 follow
intervals) and then for a whole sync (fetch, replay, push); on a loaded machine B's first snapshot
was not on the remote 5.5 s into its work (the fleet scenario, docs/multi-machine.md). Now the
work a machine loses at a kill is bounded by the snapshot interval plus one push.

The server hook judges the ref against the remote's board as it is (the push moves no board): it
holds this coder's claim, since no agent starts on a claim the remote has not acknowledged
(services/sync/acked.py). Should the lease not hold, or the push fail, the ref stays here and the
follower's next check, which sees a snapshot of ours the remote lacks, shares it by a sync.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import pygit2

from gitliza.git.remotes import remote as remotes
from gitliza.git.remotes import transport
from gitliza.git.remotes.lsremote import board_refs
from gitliza.git.remotes.pushresults import PushStatus
from gitliza.git.repository import repo_path
from gitliza.services import wip

if TYPE_CHECKING:
    from gitliza.services.api import Liza


def share(liza: Liza, task: str, agent: str, oid: pygit2.Oid) -> str | None:
    """Push the snapshot `oid` of `agent` on `task` to the clone's sync remote. None when the
    remote holds it now (or there is no remote to share with: no auto-sync); else why not, in a
    few words (the follower's next sync shares it then). Raises what the transport raises."""
    remote = liza.sync_target()
    if remote is None:
        return None
    path = repo_path(liza.repo)
    ref = wip.ref_name(task, agent)
    tracked = liza.repo.references.get(remotes.tracking_of(remote, ref))
    theirs = str(tracked.target) if tracked is not None and \
        isinstance(tracked.target, pygit2.Oid) else None
    if theirs == str(oid):
        return None
    res = transport.push_refs(path, remote, [transport.RefUpdate(
        ref, str(oid), theirs, fast_forward=False)])
    if res.status in (PushStatus.OK, PushStatus.UP_TO_DATE):
        return None
    # A lost lease is most often the follower's sync pushing the same snapshot at the same moment
    # (it saw a snapshot of ours the remote lacked): then the remote holds it all the same.
    if board_refs(path, remote, timeout=transport.DEFAULT_TIMEOUT).get(ref) == str(oid):
        return None
    return f"{res.status.value}: {res.results[0].summary if res.results else ''}".rstrip(": ")
