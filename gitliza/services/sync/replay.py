"""Replaying local ops onto the remote's board: the ops recorded by the commits only this clone has
are re-applied one by one with the core's `apply` on the remote's tip; an op that no longer applies
is dropped with the core's reason. Writes objects only, never a ref. `fate_of` tells auto-sync
whether one op survived a sync (possibly another process's)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import pygit2

from gitliza.core.encoding import record
from gitliza.core.board import Board
from gitliza.core.invariants import problems_of_change
from gitliza.core.ops.base import Op
from gitliza.core.ops.engine import apply
from gitliza.errors import InconsistentState, ValidationError
from gitliza.git.store import Store
from gitliza.git.objects.trees import Batch
from gitliza.services.sync.report import Dropped, Replayed, SyncReport

REROOT_EVERY = 64  # replay: re-read the board from git every N ops so overlays stay small


@dataclass
class Rebuilt:
    """What `replay` wrote: the new tip (no ref moved yet), and what it replayed and dropped."""

    tip: pygit2.Oid | None
    replayed: list[Replayed]
    dropped: list[tuple[Dropped, Op | None]]  # None: the commit recorded no op at all
    board: Board


def _ops_of(commits: Sequence[pygit2.Commit]) -> dict[tuple[str, str, str], list[Op]]:
    """The ops `commits` record, by (name, actor, time): a cheap first filter before comparing."""
    out: dict[tuple[str, str, str], list[Op]] = {}
    for c in commits:
        try:
            op = record.parse(c.message).op
        except ValidationError:
            continue
        out.setdefault((op.NAME, op.actor, op.time), []).append(op)
    return out


def commit_at(repo: pygit2.Repository, oid: pygit2.Oid) -> pygit2.Commit:
    """The commit `oid` names; InconsistentState when the object is not a commit."""
    obj = repo[oid]
    if not isinstance(obj, pygit2.Commit):
        raise InconsistentState(f"{str(oid)[:12]} is not a commit")
    return obj


def local_only(store: Store, local: pygit2.Oid, base: pygit2.Oid | None) -> list[pygit2.Commit]:
    """The commits after `base` up to `local`, oldest first (the state ref is a linear chain)."""
    out: list[pygit2.Commit] = []
    commit: pygit2.Commit | None = commit_at(store.repo, local)
    while commit is not None and commit.id != base:
        if len(commit.parents) > 1:
            raise InconsistentState(f"state commit {str(commit.id)[:12]} is a merge; "
                                    f"{store.ref} must be linear")
        out.append(commit)
        commit = commit.parents[0] if commit.parents else None
    if base is not None and commit is None:
        raise InconsistentState(f"{str(base)[:12]} is not an ancestor of {str(local)[:12]}")
    out.reverse()
    return out


def replay(store: Store, onto: pygit2.Commit | None, commits: Sequence[pygit2.Commit],
           origin: dict[str, str] | None = None, *,
           already: Sequence[pygit2.Commit] = (),
           veto: Callable[[Board, Op, str], tuple[str, str] | None] | None = None) -> Rebuilt:
    """Re-apply the ops recorded by `commits` on `onto`, writing one commit per op that still
    applies. Writes objects only: no ref moves. `origin` maps a commit to the local commit its op
    was first recorded in (for reports across rounds).

    `already`: commits `onto` brought since the common base; an op one of them records is on the
    board already and is not applied twice (a remote rebuilt by `git liza repair` carries the ops
    of this clone's old chain in new commits). A commit whose message records no op was never
    written by gitliza (a forgery a clone adopted before sync checked what it fetched): it is
    dropped, with the reason.

    `veto`: why the remote will never take an op that applies (doomed.py), as (code, reason);
    such an op is dropped like one that no longer applies."""
    origin = origin or {}
    present = _ops_of(already)
    # One pack for every REROOT_EVERY ops (written before the board is re-read from git), not
    # one per op: parents and their trees are followed by id, never read back.
    batch = Batch(store.repo)
    parent = None if onto is None else onto.id
    parent_tree = None if onto is None else onto.tree_id
    board = store.board_at(onto)
    replayed: list[Replayed] = []
    dropped: list[tuple[Dropped, Op | None]] = []
    for n, commit in enumerate(commits):
        first = origin.get(str(commit.id), str(commit.id))
        try:
            rec = record.parse(commit.message)
        except ValidationError as e:
            # Not a gitliza transition: we cannot know what it meant, so we cannot replay it.
            dropped.append((Dropped(op="?", actor="?", task=None, time="?", original=first,
                                    reason=f"bad record: {e}", code=e.code), None))
            continue
        op = rec.op
        if op in present.get((op.NAME, op.actor, op.time), ()):
            continue  # the board has it already (see `already`)
        if op.NAME == "upgrade" and (board.format_version or 0) >= getattr(op, "target", 0):
            continue  # another clone upgraded the board first: this one's upgrade is moot
        refused = veto(board, op, first) if veto is not None else None
        if refused is not None:
            dropped.append((Dropped(op=op.NAME, actor=op.actor, task=rec.task, time=op.time,
                                    original=first, reason=refused[1], code=refused[0]), op))
            continue
        try:
            outcome = apply(board, op)
            store.check_signable(board, outcome, op)  # re-signed by its actor's key, or dropped
        except ValidationError as e:  # the op is not legal any more after the remote's ops
            dropped.append((Dropped(op=op.NAME, actor=op.actor, task=rec.task, time=op.time,
                                    original=first, reason=e.message, code=e.code), op))
            continue
        bad = problems_of_change(outcome.board, outcome.changes)
        if bad:  # a core bug; never commit it (same rule as Store.transact)
            raise InconsistentState(f"replaying {op.NAME} from {first[:12]} would break an "
                                    f"invariant: {bad[0]}")
        new, parent_tree = store.stage_commit(batch, parent, parent_tree, outcome, op)
        parent = new
        if (n + 1) % REROOT_EVERY == 0:
            batch.flush()
            board = store.board_at(commit_at(store.repo, new))
        else:
            board = outcome.board
        replayed.append(Replayed(op=op.NAME, actor=op.actor, task=outcome.event.task,
                                 time=op.time, original=first, commit=str(new),
                                 notices=outcome.notices))
    batch.flush()
    return Rebuilt(parent, replayed, dropped, board)


def fate_of(store: Store, commit: str, op: Op, report: SyncReport | None) -> Dropped | None:
    """After a sync, whether the op committed as `commit` is still on the local board.

    Returns its Dropped entry when it is gone. A concurrent sync in another process of this clone
    may have replayed (new commit id, same op) or dropped it, so absence of the commit alone is
    not proof: look for the op itself among the commits that are not ancestors of `commit`.
    """
    if report is not None:
        for d in report.dropped:
            if d.original == commit:
                return d
    repo = store.repo
    tip = store.tip()
    oid = pygit2.Oid(hex=commit)
    if tip is None:
        return Dropped(op=op.NAME, actor=op.actor, task=getattr(op, "task", None), time=op.time,
                       original=commit, reason="the local board is gone", code="NOT_FOUND")
    if tip == oid or repo.descendant_of(tip, oid):
        return None
    base = repo.merge_base(tip, oid)
    for c in local_only(store, tip, base):
        try:
            if record.parse(c.message).op == op:
                return None
        except ValidationError:
            continue
    return Dropped(op=op.NAME, actor=op.actor, task=getattr(op, "task", None), time=op.time,
                   original=commit, code="CONCURRENCY_CONFLICT",
                   reason="a concurrent sync of this clone dropped it (it no longer applied on "
                          "the remote's board; `git liza log` shows what won)")
