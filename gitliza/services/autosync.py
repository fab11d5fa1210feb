"""Auto-sync: `after_commit` shares every op a command commits. `gitliza.services.session.open_liza`
installs it only when `git config liza.remote` (or its alias `sync.remote`) is set and the command did not get `--no-sync`. The op is committed
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
from typing import TYPE_CHECKING

from gitliza.errors import ConcurrencyConflict, GitFailure, IllegalTransition, InconsistentState
from gitliza.git.store import Committed
from gitliza.git.remotes.pushresults import PushRejected
from gitliza.services.sync import engine
from gitliza.services.sync.branches import IntegrationDiverged
from gitliza.services.sync.replay import fate_of
from gitliza.services.sync.report import Dropped, SyncGaveUp, SyncReport

if TYPE_CHECKING:
    from gitliza.services.api import Liza


class OpDropped(IllegalTransition):
    """The op was committed locally, then dropped by the sync: it no longer applies remotely.

    An IllegalTransition (exit 1), not a ConcurrencyConflict (exit 2): the board was re-read and
    the op is not legal on it, so the same op retried fails the same way; callers that skip a task
    that "moved on" (lifecycle's claim of the best candidate) skip this one too.
    """

    code = "OP_DROPPED"

    def __init__(self, message: str, dropped: Dropped, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.dropped = dropped


def after_commit(liza: Liza, committed: Committed) -> Committed | None:
    """Auto-sync: share the op just committed; fail the command if the sync dropped it."""
    store = liza.store
    remote = liza.sync_target()
    if remote is None:
        return None
    report: SyncReport | None
    try:
        report = engine.sync(store, remote, own=committed.commit)
    except InconsistentState as e:
        # The remote's board (or integration branch) does not verify: nothing of it was adopted,
        # and this op stays on the local board, shared once the remote is repaired.
        raise InconsistentState(f"{committed.op.NAME} committed locally, not shared: {e.message}",
                                hint=e.hint) from e
    except (PushRejected, IntegrationDiverged):
        # The remote's hook said no, or pushing would make the board lie about a merge: every
        # later sync would say the same, so the command must not pass for shared.
        raise
    except SyncGaveUp as e:
        report = e.report
        liza.notice(f"committed locally but not shared yet: {e}")
    except (ConcurrencyConflict, GitFailure) as e:
        report = None
        liza.notice(f"committed locally but not shared with {remote.arg}: {e} "
                   "(`git liza sync` shares it later)")
    mine = fate_of(store, committed.commit, committed.op, report)
    if report is not None:
        for d in report.dropped:
            if mine is None or d.original != mine.original:
                liza.notice(d.describe())
        for n in report.notices:
            liza.notice(n)
        if report.rescued:
            liza.notice(f"dropped {len(report.dropped)} local op(s); their work is kept on "
                        f"{report.rescued}")
    if mine is not None:
        extra = f"; {mine.actor} must stand down" if mine.stand_down else ""
        # "kept: ... holds the lock" is this very command, which undoes its own worktree.
        where = f"; worktree {mine.worktree}" if mine.worktree and "lock" not in mine.worktree \
            else ""
        raise OpDropped(
            f"{mine.op}{' ' + mine.task if mine.task else ''} was committed locally, then "
            f"dropped when syncing with {remote.arg}: {mine.reason}{extra}{where}", mine,
            hint="another machine changed the board first; re-read it (`git liza status`)")
    moved = [r for r in (report.replayed if report is not None else [])
             if r.original == committed.commit]
    if moved:  # the op now lives in a replayed commit: report that one
        return dataclasses.replace(committed, commit=moved[0].commit)
    return None
