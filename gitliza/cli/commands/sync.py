"""`git liza sync|pull|push [REMOTE]` and `git liza repair`.

Exit codes: 0 when the sync completed (ops that no longer applied are dropped and reported, with
`stand_down` set for lost claims; that is a result, not a failure); 2 when every round lost a race
(ConcurrencyConflict: retry); 3 when git or the remote failed (unreachable, a hook refused).

Auto-sync after every mutating command is gitliza/services/autosync.py.
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from gitliza.cli.commands import Env
from gitliza.core.terminal import safe
from gitliza.errors import EXIT_INCONSISTENT
from gitliza.services.sync import engine
from gitliza.services.sync.report import (AHEAD, BEHIND, FAST_FORWARD, NO_BOARD, PUSHED, REPLAYED,
                                          UP_TO_DATE, Progress, SyncGaveUp, SyncReport)

if TYPE_CHECKING:
    from gitliza.git.remotes.remote import Remote
    from gitliza.git.store import Store
    from gitliza.services.integrity import Restored


def _progress(env: Env) -> Progress | None:
    # Progress only for a person watching: never with --json, never into a pipe or a log.
    if env.json or not sys.stderr.isatty():
        return None

    def show(line: str) -> None:
        sys.stderr.write(f"gitliza: {safe(line)}\n")
        sys.stderr.flush()
    return show


def _resolved(store: Store, remote: str | None) -> Remote:
    """The command line's REMOTE (None: the configured one, else origin), resolved here, once:
    the services below are handed the `Remote`."""
    from gitliza.git.remotes.remote import resolve
    from gitliza.git.repository import repo_path
    return resolve(repo_path(store.repo), remote)


def _run(env: Env, remote: str | None, mode: str) -> int:
    store = env.liza().store
    try:
        rep = engine.sync(store, _resolved(store, remote), mode=mode, progress=_progress(env), attic=True)
    except SyncGaveUp as e:
        _print(env, e.report, error=str(e))
        raise
    _print(env, rep)
    return 0


def _print(env: Env, rep: SyncReport, error: str | None = None) -> None:
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


def _summary(rep: SyncReport) -> str:
    short = (rep.local_after or "")[:12]
    parts = {
        UP_TO_DATE: f"{rep.remote}: up to date [{short}]",
        NO_BOARD: f"{rep.remote}: no board here or there; nothing to do",
        PUSHED: f"{rep.remote}: pushed [{short}]",
        FAST_FORWARD: f"{rep.remote}: fetched {rep.fetched} op(s), fast-forwarded [{short}]",
        AHEAD: f"{rep.remote}: the local board is ahead; `git liza push` shares it",
        BEHIND: f"{rep.remote}: the remote is ahead; nothing to push (`git liza pull`)",
        REPLAYED: (f"{rep.remote}: fetched {rep.fetched} op(s), replayed "
                          f"{len(rep.replayed)} local op(s), dropped {len(rep.dropped)}"
                          + (f" (their work kept on {rep.rescued})" if rep.rescued else "")
                          + (", pushed" if rep.pushed else "") + f" [{short}]"),
    }
    return parts.get(rep.action, f"{rep.remote}: {rep.action}")


def sync(env: Env, remote: str | None = None) -> int:
    return _run(env, remote, "sync")


def pull(env: Env, remote: str | None = None) -> int:
    return _run(env, remote, "pull")


def push(env: Env, remote: str | None = None) -> int:
    return _run(env, remote, "push")


def repair(env: Env, remote: str | None = None, here: bool = False) -> int:
    """`git liza repair [REMOTE] [--here]` (gitliza/services/repair.py). For a remote, this clone then
    syncs like any other, so it converges at once."""
    from gitliza.services.repair import repair as run
    from gitliza.git.store import Store
    from gitliza.errors import ValidationError
    store = Store.discover(env.path)
    restored = None
    rem = None if here else _resolved(store, remote)
    if rem is not None:  # objects first: nothing else can be judged on a board that cannot be read
        from gitliza.services.integrity import restore
        restored = restore(store, rem)
        if not env.json:
            _print_restored(env, restored)
    try:
        rep = run(store, rem)
    except ValidationError as e:
        if restored is None or not restored.refetched or "nothing to repair" not in e.message:
            raise
        if env.json:
            env.out.json({"restored": restored.to_json(), "sync": None})
        return EXIT_INCONSISTENT if restored.still else 0
    synced: SyncReport | None = None
    if rem is not None:
        synced = engine.sync(store, rem)
    if env.json:
        data = rep.to_json()
        data["sync"] = None if synced is None else synced.to_json()
        data["restored"] = None if restored is None else restored.to_json()
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


def _print_restored(env: Env, r: Restored) -> None:
    for ref in r.restored:
        env.out.line(f"{r.remote}: {ref}: missing objects restored")
    for line in r.moved:
        env.out.line(f"{r.remote}: {line}")
    for p in r.still:
        env.out.line(f"{r.remote}: {p.subject}: {p.detail.split('; ')[0]}; {r.remote} lacks it "
                     "too: NOT restored")
