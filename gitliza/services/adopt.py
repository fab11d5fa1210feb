"""What a clone adopts from a remote: only what verifies (docs/multi-machine.md, "A board nobody
can poison").

A hosted remote (GitHub, GitLab cloud) runs no pre-receive hook, so anyone with push access can put
any commit on its refs/liza/state with plain git. Before the local board, the integration branch
or a task branch moves to what a fetch brought, every state commit new to this clone is replayed
by the engine of `git liza verify` (gitliza/services/verify/engine.py: `replay`, one `verify_commit` per commit,
the same function the hooks and, later, signature checks plug into). Incremental: the commits a
clone already has are trusted (it wrote them itself, or adopted them after this very check), so
the replay starts at the merge base of the local board and the fetched tip: a one-op sync checks
one commit; the first pull of a new clone checks the whole chain (with a bar on a terminal).

A refused tip is not adopted, now or later: the tracking ref the fetch wrote is put back where it
was (a later command reading it must not take the forgery for the remote's word), and nothing
local moves. The refusal is one line, exit 4, naming the commit, its op and the reason.

The integration branch is held to the same rule as on a guarded server: a fast-forward brings in
only commits some approval on the (verified) board covers.
"""
from __future__ import annotations

import sys
from pathlib import Path
import pygit2

from gitliza.core.board import Board
from gitliza.errors import InconsistentState, LizaError
from gitliza.git import refdelete
from gitliza.git.store import Store
from gitliza.services.verify.approvals import Approvals, describe, unapproved
from gitliza.services.verify.engine import Report, VerifyFailure, chain, replay
from gitliza.services.verify.engine import with_bar as bar_replay

BAR_FROM = 256  # commits: below this a replay is too quick for a bar to be worth drawing


class RemoteRefused(InconsistentState):
    """The remote's board does not verify: nothing of it was adopted. `failure` says where."""

    code = "REMOTE_REFUSED"

    def __init__(self, remote: str, failure: VerifyFailure) -> None:
        self.remote = remote
        self.failure = failure
        super().__init__(
            f"refusing {remote}'s board: {failure}; the local board and branches were not moved",
            hint="`git liza repair` restores the remote, see docs/multi-machine.md")


class IntegrationRefused(InconsistentState):
    """The remote's integration branch brings in commits no approval covers."""

    code = "REMOTE_REFUSED"


def trusted_base(repo: pygit2.Repository, local: pygit2.Oid | None,
                 fetched: pygit2.Oid) -> pygit2.Oid | None:
    """Where checking `fetched` starts: the newest commit of it this clone already holds on its
    board (None: none, check the whole chain)."""
    if local is None:
        return None
    return repo.merge_base(local, fetched)


def check_board(store: Store, remote: str, fetched: pygit2.Oid, base: pygit2.Oid | None, *,
                bar: bool = False) -> Report | None:
    """Replay base..fetched (base trusted; None: from the root). None when there is nothing new.
    Raises RemoteRefused at the first commit that does not verify."""
    if base == fetched:
        return None
    try:
        if bar and sys.stderr.isatty():
            return _with_bar(store, fetched, base, remote)
        return replay(store, fetched, base)
    except VerifyFailure as e:
        raise RemoteRefused(remote, e) from None


def _with_bar(store: Store, tip: pygit2.Oid, base: pygit2.Oid | None, remote: str) -> Report:
    """A bar only for a long range: the first pull of a new clone checks the whole chain."""
    if len(chain(store.repo, tip, base)) < BAR_FROM:
        return replay(store, tip, base)
    return bar_replay(store, tip, base, label=f"verifying {remote}'s board")


def put_back(repo_path: Path, tracking: str, refused: str | None, before: str | None) -> None:
    """Undo what the fetch did to the tracking ref of a refused board (by compare-and-swap: a
    concurrent fetch's newer value stays). `before` None: the ref did not exist."""
    repo = pygit2.Repository(str(repo_path))
    ref = repo.references.get(tracking)
    if ref is None or refused is None or str(ref.target) != refused:
        return
    try:
        if before is None:
            refdelete.delete(repo, tracking, refused)
        else:
            ref.set_target(pygit2.Oid(hex=before), "liza: put back a refused board")
    except (pygit2.GitError, KeyError, ValueError, LizaError):
        pass  # moved meanwhile: whatever it holds now came from a later fetch, itself checked


def check_integration(repo: pygit2.Repository, board: Board, remote: str, branch: str,
                      mine: pygit2.Oid, theirs: pygit2.Oid) -> None:
    """Refuse a fast-forward of the local integration branch from `mine` to `theirs` that brings
    in a commit no approval on the (verified) `board` covers: the server hook's rule, enforced by
    every client where no hook runs."""
    bad = unapproved(repo, Approvals.of(board), theirs, [mine])
    if bad:
        raise IntegrationRefused(
            f"refusing {remote}'s {branch}: {describe(bad)}; the local {branch} was not moved",
            hint="someone pushed to it without `git liza merge`, see docs/multi-machine.md")
