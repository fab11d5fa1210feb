"""Sharing the board with a git remote: fetch, reconcile, push (DESIGN.md section 4).

    from gitliza.services.sync import sync, pull, push
    report = sync(store)                 # the configured remote, else origin
    report.dropped                       # local ops that no longer applied, with their reasons

One round: fetch `refs/liza/*` (transport.py: the git executable, or in process for a plain bare
remote on this machine, gitliza/git/direct.py), then compare the local tip L
with the fetched remote tip R:

- R is an ancestor of L: push L with the lease "the remote is still at R";
- L is an ancestor of R: move the local ref to R by compare-and-swap (a fast-forward);
- diverged: the local-only commits (merge base .. L, oldest first) are decoded from their
  trailers and re-applied one by one on R with the core's `apply`. An op that no longer applies
  (another machine claimed the task first, it was abandoned meanwhile...) is dropped with the
  error's message as its reason. The local ref then moves by CAS from L to the rebuilt chain, and
  the rebuilt tip is pushed with the lease R.

A lost race anywhere (a local writer moved L, another machine moved R) starts a new round; after
`rounds` rounds the sync gives up with ConcurrencyConflict (exit 2). The remote's order always
wins and nothing is ordered by wall clock: replayed ops keep their recorded Liza-Time, so a lease
check during replay uses the time the op was really made.

Branches (docs/multi-machine.md): the same fetch mirrors the remote's integration branch and task
branches (`refs/heads/liza/*` -> refs/remotes/<remote>/liza-tasks/*). Once the board is reconciled,
the local integration branch is created or fast-forwarded to the remote's (never when it diverged,
never over a dirty checkout), and the push is ONE atomic push of the state ref plus the integration
branch (when it is ahead with approved work only: a merge) and the task branches whose tip is the
board's review_commit of a submitted task (READY_FOR_REVIEW, APPROVED), each with its own lease.
The server hook judges the integration branch against the board after the push, so a merge must
reach it together with its MERGED record.

Safety: the local ref only ever moves by CAS, to the remote tip or to a chain built on the remote
tip that contains every local op that still applies. If anything fails midway the ref stays where
it was, and the commits written for an abandoned attempt are unreachable garbage.
"""
from __future__ import annotations

import dataclasses
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import pygit2

from gitliza.core import record
from gitliza.core.board import Board
from gitliza.core.invariants import problems_of_change
from gitliza.core.ops.base import Op
from gitliza.core.ops.engine import apply
from gitliza.core.states import TaskState
from gitliza.errors import ConcurrencyConflict, InconsistentState, LizaError, ValidationError
from gitliza.git import pushresults, remotes, transport
from gitliza.git.store import Store, _Locked, _Lost
from gitliza.git.tasklocks import task_lock
from gitliza.git.repository import ref_oid
from gitliza.git.worktree_list import list_task_branches

ALIAS_KEY = "sync.remote"  # the name; `liza.remote` (remotes.CONFIG_KEY) wins
MAX_ROUNDS = 6
ROUND_DELAYS = (0.0, 0.1, 0.25, 0.5, 1.0)  # before rounds 2..6, plus jitter
JITTER = 0.1
REROOT_EVERY = 64  # replay: re-read the board from git every N ops so overlays stay small
STAND_DOWN_OPS = ("claim", "claim-review")
# Task branches are pushed while the board says their tip is what is under review or approved.
SUBMITTED = (TaskState.READY_FOR_REVIEW, TaskState.APPROVED)

Progress = Callable[[str], None]


# --------------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class Replayed:
    """A local op re-applied on top of the remote's ops."""

    op: str
    actor: str
    task: str | None
    time: str
    original: str  # the local commit it came from (first recorded, before any replay)
    commit: str  # the commit that carries it now
    notices: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "actor": self.actor, "task": self.task, "time": self.time,
                "original": self.original, "commit": self.commit, "notices": list(self.notices)}


@dataclass(frozen=True)
class Dropped:
    """A local op that no longer applies on the remote's board: it is not on the board any more."""

    op: str
    actor: str
    task: str | None
    time: str
    original: str  # the local commit that recorded it (still in the reflog)
    reason: str  # the core's message: why the op is not legal after the remote's ops
    code: str  # the error code (INVALID_TRANSITION, LEASE_LOST, VALIDATION...)
    stand_down: bool = False  # a claim lost to another machine: the agent must stop working
    worktree: str | None = None  # what became of the local task worktree (stand-downs only)

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "actor": self.actor, "task": self.task, "time": self.time,
                "original": self.original, "reason": self.reason, "code": self.code,
                "stand_down": self.stand_down, "worktree": self.worktree}

    def describe(self) -> str:
        what = f"{self.op}{' ' + self.task if self.task else ''} by {self.actor} ({self.time})"
        text = f"dropped {what}: {self.reason}"
        if self.stand_down:
            text += f"; {self.actor} must stand down from {self.task}"
        if self.worktree:
            text += f"; worktree {self.worktree}"
        return text


@dataclass
class SyncReport:
    mode: str  # sync | pull | push
    remote: str = ""
    action: str = ""  # see ACTIONS below
    local_before: str | None = None
    local_after: str | None = None
    remote_before: str | None = None  # the remote tip at the first fetch
    remote_after: str | None = None  # the remote tip when we finished (what we pushed, if we did)
    fetched: int = 0  # remote ops new to this clone at the first fetch
    verified: int = 0  # fetched state commits replayed by verify before adopting them
    pushed: bool = False
    rounds: int = 0
    replayed: list[Replayed] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    branches: list[str] = field(default_factory=list)  # what sync did to branches, one line each

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "remote": self.remote, "action": self.action,
                "local_before": self.local_before, "local_after": self.local_after,
                "remote_before": self.remote_before, "remote_after": self.remote_after,
                "fetched": self.fetched, "verified": self.verified, "replayed": [r.to_json() for r in self.replayed],
                "dropped": [d.to_json() for d in self.dropped], "pushed": self.pushed,
                "rounds": self.rounds, "notices": list(self.notices),
                "branches": list(self.branches)}


# action values
UP_TO_DATE = "up-to-date"  # nothing to do
PUSHED = "pushed"  # the remote was behind: fast-forwarded by our push
FAST_FORWARD = "fast-forward"  # we were behind: local ref moved to the remote tip
REPLAYED = "replayed"  # diverged: local ops replayed on the remote tip (and pushed, for sync)
AHEAD = "ahead"  # pull only: the local board has ops the remote lacks (not pushed)
BEHIND = "behind"  # push only: the remote has ops this clone lacks (nothing pushed)
NO_BOARD = "no-board"  # neither side has a board


class IntegrationDiverged(ConcurrencyConflict):
    """A merge recorded on the local board is not on the remote's integration branch, and the
    local integration branch cannot be pushed (another machine merged first: the branches diverged).
    Nothing was pushed: the board must not say MERGED with a merge commit the remote lacks.
    `git liza merge` undoes its own merge and merges again on the new tip; see docs/multi-machine.md.
    """

    code = "INTEGRATION_DIVERGED"

    def __init__(self, message: str, tasks: tuple[str, ...], *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.tasks = tasks


class SyncGaveUp(ConcurrencyConflict):
    """Every round lost a race. `report` says what was already done (drops are final locally)."""

    def __init__(self, message: str, report: SyncReport, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.report = report


# --------------------------------------------------------------------------------------------------
# Remote selection


def configured_remote(repo: pygit2.Repository) -> str | None:
    """`git config liza.remote`, else `git config sync.remote`, else None (no auto-sync).

    Read with pygit2 (no process): auto-sync asks this after every mutating command.
    """
    try:
        cfg = repo.config
    except pygit2.GitError:
        return None
    for key in (remotes.CONFIG_KEY, ALIAS_KEY):
        try:
            value = str(cfg[key]).strip()
        except (KeyError, pygit2.GitError):
            continue
        if value:
            return value
    return None


def repo_path(repo: pygit2.Repository) -> Path:
    """Where git runs for this repository (the work tree, or the git dir of a bare one)."""
    return Path(repo.workdir or repo.path)


# --------------------------------------------------------------------------------------------------
# Replay


@dataclass
class Rebuilt:
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


def _commit(repo: pygit2.Repository, oid: pygit2.Oid) -> pygit2.Commit:
    obj = repo[oid]
    if not isinstance(obj, pygit2.Commit):
        raise InconsistentState(f"{str(oid)[:12]} is not a commit")
    return obj


def local_only(store: Store, local: pygit2.Oid, base: pygit2.Oid | None) -> list[pygit2.Commit]:
    """The commits after `base` up to `local`, oldest first (the state ref is a linear chain)."""
    out: list[pygit2.Commit] = []
    commit: pygit2.Commit | None = _commit(store.repo, local)
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
           already: Sequence[pygit2.Commit] = ()) -> Rebuilt:
    """Re-apply the ops recorded by `commits` on `onto`, writing one commit per op that still
    applies. Writes objects only: no ref moves. `origin` maps a commit to the local commit its op
    was first recorded in (for reports across rounds).

    `already`: commits `onto` brought since the common base; an op one of them records is on the
    board already and is not applied twice (a remote rebuilt by `git liza repair` carries the ops
    of this clone's old chain in new commits). A commit whose message records no op was never
    written by gitliza (a forgery a clone adopted before sync checked what it fetched): it is
    dropped, with the reason."""
    from gitliza.git.trees import Batch
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
            board = store.board_at(_commit(store.repo, new))
        else:
            board = outcome.board
        replayed.append(Replayed(op=op.NAME, actor=op.actor, task=outcome.event.task,
                                 time=op.time, original=first, commit=str(new),
                                 notices=outcome.notices))
    batch.flush()
    return Rebuilt(parent, replayed, dropped, board)


# --------------------------------------------------------------------------------------------------
# Stand-down of a lost claim


def stand_down(store: Store, op: Op, board: Board, replayed: Sequence[Replayed]) -> str | None:
    """Clean up after a dropped claim: the local task worktree and branch go if they hold no work.

    Returns what happened ("removed ...", "kept ...") or None when there was nothing on disk.
    Never deletes work: a dirty checkout or commits beyond the claimed base are kept and flagged.
    """
    task_id = getattr(op, "task", None)
    if op.NAME != "claim" or not isinstance(task_id, str):
        return None
    t = board.task(task_id)
    keepers = {r.actor for r in replayed if r.op == "claim" and r.task == task_id}
    if t is not None and t.status == TaskState.CLAIMED and t.assigned_to in keepers:
        # A local agent still holds the task (its own claim replayed): the worktree is its.
        return f"kept: {t.assigned_to} (this clone) holds {task_id}"
    try:
        with task_lock(store.repo, task_id, timeout=0) as got:
            if not got:
                # A gitliza command of this clone is working on the task right now (a claim by
                # another local agent, or the very claim whose auto-sync dropped it: that one
                # undoes its own worktree). Removing under it could destroy its checkout.
                return f"kept: a command of this clone holds {task_id}'s lock; not touched"
            return _remove_if_unused(store, task_id, str(getattr(op, "base_commit", "") or ""))
    except LizaError as e:
        return f"kept: could not remove it ({e})"


def _remove_if_unused(store: Store, task_id: str, base: str) -> str | None:
    """Remove the task's worktree and branch unless they hold work (dirty, or commits beyond
    the claimed base): those are kept and flagged. None: nothing of the task's was on disk."""
    from gitliza.git import checkouts, worktree_list, worktrees
    entries = [e for e in worktree_list.list_task_worktrees(store.repo) if e.task_id == task_id]
    branch = worktree_list.list_task_branches(store.repo).get(task_id)
    if not entries and branch is None:
        return None
    for e in entries:
        if e.directory_exists:
            problems = checkouts.clean_sync_problems(e.path)
            if problems:
                return f"kept: {e.path} is dirty ({'; '.join(problems[:3])})"
        if e.head is not None and str(e.head) != base:
            return f"kept: {e.path} has commits beyond the claimed base {base[:12]}"
    if branch is not None and str(branch) != base:
        return f"kept: branch liza/{task_id} has commits beyond the claimed base {base[:12]}"
    worktrees.remove_task_worktree(store.repo, task_id)
    return f"removed .worktrees/{task_id} and branch liza/{task_id}"


# --------------------------------------------------------------------------------------------------
# The sync loop


def _move(store: Store, old: pygit2.Oid | None, new: pygit2.Oid, why: str) -> bool:
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
    parents = _commit(store.repo, tip).parent_ids
    return bool(parents) and _move(store, tip, parents[0], why)


def _adoptable(store: Store, path: Path, rep: SyncReport, r: pygit2.Oid,
               verified: pygit2.Oid | None, tracking: str, before: str | None, *,
               bar: bool = False) -> pygit2.Oid:
    """Check the fetched board tip `r` before anything moves to it (gitliza/services/adopt.py): from the
    newest commit this clone already trusts (its board's merge base with `r`, or the tip an
    earlier round of this sync checked). Returns `r`; raises RemoteRefused, with the tracking ref
    put back, when it does not verify."""
    from gitliza.services.adopt import RemoteRefused, check_board, put_back, trusted_base
    repo = store.repo
    base = trusted_base(repo, store.tip(), r)
    if verified is not None and (verified == r or repo.descendant_of(r, verified)) and (
            base is None or verified == base or repo.descendant_of(verified, base)):
        base = verified
    try:
        checked = check_board(store, rep.remote, r, base, bar=bar)
    except RemoteRefused:
        put_back(path, tracking, str(r), before)
        raise
    rep.verified += 0 if checked is None else checked.commits
    return r


def _count(store: Store, tip: pygit2.Oid | None, stop: pygit2.Oid | None) -> int:
    if tip is None:
        return 0
    if stop is None:
        return sum(1 for _ in store.history(str(tip)))
    return len(local_only(store, tip, stop))


def sync(store: Store, remote: str | None = None, *, mode: str = "sync", rounds: int = MAX_ROUNDS,
         progress: Progress | None = None, cleanup: bool = True,
         timeout: float = transport.DEFAULT_TIMEOUT,
         sleep: Callable[[float], None] = time.sleep) -> SyncReport:
    """Reconcile the local board with `remote` (None: configured remote, else origin).

    mode "sync": both ways; "pull": fetch and bring the local board up to date (replaying local
    ops if needed), never push; "push": push only if the remote is an ancestor of the local board.
    The integration branch and the task branches travel along (module docstring).
    """
    if mode not in ("sync", "pull", "push"):
        raise ValueError(mode)
    repo = store.repo
    path = repo_path(repo)
    remote = remote or configured_remote(repo)
    rep = SyncReport(mode=mode)
    rep.remote = remotes.resolve_remote(path, remote)
    say = progress or (lambda _line: None)
    origin: dict[str, str] = {}  # rebuilt commit -> the local commit its op came from
    verified: pygit2.Oid | None = None  # the newest remote tip this sync has checked
    integ = _integration(store, store.tip())
    prefix = remotes.tracking_ref(path, remote)[: -len("liza/state")]  # refs/remotes/<ns>/
    for rnd in range(1, rounds + 1):
        rep.rounds = rnd
        if rnd > 1:
            sleep(ROUND_DELAYS[min(rnd - 2, len(ROUND_DELAYS) - 1)] + random.uniform(0, JITTER))
        say(f"fetching the board from {rep.remote}" + (f" (round {rnd})" if rnd > 1 else ""))
        # The remote's task branches only matter for pushing ours; fetching them all would make
        # every sync cost as much as there are open tasks. A later round fetches them all.
        tasks, known = _task_leases(store, prefix) if rnd == 1 else (True, {})
        try:
            fetched = _fetch(path, remote, integ, timeout, progress, tasks)
        except ConcurrencyConflict:
            # Another sync in this clone (a second supervisor, the heartbeat thread) updated the
            # tracking ref under this fetch: a lost race like a refused push, so another round.
            continue
        r_hex = fetched.new_oid
        r = pygit2.Oid(hex=r_hex) if r_hex else None
        tracking_before = fetched.old_oid
        if r is not None and r != verified:
            # Nothing is read from the fetched board (not even its integration branch's name)
            # before it verifies.
            verified = _adoptable(store, path, rep, r, verified, fetched.tracking_ref,
                                  tracking_before, bar=progress is not None)
        want = _integration(store, r)
        if want is not None and want != integ:
            # The remote's board names an integration branch we did not fetch (a first pull, or
            # a changed config): fetch again with it, before judging anything.
            integ = want
            fetched = _fetch(path, remote, integ, timeout, progress, tasks)
            r_hex = fetched.new_oid
            r = pygit2.Oid(hex=r_hex) if r_hex else None
            if r is not None and r != verified:
                verified = _adoptable(store, path, rep, r, verified, fetched.tracking_ref,
                                      tracking_before, bar=progress is not None)
        br = _Branches(integ, dict(fetched.branches) if tasks else {**known, **fetched.branches},
                       fetched.tracking_ref)
        local = store.tip()
        if rnd == 1:
            rep.local_before = None if local is None else str(local)
            rep.remote_before = r_hex
            if r is not None:
                base = repo.merge_base(local, r) if local is not None else None
                rep.fetched = _count(store, r, base)
        rep.local_after, rep.remote_after = (None if local is None else str(local)), r_hex

        if r is None and local is None:
            rep.action = NO_BOARD
            return rep
        if local is not None and (r is None or (local != r and repo.descendant_of(local, r))):
            # The remote is behind (or has no board): a plain fast-forward push.
            if mode == "pull":
                rep.action = AHEAD if r is None or local != r else UP_TO_DATE
                _finish(store, path, remote, local, r, rep, say, timeout, br)
                return rep
            if _finish(store, path, remote, local, r, rep, say, timeout, br):
                rep.action = rep.action or PUSHED
                return rep
            continue
        assert r is not None
        if local == r:
            if _finish(store, path, remote, local, r, rep, say, timeout, br):
                rep.action = rep.action or UP_TO_DATE
                return rep
            continue  # a branch lease was lost: fetch again
        if local is None or repo.descendant_of(r, local):
            # We are behind: take the remote's ops as they are.
            if mode == "push":
                rep.action = BEHIND
                return rep
            say(f"fast-forwarding the local board to {r_hex[:12] if r_hex else ''}")
            if _move(store, local, r, f"liza sync: fast-forward to {rep.remote}"):
                rep.local_after = r_hex
                rep.action = rep.action or FAST_FORWARD
                if _finish(store, path, remote, r, r, rep, say, timeout, br):
                    return rep
            continue  # a local writer committed meanwhile (or a branch lease was lost): again
        # Diverged.
        if mode == "push":
            raise ConcurrencyConflict(
                f"the board on {rep.remote} has ops this clone lacks, and this clone has ops it "
                "lacks; nothing was pushed", hint="run `git liza sync` to replay and push")
        base = repo.merge_base(local, r)
        if base is None:
            raise ValidationError(
                f"the local board and the board on {rep.remote} share no history (two separate "
                "`git liza init`s); nothing was changed",
                hint="keep one: e.g. `git update-ref -d refs/liza/state` here, then `git liza pull`")
        mine = local_only(store, local, base)
        say(f"replaying {len(mine)} local op(s) on {rep.remote}'s board")
        rebuilt = replay(store, _commit(repo, r), mine, origin,
                         already=local_only(store, r, base))
        new_tip = rebuilt.tip
        assert new_tip is not None
        if not _move(store, local, new_tip, f"liza sync: replay on {rep.remote}"):
            continue  # a local writer moved the ref: replay again from the fresh tip
        # From here on the drops are final: the local board no longer has them.
        for r_ in rebuilt.replayed:
            origin[r_.commit] = r_.original
        rep.replayed = rebuilt.replayed
        rep.local_after = str(new_tip)
        rep.action = REPLAYED
        for d, op in rebuilt.dropped:
            d = _with_stand_down(store, d, op, rebuilt, cleanup)
            rep.dropped.append(d)
            say(d.describe())
        for r_ in rebuilt.replayed:
            rep.notices.extend(r_.notices)
        if _finish(store, path, remote, new_tip, r, rep, say, timeout, br):
            return rep
    raise SyncGaveUp(f"sync with {rep.remote} lost the race {rounds} times (the boards kept "
                     "moving); the local board keeps every local op that was not dropped",
                     rep, hint="retry with backoff: `git liza sync`")


def _with_stand_down(store: Store, d: Dropped, op: Op | None, rebuilt: Rebuilt,
                     cleanup: bool) -> Dropped:
    if d.op not in STAND_DOWN_OPS or op is None:
        return d
    fate = stand_down(store, op, rebuilt.board, rebuilt.replayed) if cleanup else None
    return dataclasses.replace(d, stand_down=True, worktree=fate)


# --------------------------------------------------------------------------------------------------
# Branches: the integration branch and the task branches travel with the board


@dataclass
class _Branches:
    integration: str | None  # the board's integration branch (None: no board yet)
    remote: dict[str, str]  # the remote's branches as just fetched: refs/heads/... -> oid
    state_tracking: str  # refs/remotes/<ns>/liza/state: its <ns> is the remote's namespace

    @property
    def namespace_prefix(self) -> str:
        return self.state_tracking[: -len("liza/state")]  # refs/remotes/<ns>/


def pull_branches(store: Store, remote: str | None = None, *,
                  timeout: float = transport.DEFAULT_TIMEOUT) -> SyncReport:
    """Fetch (board tracking ref and branches) and bring the local integration branch up to the
    remote's, without touching the local board: what a claim needs (it branches from the
    integration tip; its own op is reconciled by the auto-sync after it is committed)."""
    repo = store.repo
    path = repo_path(repo)
    remote = remote or configured_remote(repo)
    rep = SyncReport(mode="pull", remote=remotes.resolve_remote(path, remote), rounds=1)
    integ = _integration(store, store.tip())
    fetched = _fetch(path, remote, integ, timeout, None)
    before = fetched.old_oid
    r = pygit2.Oid(hex=fetched.new_oid) if fetched.new_oid else None
    if r is not None:  # the remote's board judges its integration branch: it must verify first
        _adoptable(store, path, rep, r, None, fetched.tracking_ref, before)
    if integ is None:  # no local board yet: the remote's board names the branch
        integ = _integration(store, r)
        if integ is not None:
            fetched = _fetch(path, remote, integ, timeout, None)
            if fetched.new_oid and fetched.new_oid != str(r):
                r = pygit2.Oid(hex=fetched.new_oid)
                _adoptable(store, path, rep, r, None, fetched.tracking_ref, before)
    follow_integration(store, integ, fetched.branches.get(_heads(integ)), rep, lambda _l: None,
                       r if r is not None else store.tip())
    return rep


def _integration(store: Store, tip: pygit2.Oid | None) -> str | None:
    """The integration branch the board at `tip` names (None: no board)."""
    if tip is None:
        return None
    board = store.board_at(_commit(store.repo, tip))
    return board.config.integration_branch if board.initialized else None


def _fetch(path: Path, remote: str | None, integ: str | None, timeout: float,
           progress: Progress | None, tasks: bool = True) -> transport.FetchResult:
    return transport.fetch_board(path, remote, integration=integ, task_branches=tasks,
                                 timeout=timeout, progress=progress)


def _task_leases(store: Store, prefix: str) -> tuple[bool, dict[str, str]]:
    """The local task branches sync may push (a submitted task whose branch tip is its review
    commit), with what this clone knows of the remote's (its tracking ref, `prefix`liza-tasks/):
    (whether any may still need pushing, so the remote's must be fetched; ref -> known oid)."""
    repo = store.repo
    tip = store.tip()
    branches = list_task_branches(repo)
    if tip is None or not branches:
        return False, {}
    try:
        board = store.board_at(_commit(repo, tip))
        tasks = {task_id: board.task(task_id) for task_id in branches}
    except LizaError:  # a local board poisoned before sync checked (repair's case): fetch all
        return True, {}
    known: dict[str, str] = {}
    unsure = False
    for task_id, head in branches.items():
        t = tasks[task_id]
        if t is None or t.status not in SUBMITTED or t.review_commit != str(head):
            continue
        tracked = repo.references.get(f"{prefix}{remotes.TASKS_NAMESPACE}/{task_id}")
        if tracked is None or ref_oid(tracked) != head:
            unsure = True
        else:
            known[f"{remotes.TASK_BRANCHES}{task_id}"] = str(head)
    return unsure, known


def _finish(store: Store, path: Path, remote: str | None, tip: pygit2.Oid, r: pygit2.Oid | None,
            rep: SyncReport, say: Progress, timeout: float, br: _Branches) -> bool:
    """The board is reconciled (the local board is at `tip`, descending from the remote's `r`):
    bring the local integration branch up to the remote's, then (sync and push modes) push the
    state ref and the branches in one atomic push. False: a lease was lost, start over."""
    if rep.mode != "push":
        follow_integration(store, br.integration, br.remote.get(_heads(br.integration)), rep, say,
                           tip)
    if rep.mode == "pull":
        return True
    return _push(store, path, remote, tip, r, rep, say, timeout, br)


def _heads(branch: str | None) -> str:
    return f"refs/heads/{branch}" if branch else ""


def follow_integration(store: Store, branch: str | None, remote_tip: str | None, rep: SyncReport,
                       say: Progress, board_tip: pygit2.Oid | None = None) -> None:
    """Create the local integration branch at the remote's tip, or fast-forward it when it is
    strictly behind; a checkout of it follows if clean (merge.py's rule), a dirty one stops the
    fast-forward. Diverged or ahead: left alone (an ahead branch is pushed, if approved).
    A fast-forward must bring in approved work only, judged against the verified board at
    `board_tip` (IntegrationRefused, exit 4, otherwise: gitliza/services/adopt.py)."""
    from gitliza.git.merge import CheckoutDirty, CheckoutNotUpdated, merge_commit_into
    if branch is None or remote_tip is None:
        return
    repo = store.repo
    ref = _heads(branch)
    theirs = pygit2.Oid(hex=remote_tip)
    cur = repo.references.get(ref)
    if cur is None:
        try:
            repo.references.create(ref, theirs, force=False)
        except pygit2.AlreadyExistsError:
            return  # created concurrently; the next sync compares it
        rep.branches.append(f"{branch}: created at {remote_tip[:12]} from {rep.remote}")
        return
    mine = ref_oid(cur)
    if mine == theirs or repo.descendant_of(mine, theirs):
        return
    if not repo.descendant_of(theirs, mine):
        rep.notices.append(f"{branch} has diverged from {rep.remote}'s {branch} "
                           f"({str(mine)[:12]} vs {remote_tip[:12]}): not fast-forwarded")
        return
    if board_tip is not None:
        from gitliza.services.adopt import check_integration
        check_integration(repo, store.board_at(_commit(repo, board_tip)), rep.remote, branch,
                          mine, theirs)
    say(f"fast-forwarding {branch} to {remote_tip[:12]}")
    sig = pygit2.Signature("gitliza", "gitliza@liza.invalid")
    try:
        # A fast-forward (theirs descends from ours): merge_commit_into moves the ref by CAS and
        # makes a clean checkout of the branch follow; no integration test for a fast-forward
        # of work that was tested where it was merged.
        merge_commit_into(repo, branch, theirs, message="", signature=sig, expected_old=mine)
    except CheckoutDirty as e:
        rep.notices.append(f"{branch} not fast-forwarded to {rep.remote}'s: {e}")
        return
    except CheckoutNotUpdated as e:
        rep.notices.append(str(e))
    except ConcurrencyConflict as e:  # a local merge moved it meanwhile: compared next sync
        rep.notices.append(f"{branch} not fast-forwarded: {e}")
        return
    rep.branches.append(f"{branch}: fast-forwarded {str(mine)[:12]}..{remote_tip[:12]}")


def branch_updates(store: Store, tip: pygit2.Oid, r: pygit2.Oid | None, rep: SyncReport,
                   br: _Branches) -> list[transport.RefUpdate]:
    """The branch updates to push with the board at `tip`:
    - the integration branch, when it is ahead of the remote's and brings in approved work only
      (what the server hook would accept; anything else is flagged and kept local);
    - each task branch liza/<task> whose tip is the review_commit of a submitted task
      (READY_FOR_REVIEW or APPROVED) and which the remote does not have there yet.
    Raises IntegrationDiverged when a merge recorded by a local-only op would reach the remote's
    board without its merge commit."""
    from gitliza.services.verify import Approvals, describe, unapproved
    repo = store.repo
    board = store.board_at(_commit(repo, tip))
    out: list[transport.RefUpdate] = []
    integ = br.integration
    will_have: pygit2.Oid | None = None  # the remote's integration tip after this push
    if integ is not None:
        ref = _heads(integ)
        remote_hex = br.remote.get(ref)
        theirs = pygit2.Oid(hex=remote_hex) if remote_hex else None
        will_have = theirs
        cur = repo.references.get(ref)
        mine = ref_oid(cur) if cur is not None else None
        if mine is not None and mine != theirs:
            hide: list[pygit2.Oid] | None = None
            if theirs is None:  # creation: anything the remote already has is not brought in
                hide = [ref_oid(x) for name in repo.references
                        if name.startswith(br.namespace_prefix)
                        and (x := repo.references.get(name)) is not None]
            elif theirs in repo and repo.descendant_of(mine, theirs):
                hide = [theirs]
            if hide is not None:
                bad = unapproved(repo, Approvals.of(board), mine, hide)
                if bad:
                    rep.notices.append(f"{integ} not pushed: it has {describe(bad)}; only "
                                       "approved work merged by `git liza merge` is shared")
                else:
                    out.append(transport.RefUpdate(ref, str(mine), remote_hex))
                    will_have = mine
    _check_merges_reach(store, tip, r, will_have, integ, rep)
    branches = list_task_branches(repo)
    for task_id, head in sorted(branches.items()):
        t = board.task(task_id)
        if t is None or t.status not in SUBMITTED or t.review_commit != str(head):
            continue
        ref = f"{remotes.TASK_BRANCHES}{task_id}"
        theirs_t = br.remote.get(ref)
        if theirs_t != str(head):
            out.append(transport.RefUpdate(ref, str(head), theirs_t, fast_forward=False))
    return out


def _check_merges_reach(store: Store, tip: pygit2.Oid, r: pygit2.Oid | None,
                        integ_after: pygit2.Oid | None, integ: str | None, rep: SyncReport) -> None:
    """Every merge recorded by an op the remote does not have yet must be on the integration branch
    the remote will have after the push; else pushing the board would make it lie."""
    if integ is None or tip == r:
        return
    repo = store.repo
    missing: list[tuple[str, str]] = []
    for c in local_only(store, tip, r):
        try:
            rec = record.parse(c.message)
        except ValidationError:
            continue
        merged = getattr(rec.op, "merge_commit", None)
        if rec.op.NAME != "merge" or not merged:
            continue
        m = pygit2.Oid(hex=merged)
        if integ_after is None or not (m == integ_after or (
                m in repo and integ_after in repo and repo.descendant_of(integ_after, m))):
            missing.append((str(rec.task), merged))
    if missing:
        tasks = tuple(t for t, _m in missing)
        raise IntegrationDiverged(
            f"{integ} on {rep.remote} moved on while this clone merged {', '.join(tasks)} "
            f"(merge commit {missing[0][1][:12]} is not on {rep.remote}'s {integ}); nothing "
            "was pushed", tasks,
            hint="`git liza merge` merges again on the new tip by itself; see "
                 "docs/multi-machine.md (a merge that lost the race)")


def _push(store: Store, path: Path, remote: str | None, local: pygit2.Oid, r: pygit2.Oid | None,
          rep: SyncReport, say: Progress, timeout: float, br: _Branches | None = None) -> bool:
    """Push `local` with the lease `r`, plus the branch updates, atomically; True when the remote
    now has them all (or there was nothing to push), False to start over."""
    updates: list[transport.RefUpdate] = []
    if local != r:
        updates.append(transport.RefUpdate(remotes.STATE_REF, str(local),
                                           None if r is None else str(r)))
    if br is not None:
        updates += branch_updates(store, local, r, rep, br)
    if not updates:
        return True
    say(f"pushing {', '.join(u.ref for u in updates)} to {rep.remote}")
    if len(updates) == 1 and updates[0].ref == remotes.STATE_REF:
        # The board alone: the single-ref push (same lease, same fast-forward rule).
        one_ = transport.push_board(path, remote, str(local), updates[0].expected_oid,
                                    timeout=timeout, progress=None)
        res = pushresults.MultiPushResult(one_.status, one_.remote, (one_,))
    else:
        res = transport.push_refs(path, remote, updates, timeout=timeout, progress=None)
    if res.ok:
        for u, one in zip(updates, res.results):
            if u.ref == remotes.STATE_REF:
                rep.pushed = one.status == pushresults.PushStatus.OK
                rep.remote_after = str(local)
            elif one.status == pushresults.PushStatus.OK:
                # (push_refs moved its tracking ref: the next sync knows it need not fetch)
                rep.branches.append(f"pushed {u.ref[len('refs/heads/'):]} {u.local_oid[:12]}")
        return True
    return False  # STALE / NON_FAST_FORWARD: the remote moved on; fetch and replay again


def pull(store: Store, remote: str | None = None, **kw: Any) -> SyncReport:
    return sync(store, remote, mode="pull", **kw)


def push(store: Store, remote: str | None = None, **kw: Any) -> SyncReport:
    return sync(store, remote, mode="push", **kw)


# --------------------------------------------------------------------------------------------------
# Auto-sync support: what happened to one op


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
