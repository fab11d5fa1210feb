"""Local ops the remote will never take, dropped by the sync at once as lost races.

Two kinds of op are legal on the remote's board and still cannot be shared; kept, each one wedged
its whole clone in the fleet scenario (docs/multi-machine.md), since every later op of the clone
rides on the same push:

- a merge whose merge commit is not on the remote's integration branch, when the local one cannot
  bring it there (another machine merged first: the branches diverged). Pushing the board would
  make it lie about the merge, so every sync failed IntegrationDiverged until something else moved
  the board. `git liza merge` takes its own merge back while it is still running (the `own` op is
  left to it); any other such merge is dropped here, the task stays APPROVED and the merge queue
  merges it again on the new tip;
- a takeover outrun by a renewal (core/presence/takeovers.py): the holder renewed on the remote
  since the takeover judged its lease, so the server hook refuses the push, and kept refusing
  every push of the clone until the board itself moved past the lease.

A dropped op goes the way of every op a sync drops (engine.py): recorded in dropped.jsonl and said
by the team's follower, the DROPPED_OPS alarm and the webhook; its branch work kept on a rescue
ref, the local integration branch returned to the remote's.
"""
from __future__ import annotations

from typing import Callable, Sequence

import pygit2

from gitliza.core.board import Board
from gitliza.core.encoding import record
from gitliza.core.ops.base import Op
from gitliza.core.presence import takeovers
from gitliza.core.presence.renewals import Renewal
from gitliza.errors import ValidationError
from gitliza.git import liveref
from gitliza.git.repository import contains, ref_oid
from gitliza.git.store import Store
from gitliza.services.sync.branches import Branches, heads

# (code, reason) for an op the remote will never take; None: the op may be pushed.
Veto = Callable[[Board, Op, str], "tuple[str, str] | None"]

MERGE_LOST = "INTEGRATION_DIVERGED"
OUTRUN = "LEASE_RENEWED"


def veto(store: Store, br: Branches, own: str | None = None) -> Veto:
    """The judge of one local op (the board before it, the op, the local commit that first
    recorded it) against what this sync fetched: the remote's integration branch (`br`) and the
    renewals on its live refs (fetched with the board). `own`: the commit of the op whose command
    is syncing it and handles a lost merge race itself (its op is exempt under whatever commit id
    a replay by another process of this clone gave it)."""
    repo = store.repo
    theirs_hex = br.remote.get(heads(br.integration)) if br.integration else None
    theirs = pygit2.Oid(hex=theirs_hex) if theirs_hex else None
    cur = repo.references.get(heads(br.integration)) if br.integration else None
    mine = ref_oid(cur) if cur is not None else None
    held: list[Renewal] | None = None
    # The own op itself: another process of this clone (a pull, a claim's pull) may have replayed
    # it onto the remote's board since its command committed it, under a new commit id.
    own_op = _op_of(repo, own) if own else None

    def lost_merge(op: Op) -> tuple[str, str] | None:
        merged = getattr(op, "merge_commit", None)
        if theirs is None or not merged or theirs not in repo:
            return None  # no remote integration branch yet: the push creates it (branches.py)
        m = pygit2.Oid(hex=merged)
        if m == theirs or (m in repo and contains(repo, theirs, m)):
            return None  # on the remote's branch already
        if mine is not None and m in repo and contains(repo, mine, m) \
                and contains(repo, mine, theirs):
            return None  # the local branch brings it (a fast-forward, if approved)
        return (MERGE_LOST, f"another machine merged into {br.integration} first (merge commit "
                            f"{merged[:12]} is not on the remote's {br.integration}); the task "
                            "stays APPROVED and is merged again on the new tip")

    def judge(before: Board, op: Op, first: str) -> tuple[str, str] | None:
        nonlocal held
        if op.NAME == "merge":
            return None if first == own or (own_op is not None and op == own_op) \
                else lost_merge(op)
        if op.NAME in takeovers.TAKEOVER_OPS and getattr(op, "takeover", None) not in (None,
                                                                                         "none"):
            if held is None:
                held = liveref.read_all(repo)  # the remote's copies included
            o = takeovers.outrun(before, op, held)
            if o is not None:
                return (OUTRUN, f"{o.task}'s holder renewed its lease since this takeover judged "
                                f"it ({o.judged}; renewed until {o.until}): the remote refuses it")
        return None

    return judge


def _op_of(repo: pygit2.Repository, commit: str) -> Op | None:
    try:
        c = repo[commit]
        return record.parse(c.message).op if isinstance(c, pygit2.Commit) else None
    except (KeyError, ValueError, ValidationError):
        return None


def any_doomed(store: Store, commits: Sequence[pygit2.Commit], judge: Veto) -> bool:
    """Whether `judge` refuses one of the ops `commits` record (a linear chain, oldest first;
    each judged on the board its parent holds)."""
    for c in commits:
        try:
            op = record.parse(c.message).op
        except ValidationError:
            continue
        takeover = op.NAME in takeovers.TAKEOVER_OPS and getattr(op, "takeover", None) not in (
            None, "none")
        if op.NAME != "merge" and not takeover:
            continue
        # (a merge is judged by the branches alone: no board read for it)
        before = store.board_at(c.parents[0] if takeover and c.parents else None)
        if judge(before, op, str(c.id)) is not None:
            return True
    return False
