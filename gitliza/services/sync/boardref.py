"""Moving the local board ref: only ever by compare-and-swap, never by force. Sync moves it to
the remote's tip or to a chain rebuilt on it; a merge whose sync found the remote's integration
branch moved on takes its own unshared op back."""
from __future__ import annotations

import pygit2

from gitliza.git.store import Store, _Locked, _Lost
from gitliza.services.sync.replay import commit_at


def move_board(store: Store, old: pygit2.Oid | None, new: pygit2.Oid, why: str) -> bool:
    """Compare-and-swap the local state ref; False when another local writer moved it first."""
    try:
        store._cas(old, new, why)
        return True
    except (_Lost, _Locked):
        return False


def retract_tip(store: Store, tip: pygit2.Oid, why: str) -> bool:
    """Move the local board from `tip` back to its parent by CAS: only for an op that was never
    shared (a merge whose sync found the remote's integration branch moved on). False when the
    ref moved meanwhile or `tip` has no parent."""
    parents = commit_at(store.repo, tip).parent_ids
    return bool(parents) and move_board(store, tip, parents[0], why)
