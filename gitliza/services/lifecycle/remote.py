"""Sharing with the team remote (docs/multi-machine.md): which remote this command shares with,
pulling the board and the branches before a command that reads them, and fetching a review commit
made on another machine.

The sync engine and the transport are imported inside the functions, for start-up speed: a
command on a machine without a remote never imports them."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pygit2
from pygit2 import Oid, Repository

from gitliza.errors import ConcurrencyConflict, GitFailure, ValidationError
from gitliza.services.lifecycle.common import warn
from gitliza.git.repository import repo_path

if TYPE_CHECKING:
    from gitliza.services.api import Liza


def pull_first(liza: Liza, why: str, *, strict: bool = False, board: bool = True) -> None:
    """Bring the board, the integration branch and the task branches up to date from the team
    remote before a command that reads them (review needs the submitted task and the coder's
    commit, merge builds on the integration tip). `board=False` (claim) leaves the local board
    alone and brings only the branches: the claim branches from the team's integration tip, and
    its op is reconciled by the auto-sync after it is committed, like every op. `strict` (merge):
    a failed pull fails the command; otherwise a warning, and the command works on the local view
    (offline)."""
    remote = liza.sync_target()
    if remote is None:
        return
    from gitliza.services.sync import engine
    try:
        rep = (engine.sync(liza.store, remote, mode="pull") if board
               else engine.pull_branches(liza.store, remote))
    except (ConcurrencyConflict, GitFailure) as e:
        if not strict:
            warn(f"could not pull from {remote.arg} before {why}: {e}; using the local board")
            return
        cls = ConcurrencyConflict if isinstance(e, ConcurrencyConflict) else GitFailure
        raise cls(f"{why}: could not bring the board and the integration branch up to date from "
                  f"{remote.arg}: {e}", hint="retry; `--no-sync` works on the local view") from e
    for d in rep.dropped:
        warn(d.describe())
    for n in rep.notices:
        warn(n)


def shared_integration_tip(liza: Liza, branch: str, local: Oid) -> Oid:
    """The integration tip a claim branches from (`local`: the local branch's tip). Once a team
    remote is configured (even under `--no-sync`, cut off from it), that is the team's: the
    remote's branch as last fetched, whenever the local one holds commits it lacks (a merge
    made offline, unreviewed by the team, or dropped by a sync) or lags behind it (a fast-forward
    held back by a dirty checkout). Work must start from what the team builds on."""
    from gitliza.git.remotes import remote as remotes
    repo: Repository = liza.repo
    name = remotes.configured(repo)
    if name is None:
        return local
    try:
        remote = remotes.resolve(repo_path(repo), name)
        found = repo.references.get(remotes.branch_tracking_ref(remote, branch))
        theirs = found.resolve().target if found is not None else None
    except (ValidationError, GitFailure, KeyError, ValueError, pygit2.GitError):
        return local
    if not isinstance(theirs, Oid) or theirs == local or theirs not in repo:
        return local
    if local != theirs:
        warn(f"claim starts from {remote.arg}'s {branch} {str(theirs)[:12]}, not the local "
             f"{branch} {str(local)[:12]}" + ("" if repo.descendant_of(theirs, local) else
                                               " (it holds work the team's lacks)"))
    return theirs


def ensure_commit(liza: Liza, oid: str, what: str) -> None:
    """Make sure commit `oid` is in this clone: when it is not (it was made on another machine),
    fetch the team remote's task branches, which carry every submitted review commit."""
    repo: Repository = liza.repo
    if _has_commit(repo, oid):
        return
    remote = liza.sync_target()
    if remote is not None:
        from gitliza.git.remotes import transport
        transport.fetch_board(repo_path(repo), remote, task_branches=True)
        if _has_commit(repo, oid):
            return
    where = f"nor on {remote.arg}" if remote else "and no team remote is configured (liza.remote)"
    raise ValidationError(f"{what} {oid[:12]} is not in this clone, {where}",
                          hint="the coder's machine shares it with `git liza sync`")


def _has_commit(repo: Repository, oid: str) -> bool:
    try:
        return isinstance(repo.get(Oid(hex=oid)), pygit2.Commit)
    except ValueError:
        return False
