"""The rounds of a sync (the package docstring tells the whole story): fetch the remote's board,
check it before adopting anything (gitliza/services/adopt.py), then push, fast-forward, or replay
the local-only ops on it and push; a lost race starts a new round. `pull_branches` is the
branch-only pull a claim needs."""
from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any, Callable

import pygit2

from gitliza.errors import ConcurrencyConflict, LizaError, ValidationError
from gitliza.git import liveref
from gitliza.git.remotes import remote as remotes
from gitliza.git.remotes import pushresults
from gitliza.git.remotes.pushresults import PushRejected
from gitliza.git.remotes import transport
from gitliza.git.remotes.remote import Remote
from gitliza.git.repository import repo_path
from gitliza.git.store import Store
from gitliza.services.adopt import RemoteRefused, check_board, put_back, trusted_base
from gitliza.services.sync import doomed, droplog, join, skew
from gitliza.services.sync.boardref import move_board
from gitliza.services.sync.branches import (Branches, branch_updates, follow_integration, heads,
                                            integration_branch, task_leases)
from gitliza.services.sync.replay import commit_at, local_only, replay
from gitliza.services.sync.liverefs import live_updates
from gitliza.services.sync.wiprefs import drop_stale, wip_updates
from gitliza.services.sync.rescue import merges_kept, rescue
from gitliza.services.sync.report import (AHEAD, BEHIND, FAST_FORWARD, NO_BOARD, PUSHED, REPLAYED,
                                          UP_TO_DATE, Progress, SyncGaveUp, SyncReport)
from gitliza.services.sync.standdown import with_stand_down

MAX_ROUNDS = 6
ROUND_DELAYS = (0.0, 0.1, 0.25, 0.5, 1.0)  # before rounds 2..6, plus jitter
JITTER = 0.1


def _adoptable(store: Store, path: Path, rem: Remote, rep: SyncReport, r: pygit2.Oid,
               verified: pygit2.Oid | None, tracking: str, before: str | None, *,
               bar: bool = False, timeout: float = transport.DEFAULT_TIMEOUT) -> pygit2.Oid:
    """Check the fetched board tip `r` before anything moves to it (gitliza/services/adopt.py): from the
    newest commit this clone already trusts (its board's merge base with `r`, or the tip an
    earlier round of this sync checked; with neither, `r`'s newest seal: join.py). Returns `r`;
    raises RemoteRefused, with the tracking ref put back, when it does not verify."""
    repo = store.repo
    base = trusted_base(repo, store.tip(), r)
    if verified is not None and (verified == r or repo.descendant_of(r, verified)) and (
            base is None or verified == base or repo.descendant_of(verified, base)):
        base = verified
    if base is None:
        try:  # nothing of it trusted yet: from its newest seal (join.py)
            base = join.base(store, path, rem, r, timeout)
        except RemoteRefused:
            put_back(path, tracking, str(r), before)
            raise
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


def sync(store: Store, remote: Remote, *, mode: str = "sync",
         rounds: int = MAX_ROUNDS, progress: Progress | None = None, cleanup: bool = True,
         timeout: float = transport.DEFAULT_TIMEOUT,
         sleep: Callable[[float], None] = time.sleep, attic: bool = False,
         own: str | None = None) -> SyncReport:
    """Reconcile the local board with `remote`, resolved by the caller where the name entered
    (git/remotes `resolve`, once: the command line, `Liza.sync_target`); it travels down to the
    attic's exchange and the transport as it is.

    mode "sync": both ways; "pull": fetch and bring the local board up to date (replaying local
    ops if needed), never push; "push": push only if the remote is an ancestor of the local board.
    The integration branch and the task branches travel along (the package docstring).
    Afterwards this clone's lease sightings are refreshed from the board (skew.py): a renewal
    made elsewhere is seen, on this clone's clock, at the sync that brought it. A two-way sync
    then exchanges the attic (atticshare.py) when it is due, or always with `attic`.

    Local ops the remote will never take (doomed.py) are dropped like ops that no longer apply,
    except in "push" mode; `own`: the commit of the op the calling command is sharing, whose lost
    merge race that command handles itself (IntegrationDiverged, as before).
    """
    rep = _sync(store, remote, mode=mode, rounds=rounds, progress=progress, cleanup=cleanup,
                timeout=timeout, sleep=sleep, own=own)
    skew.after_sync(store)
    if mode == "sync" and rep.action != NO_BOARD:
        from gitliza.services.sync import atticshare
        path, now = repo_path(store.repo), time.time()
        rem = remote
        if attic or atticshare.due(store, path, rem, now):
            atticshare.share(store, path, rem, store.board()[0].config.attic_keep, rep, now,
                             timeout)
    return rep


def _sync(store: Store, remote: Remote, *, mode: str, rounds: int,
          progress: Progress | None, cleanup: bool, timeout: float,
          sleep: Callable[[float], None], own: str | None) -> SyncReport:
    if mode not in ("sync", "pull", "push"):
        raise ValueError(mode)
    repo = store.repo
    path = repo_path(repo)
    rem = remote
    rep = SyncReport(mode=mode)
    rep.remote = rem.arg
    say = progress or (lambda _line: None)
    origin: dict[str, str] = {}  # rebuilt commit -> the local commit its op came from
    verified: pygit2.Oid | None = None  # the newest remote tip this sync has checked
    integ = integration_branch(store, store.tip())
    prefix = remotes.tracking_of(rem, remotes.STATE_REF)[: -len("liza/state")]  # refs/remotes/<ns>/
    refused: PushRejected | None = None  # the hook's refusal this sync met once already
    for rnd in range(1, rounds + 1):
        rep.rounds = rnd
        if rnd > 1:
            sleep(ROUND_DELAYS[min(rnd - 2, len(ROUND_DELAYS) - 1)] + random.uniform(0, JITTER))
        say(f"fetching the board from {rep.remote}" + (f" (round {rnd})" if rnd > 1 else ""))
        # The remote's task branches only matter for pushing ours; fetching them all would make
        # every sync cost as much as there are open tasks. A later round fetches them all.
        tasks, known = task_leases(store, prefix) if rnd == 1 else (True, {})
        # A clone without a board fetches it shallow first (join.py); the tracking ref it wrote
        # did not exist before, which is what a refusal puts back.
        joined = rnd == 1 and join.fetch(store, path, rem, timeout)
        repo = store.repo  # (a shallow fetch reopens the handle)
        try:
            fetched = _fetch(path, rem, integ, timeout, progress, tasks)
        except ConcurrencyConflict:
            # Another sync in this clone (a second supervisor, the heartbeat thread) updated the
            # tracking ref under this fetch: a lost race like a refused push, so another round.
            continue
        r_hex = fetched.new_oid
        r = pygit2.Oid(hex=r_hex) if r_hex else None
        tracking_before = None if joined else fetched.old_oid
        if r is not None and r != verified:
            # Nothing is read from the fetched board (not even its integration branch's name)
            # before it verifies.
            verified = _adoptable(store, path, rem, rep, r, verified, fetched.tracking_ref,
                                  tracking_before, bar=progress is not None, timeout=timeout)
        want = integration_branch(store, r)
        if want is not None and want != integ:
            # The remote's board names an integration branch we did not fetch (a first pull, or
            # a changed config): fetch again with it, before judging anything.
            integ = want
            fetched = _fetch(path, rem, integ, timeout, progress, tasks)
            r_hex = fetched.new_oid
            r = pygit2.Oid(hex=r_hex) if r_hex else None
            if r is not None and r != verified:
                verified = _adoptable(store, path, rem, rep, r, verified, fetched.tracking_ref,
                                      tracking_before, bar=progress is not None, timeout=timeout)
        br = Branches(integ, dict(fetched.branches) if tasks else {**known, **fetched.branches},
                       fetched.tracking_ref)
        local = store.tip()
        if rnd == 1:
            rep.local_before = None if local is None else str(local)
            rep.remote_before = r_hex
            if r is not None:
                base = repo.merge_base(local, r) if local is not None else None
                rep.fetched = _count(store, r, base)
                if rep.fetched:
                    skew.behind_origin(store, r, rep)
        rep.local_after, rep.remote_after = (None if local is None else str(local)), r_hex

        if r is None and local is None:
            rep.action = NO_BOARD
            return rep
        judge = doomed.veto(store, br, own) if mode != "push" else None
        # A board only ahead of the remote's is rebuilt without its doomed ops by a two-way sync
        # alone: a pull pushes nothing (the ops do no harm until a push), and a command's pull
        # before it checks its input must not move the board when the command is refused.
        if local is not None and (r is None or (local != r and repo.descendant_of(local, r))) \
                and not (r is not None and judge is not None and mode == "sync"
                         and doomed.any_doomed(store, local_only(store, local, r), judge)):
            # The remote is behind (or has no board): a plain fast-forward push.
            if mode == "pull":
                rep.action = AHEAD if r is None or local != r else UP_TO_DATE
                _finish(store, path, rem, local, r, rep, say, timeout, br)
                return rep
            try:
                if _finish(store, path, rem, local, r, rep, say, timeout, br):
                    rep.action = rep.action or PUSHED
                    return rep
            except PushRejected as e:
                refused = _refused_once(e, refused, rnd == rounds)
            continue
        assert r is not None
        if local == r:
            if _finish(store, path, rem, local, r, rep, say, timeout, br):
                rep.action = rep.action or UP_TO_DATE
                return rep
            continue  # a branch lease was lost: fetch again
        if local is None or repo.descendant_of(r, local):
            # We are behind: take the remote's ops as they are.
            if mode == "push":
                rep.action = BEHIND
                return rep
            say(f"fast-forwarding the local board to {r_hex[:12] if r_hex else ''}")
            if move_board(store, local, r, f"liza sync: fast-forward to {rep.remote}"):
                rep.local_after = r_hex
                rep.action = rep.action or FAST_FORWARD
                if _finish(store, path, rem, r, r, rep, say, timeout, br):
                    return rep
            continue  # a local writer committed meanwhile (or a branch lease was lost): again
        # Diverged, or ahead with ops the remote will never take (then replayed on its own tip).
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
        rebuilt = replay(store, commit_at(repo, r), mine, origin,
                         already=local_only(store, r, base), veto=judge)
        new_tip = rebuilt.tip
        assert new_tip is not None
        if not move_board(store, local, new_tip, f"liza sync: replay on {rep.remote}"):
            continue  # a local writer moved the ref: replay again from the fresh tip
        # From here on the drops are final: the local board no longer has them.
        for r_ in rebuilt.replayed:
            origin[r_.commit] = r_.original
        rep.replayed = rebuilt.replayed
        rep.local_after = str(new_tip)
        rep.action = REPLAYED
        # Never silently: recorded for the team's output and the DROPPED_OPS alarm at once,
        # before the stand-downs (which remove worktrees) and the rescue (which writes refs): a
        # process killed or failing from here on has still said what left the board.
        said = droplog.record(repo, rep.remote, [d for d, _op in rebuilt.dropped], None,
                              time.time())
        for d, op in rebuilt.dropped:
            d = with_stand_down(store, d, op, rebuilt, cleanup)
            rep.dropped.append(d)
            say(d.describe())
        if rebuilt.dropped:
            _rescue(store, integ, prefix, rebuilt, local, rep, said)
        for r_ in rebuilt.replayed:
            rep.notices.extend(r_.notices)
        try:
            if _finish(store, path, rem, new_tip, r, rep, say, timeout, br):
                return rep
        except PushRejected as e:
            refused = _refused_once(e, refused, rnd == rounds)
    raise SyncGaveUp(f"sync with {rep.remote} lost the race {rounds} times (the boards kept "
                     "moving); the local board keeps every local op that was not dropped",
                     rep, hint="retry with backoff: `git liza sync`")


def _refused_once(e: PushRejected, before: PushRejected | None, last: bool) -> PushRejected:
    """The hook's refusal of a takeover a renewal outran starts one more round, once per sync:
    the renewal reached the remote between this sync's fetch and its push, the next fetch brings
    it, and the replay drops the takeover (doomed.py). Any other refusal, or a second one, is
    raised at once: a fetch does not change it."""
    from gitliza.core.presence.takeovers import OUTRUN_REFUSAL
    curable = any(OUTRUN_REFUSAL in ln for ln in (*e.remote_lines, e.reason, e.message))
    if before is not None or last or not curable:
        raise e
    return e


def _rescue(store: Store, integ: str | None, prefix: str, rebuilt: Any, old_board: pygit2.Oid,
            rep: SyncReport, said: str | None) -> None:
    """The branches the dropped ops moved go back to the remote's, their work kept on one rescue
    ref (rescue.py): nothing dropped stays where the team builds. The drop record then names the
    ref (a record that supersedes the one `said` wrote). A rescue that fails (a ref that cannot
    be written) is a notice: the ops are recorded already, with their original commits."""
    try:
        made = rescue(store, integ, prefix, rebuilt.dropped, rebuilt.board, old_board, rep,
                      merges_kept(store.repo, rebuilt.replayed))
    except (pygit2.GitError, LizaError, OSError) as e:
        rep.notices.append(f"the dropped ops' branch work could not be kept on a rescue ref: {e};"
                           " their records stay in the reflog of the local board")
        return
    rep.rescued = made or rep.rescued
    if made:
        droplog.record(store.repo, rep.remote, rep.dropped[-len(rebuilt.dropped):], made,
                       time.time(), supersedes=said)


def pull_branches(store: Store, remote: Remote, *,
                  timeout: float = transport.DEFAULT_TIMEOUT) -> SyncReport:
    """Fetch (board tracking ref and branches) and bring the local integration branch up to the
    remote's, without touching the local board: what a claim needs (it branches from the
    integration tip; its own op is reconciled by the auto-sync after it is committed)."""
    repo = store.repo
    path = repo_path(repo)
    rem = remote
    rep = SyncReport(mode="pull", remote=rem.arg, rounds=1)
    integ = integration_branch(store, store.tip())
    fetched = _fetch(path, rem, integ, timeout, None)
    before = fetched.old_oid
    r = pygit2.Oid(hex=fetched.new_oid) if fetched.new_oid else None
    if r is not None:  # the remote's board judges its integration branch: it must verify first
        _adoptable(store, path, rem, rep, r, None, fetched.tracking_ref, before, timeout=timeout)
    if integ is None:  # no local board yet: the remote's board names the branch
        integ = integration_branch(store, r)
        if integ is not None:
            fetched = _fetch(path, rem, integ, timeout, None)
            if fetched.new_oid and fetched.new_oid != str(r):
                r = pygit2.Oid(hex=fetched.new_oid)
                _adoptable(store, path, rem, rep, r, None, fetched.tracking_ref, before,
                           timeout=timeout)
    follow_integration(store, integ, fetched.branches.get(heads(integ)), rep, lambda _l: None,
                       r if r is not None else store.tip())
    return rep


def _fetch(path: Path, remote: Remote, integ: str | None, timeout: float,
           progress: Progress | None, tasks: bool = True) -> transport.FetchResult:
    return transport.fetch_board(path, remote, integration=integ, task_branches=tasks,
                                 timeout=timeout, progress=progress)


def _finish(store: Store, path: Path, remote: Remote, tip: pygit2.Oid, r: pygit2.Oid | None,
            rep: SyncReport, say: Progress, timeout: float, br: Branches) -> bool:
    """The board is reconciled (the local board is at `tip`, descending from the remote's `r`):
    bring the local integration branch up to the remote's, then (sync and push modes) push the
    state ref and the branches in one atomic push. False: a lease was lost, start over."""
    if rep.mode != "push":
        follow_integration(store, br.integration, br.remote.get(heads(br.integration)), rep, say,
                           tip)
    if rep.mode == "pull":
        return True
    return _push(store, path, remote, tip, r, rep, say, timeout, br)


def _push(store: Store, path: Path, remote: Remote, local: pygit2.Oid, r: pygit2.Oid | None,
          rep: SyncReport, say: Progress, timeout: float, br: Branches | None = None) -> bool:
    """Push `local` with the lease `r`, plus the branch updates, atomically; True when the remote
    now has them all (or there was nothing to push), False to start over."""
    updates: list[transport.RefUpdate] = []
    if local != r:
        updates.append(transport.RefUpdate(remotes.STATE_REF, str(local),
                                           None if r is None else str(r)))
    if br is not None:
        updates += branch_updates(store, local, r, rep, br)
    prefix = remotes.tracking_of(remote, remotes.STATE_REF)[: -len("liza/state")]
    drop_stale(store, str(path), remote.arg, prefix, local, timeout)
    updates += live_updates(store, prefix, local) + wip_updates(store, prefix, local)
    if not updates:
        return True
    say(f"pushing {', '.join(u.ref for u in updates)} to {rep.remote}")
    if len(updates) == 1 and updates[0].ref == remotes.STATE_REF:
        # The board alone: the single-ref push (same lease, same fast-forward rule).
        one_ = transport.push_board(path, remote, str(local), updates[0].expected_oid,
                                    timeout=timeout, progress=None)
        res = pushresults.MultiPushResult(one_.status, one_.remote, (one_,), one_.notes)
    else:
        res = transport.push_refs(path, remote, updates, timeout=timeout, progress=None)
    rep.notices.extend(n for n in res.notes if n not in rep.notices)  # the server's (skew)
    if res.ok:
        for u, one in zip(updates, res.results):
            if u.ref == remotes.STATE_REF:
                rep.pushed = one.status == pushresults.PushStatus.OK
                rep.remote_after = str(local)
            elif u.ref.startswith(liveref.LIVE_PREFIX):
                rep.live_pushed += one.status == pushresults.PushStatus.OK
            elif u.ref.startswith("refs/liza/wip/"):
                pass  # a snapshot (wiprefs.py): push_refs moved its tracking ref
            elif one.status == pushresults.PushStatus.OK:
                # (push_refs moved its tracking ref: the next sync knows it need not fetch)
                rep.branches.append(f"pushed {u.ref[len('refs/heads/'):]} {u.local_oid[:12]}")
        return True
    return False  # STALE / NON_FAST_FORWARD: the remote moved on; fetch and replay again


def pull(store: Store, remote: Remote, **kw: Any) -> SyncReport:
    return sync(store, remote, mode="pull", **kw)


def push(store: Store, remote: Remote, **kw: Any) -> SyncReport:
    return sync(store, remote, mode="push", **kw)
