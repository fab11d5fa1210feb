"""`git liza repair`: restore a board that fails verification (docs/multi-machine.md, "Repairing
a poisoned board").

    report = repair(store, "origin")   # the remote's board, moved with a lease
    report = repair(store, None)       # this repository's own board (e.g. on the server)

The board is replayed from its root by verify's engine (gitliza/services/verify/engine.py) up to the first commit
that does not verify; the commit before it is the last one that does (the "good" base). Every op
recorded after the base, the failing commit's included, is then re-applied on it exactly as
sync replays a clone's local ops (gitliza/services/sync/replay.py `replay`: the core's `apply`, the op's own
recorded time): what is still legal is kept, in new commits that verify; what is not (the
forgery's self-approval, a merge of a task it approved, a commit that records no op at all) is
dropped and reported with the reason. A forged tree around a legal op loses the forgery and keeps
the op. The rebuilt chain is verified once more, then the ref moves by compare-and-swap: for a
remote, a push with the lease "still at the tip we judged" (a non-fast-forward, which is why a
server guarded by the gitliza hook must be repaired on the server itself: the hook refuses any
rewrite of the board by push).

Every clone converges on its next sync: the rebuilt tip verifies, and sync's replay skips a local
op the remote already carries (a clone that had adopted the forgery holds the old commits), so the
forgery's illegal ops are dropped there too and nothing legal is applied twice.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pygit2

from gitliza.errors import ConcurrencyConflict, InconsistentState, ValidationError
from gitliza.git.remotes import remote as remotes
from gitliza.git.remotes import shallow, transport
from gitliza.git.repository import repo_path
from gitliza.git.store import Store, _Locked, _Lost
from gitliza.services.sync.replay import replay
from gitliza.services.sync.report import Dropped, Replayed
from gitliza.services.verify.engine import VerifyFailure
from gitliza.services.verify.engine import replay as verify_replay


@dataclass
class RepairReport:
    where: str  # the remote's name, or "this repository"
    before: str  # the tip that failed verification
    failure: VerifyFailure
    base: str | None  # the last commit that verifies (None: not even the root did)
    after: str  # the tip now
    kept: list[Replayed] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    moved: bool = False

    def to_json(self) -> dict[str, Any]:
        f = self.failure
        return {"where": self.where, "before": self.before, "after": self.after,
                "base": self.base, "moved": self.moved,
                "failure": {"commit": f.commit, "op": f.op, "reason": f.reason},
                "kept": [r.to_json() for r in self.kept],
                "dropped": [d.to_json() for d in self.dropped]}


def first_failure(store: Store, tip: pygit2.Oid) -> VerifyFailure | None:
    try:
        verify_replay(store, tip, None)
    except VerifyFailure as e:
        return e
    return None


def last_good(store: Store, tip: pygit2.Oid, failure: VerifyFailure) -> pygit2.Oid | None:
    """The newest first-parent ancestor of `tip` whose whole history verifies (None: none)."""
    repo = store.repo
    bad: VerifyFailure | None = failure
    while bad is not None:
        try:
            commit = repo[pygit2.Oid(hex=bad.commit)]
        except (KeyError, ValueError):
            return None
        if not isinstance(commit, pygit2.Commit) or not commit.parent_ids:
            return None
        candidate = commit.parent_ids[0]
        bad = first_failure(store, candidate)
        if bad is None:
            return candidate
    return None


def _after(repo: pygit2.Repository, tip: pygit2.Oid, base: pygit2.Oid | None) -> list[pygit2.Commit]:
    """The commits after `base` up to `tip` along first parents, oldest first (a forged history
    may hold merges: their first parent is the board's line)."""
    out: list[pygit2.Commit] = []
    oid: pygit2.Oid | None = tip
    while oid is not None and oid != base:
        c = repo[oid]
        assert isinstance(c, pygit2.Commit)
        out.append(c)
        oid = c.parent_ids[0] if c.parent_ids else None
    out.reverse()
    return out


def rebuild(store: Store, tip: pygit2.Oid) -> RepairReport:
    """The repaired chain for the board at `tip` (objects written, no ref moved)."""
    repo = store.repo
    if shallow.boundary_below(repo, tip) is not None:
        # Repair looks for the last commit whose whole history verifies: it needs all of it.
        raise ValidationError("this clone joined the board at a seal and lacks the history "
                              "repair replays; nothing was changed",
                              hint="`git liza verify --full` fetches it, then repair again")
    failure = first_failure(store, tip)
    if failure is None:
        raise ValidationError("the board verifies: nothing to repair")
    base = last_good(store, tip, failure)
    if base is None:
        raise InconsistentState(f"not even the board's first commit verifies ({failure}); there "
                                "is nothing to rebuild on",
                                hint="start a new board, or restore the ref from a backup")
    onto = repo[base]
    assert isinstance(onto, pygit2.Commit)
    rebuilt = replay(store, onto, _after(repo, tip, base))
    new = rebuilt.tip if rebuilt.tip is not None else base
    try:
        verify_replay(store, new, base)  # what we rebuilt is what sync would accept
    except VerifyFailure as e:  # a core bug, never pushed
        raise InconsistentState(f"the rebuilt board does not verify: {e}") from None
    return RepairReport(where="", before=str(tip), failure=failure, base=str(base),
                        after=str(new), kept=list(rebuilt.replayed),
                        dropped=[d for d, _op in rebuilt.dropped])


def repair(store: Store, remote: remotes.Remote | None) -> RepairReport:
    """Repair `remote`'s board (resolved by the caller: git/remotes `resolve`), or with None
    (`--here`) this repository's own refs/liza/state."""
    if remote is None:
        tip = store.tip()
        if tip is None:
            raise ValidationError(f"no board here ({store.ref} does not exist)")
        rep = _checked(store, tip, "this repository")
        try:
            store._cas(tip, pygit2.Oid(hex=rep.after), "liza repair: rebuilt from "
                       f"{(rep.base or '')[:12]}")
        except (_Lost, _Locked):
            raise ConcurrencyConflict(f"{store.ref} moved while it was being repaired; nothing "
                                      "was changed", hint="run `git liza repair --here` again") \
                from None
        rep.moved = True
        return rep
    path = repo_path(store.repo)
    rem = remote
    name = rem.arg
    fetched = transport.fetch_board(path, rem)
    if fetched.new_oid is None:
        raise ValidationError(f"{name} has no board: nothing to repair")
    tip = pygit2.Oid(hex=fetched.new_oid)
    rep = _checked(store, tip, name)
    res = transport.push_refs(path, rem, [transport.RefUpdate(
        remotes.STATE_REF, rep.after, str(tip), fast_forward=False)])
    if not res.ok:
        raise ConcurrencyConflict(f"{name}'s board moved while it was being repaired; nothing was "
                                  "changed", hint="run `git liza repair` again")
    rep.moved = True
    return rep


def _checked(store: Store, tip: pygit2.Oid, where: str) -> RepairReport:
    try:
        rep = rebuild(store, tip)
    except ValidationError as e:
        if "nothing to repair" not in e.message:
            raise
        raise ValidationError(f"{where}: the board at {str(tip)[:12]} verifies; nothing to "
                              "repair, nothing was changed") from None
    rep.where = where
    return rep
