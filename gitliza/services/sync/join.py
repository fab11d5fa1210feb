"""Joining a long board: the first pull of a clone that has no board fetches the state ref shallow
and verifies from the newest seal (docs/multi-machine.md, "Joining a long board").

`fetch`: `git fetch --depth=N` of the state ref only (N: `git config liza.joinDepth`, default
JOIN_DEPTH; 0 fetches the whole chain, as before seals), then 2N, 4N... from the tip until the
fetched commits hold a seal or the chain is complete. The ordinary fetch that follows brings the
branches whole and finds the board already there. `base`: where the check of the fetched tip
starts when the clone trusts none of it yet: the newest seal, checked
(gitliza/services/verify/seals.py); without one, the whole chain, fetched first if the join left
part of it on the remote. What is adopted is exactly what a full join adopts: every commit after
the seal replays, the seal is the human's and signed where signatures are on.
"""
from __future__ import annotations

from pathlib import Path

import pygit2

from gitliza.git.remotes import remote as remotes
from gitliza.git.remotes import shallow
from gitliza.git.store import Store
from gitliza.services.adopt import RemoteRefused
from gitliza.services.verify import seals
from gitliza.services.verify.engine import VerifyFailure

DEPTH_KEY = "liza.joinDepth"
JOIN_DEPTH = 1024  # commits: above the seal cadence docs/multi-machine.md suggests (1,000)


def depth(repo: pygit2.Repository) -> int:
    """The first fetch's depth (`git config liza.joinDepth`; 0: no shallow join)."""
    try:
        value = int(str(repo.config[DEPTH_KEY]).strip())
    except (KeyError, ValueError, pygit2.GitError):
        return JOIN_DEPTH
    return max(value, 0)


def fetch(store: Store, path: Path, remote: remotes.Remote, timeout: float) -> bool:
    """The shallow first fetch (the module docstring); True when it fetched. Nothing when this
    clone already has a board or a tracking ref of it (a depth on a complete chain would cut it)."""
    repo = store.repo
    n = depth(repo)
    if n == 0 or store.tip() is not None:
        return False
    tracking = remotes.tracking_of(remote, remotes.STATE_REF)
    if remotes.read_ref(path, tracking) is not None:
        return False
    if shallow.fetch(path, remote, n, timeout) is None:
        return False
    while True:
        store.reopen()  # libgit2 reads the shallow file once per handle
        repo = store.repo
        tip = remotes.read_ref(path, tracking)
        if tip is None:
            return True  # the remote has no board
        oid = pygit2.Oid(hex=tip)
        # (the project's own checkout may be shallow too: only the board's chain counts)
        if shallow.boundary_below(repo, oid) is None or seals.newest(repo, oid) is not None:
            return True
        # A longer depth from the tip, not `--deepen`: that would deepen every shallow boundary
        # of the repository, a shallow checkout's branches too.
        n *= 2
        shallow.fetch(path, remote, n, timeout)


def base(store: Store, path: Path, remote: remotes.Remote, fetched: pygit2.Oid,
         timeout: float) -> pygit2.Oid | None:
    """Where the check of `fetched` starts when this clone has no board: its newest seal, checked
    (RemoteRefused if it fails); None, with the whole chain fetched, when it has none."""
    try:
        seal = seals.start(store, fetched)
    except VerifyFailure as e:
        raise RemoteRefused(remote.arg, e) from None
    if seal is not None:
        return seal.id
    if shallow.boundary_below(store.repo, fetched) is not None:
        shallow.unshallow(path, remote, timeout)
        store.reopen()
    return None
