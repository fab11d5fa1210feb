"""`git liza sync|pull|push [REMOTE]` and auto-sync after every mutating command.

Exit codes: 0 when the sync completed (ops that no longer applied are dropped and reported, with
`stand_down` set for lost claims; that is a result, not a failure); 2 when every round lost a race
(ConcurrencyConflict: retry); 3 when git or the remote failed (unreachable, a hook refused).

Auto-sync (`after_commit`): installed by `gitliza.cli.commands.Env` only when `git config liza.remote`
(or its alias `sync.remote`) is set and the command did not get `--no-sync`. The op is committed
locally first, then synced:
- the sync dropped THIS op (another machine got there first): `OpDropped`, exit 1 -- the command
  did not take effect, exactly as if it had been refused on the remote's board (an
  IllegalTransition: retrying the same op will not help, re-read the board and decide again;
  `git liza claim` without a task id moves on to the next candidate by itself);
- the remote could not be reached, or every round lost a race: a warning on stderr, exit 0 -- the
  op stands on the local board and the next sync shares it (or reports it dropped then);
- the remote's hook refused the push: PushRejected, exit 3 -- retrying will not help;
- a merge recorded here is not on the remote's integration branch, which moved on (another
  machine merged first): IntegrationDiverged, exit 2, nothing pushed -- `git liza merge` catches
  it, takes its unshared merge back and merges again on the new tip.
"""
from __future__ import annotations

import dataclasses
import sys
from typing import Any

from gitliza.cli.commands import Env
from gitliza.errors import ConcurrencyConflict, GitFailure, IllegalTransition, InconsistentState
from gitliza.git.store import Committed
from gitliza.git.transport import PushRejected
from gitliza.cli.output import Out
from gitliza.services import sync as engine


class OpDropped(IllegalTransition):
    """The op was committed locally, then dropped by the sync: it no longer applies remotely.

    An IllegalTransition (exit 1), not a ConcurrencyConflict (exit 2): the board was re-read and
    the op is not legal on it, so the same op retried fails the same way; callers that skip a task
    that "moved on" (lifecycle's claim of the best candidate) skip this one too.
    """

    code = "OP_DROPPED"

    def __init__(self, message: str, dropped: engine.Dropped, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.dropped = dropped


def _progress(env: Env) -> engine.Progress | None:
    # Progress only for a person watching: never with --json, never into a pipe or a log.
    if env.json or not sys.stderr.isatty():
        return None

    def show(line: str) -> None:
        sys.stderr.write(f"gitliza: {line}\n")
        sys.stderr.flush()
    return show


def _run(env: Env, remote: str | None, mode: str) -> int:
    store = env.liza().store
    try:
        rep = engine.sync(store, remote, mode=mode, progress=_progress(env))
    except engine.SyncGaveUp as e:
        _print(env, e.report, error=str(e))
        raise
    _print(env, rep)
    return 0


def _print(env: Env, rep: engine.SyncReport, error: str | None = None) -> None:
    out = env.out
    if env.json:
        data = rep.to_json()
        if error is not None:
            data["error"] = error
        out.json(data)
        return
    if error is None:
        out.line(_summary(rep))
        for b in rep.branches:
            out.line(f"{rep.remote}: {b}")
    for d in rep.dropped:
        out.notice(d.describe())
    for n in rep.notices:
        out.notice(n)


def _summary(rep: engine.SyncReport) -> str:
    short = (rep.local_after or "")[:12]
    parts = {
        engine.UP_TO_DATE: f"{rep.remote}: up to date [{short}]",
        engine.NO_BOARD: f"{rep.remote}: no board here or there; nothing to do",
        engine.PUSHED: f"{rep.remote}: pushed [{short}]",
        engine.FAST_FORWARD: f"{rep.remote}: fetched {rep.fetched} op(s), fast-forwarded [{short}]",
        engine.AHEAD: f"{rep.remote}: the local board is ahead; `git liza push` shares it",
        engine.BEHIND: f"{rep.remote}: the remote is ahead; nothing to push (`git liza pull`)",
        engine.REPLAYED: (f"{rep.remote}: fetched {rep.fetched} op(s), replayed "
                          f"{len(rep.replayed)} local op(s), dropped {len(rep.dropped)}"
                          + (", pushed" if rep.pushed else "") + f" [{short}]"),
    }
    return parts.get(rep.action, f"{rep.remote}: {rep.action}")


def sync(env: Env, remote: str | None = None) -> int:
    return _run(env, remote, "sync")


def pull(env: Env, remote: str | None = None) -> int:
    return _run(env, remote, "pull")


def push(env: Env, remote: str | None = None) -> int:
    return _run(env, remote, "push")


def after_commit(liza: Any, committed: Committed) -> Committed | None:
    """Auto-sync: share the op just committed; fail the command if the sync dropped it."""
    if not getattr(liza, "sync", True):
        return None
    store = liza.store
    remote = engine.configured_remote(store.repo)
    if remote is None:
        return None
    out = Out(False)
    report: engine.SyncReport | None
    try:
        report = engine.sync(store, remote)
    except InconsistentState as e:
        # The remote's board (or integration branch) does not verify: nothing of it was adopted,
        # and this op stays on the local board, shared once the remote is repaired.
        raise InconsistentState(f"{committed.op.NAME} committed locally, not shared: {e.message}",
                                hint=e.hint) from e
    except (PushRejected, engine.IntegrationDiverged):
        # The remote's hook said no, or pushing would make the board lie about a merge: every
        # later sync would say the same, so the command must not pass for shared.
        raise
    except engine.SyncGaveUp as e:
        report = e.report
        out.notice(f"committed locally but not shared yet: {e}")
    except (ConcurrencyConflict, GitFailure) as e:
        report = None
        out.notice(f"committed locally but not shared with {remote}: {e} "
                   "(`git liza sync` shares it later)")
    mine = engine.fate_of(store, committed.commit, committed.op, report)
    if report is not None:
        for d in report.dropped:
            if mine is None or d.original != mine.original:
                out.notice(d.describe())
        for n in report.notices:
            out.notice(n)
    if mine is not None:
        extra = f"; {mine.actor} must stand down" if mine.stand_down else ""
        # "kept: ... holds the lock" is this very command, which undoes its own worktree.
        where = f"; worktree {mine.worktree}" if mine.worktree and "lock" not in mine.worktree \
            else ""
        raise OpDropped(
            f"{mine.op}{' ' + mine.task if mine.task else ''} was committed locally, then "
            f"dropped when syncing with {remote}: {mine.reason}{extra}{where}", mine,
            hint="another machine changed the board first; re-read it (`git liza status`)")
    moved = [r for r in (report.replayed if report is not None else [])
             if r.original == committed.commit]
    if moved:  # the op now lives in a replayed commit: report that one
        return dataclasses.replace(committed, commit=moved[0].commit)
    return None


def repair(env: Env, remote: str | None = None, here: bool = False) -> int:
    """`git liza repair [REMOTE] [--here]` (gitliza/services/repair.py). For a remote, this clone then
    syncs like any other, so it converges at once."""
    from gitliza.services.repair import repair as run
    from gitliza.git.store import Store
    store = Store.discover(env.path)
    rep = run(store, remote, here=here)
    synced: engine.SyncReport | None = None
    if not here:
        synced = engine.sync(store, remote)
    if env.json:
        data = rep.to_json()
        data["sync"] = None if synced is None else synced.to_json()
        env.out.json(data)
        return 0
    out = env.out
    f = rep.failure
    out.line(f"{rep.where}: state commit {f.commit[:12]} ({f.op or 'unparsable op'}) does not "
             f"verify: {f.reason}")
    out.line(f"{rep.where}: rebuilt on {(rep.base or '')[:12]}, the last commit that verifies: "
             f"kept {len(rep.kept)} later op(s), dropped {len(rep.dropped)}")
    for d in rep.dropped:
        out.line(f"{rep.where}: {d.describe()}")
    out.line(f"{rep.where}: refs/liza/state moved {rep.before[:12]} -> {rep.after[:12]}")
    if synced is not None:
        out.line(_summary(synced))
        for d in synced.dropped:
            out.notice(d.describe())
    return 0
