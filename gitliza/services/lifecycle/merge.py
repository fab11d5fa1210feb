"""Merge: exactly the approved review_commit into the integration branch by CAS, then MERGED (a
crash in between is finished by `doctor --fix`); a conflict or a failing integration test records
INTEGRATION_FAILED. With a team remote, a merge another machine shared first is undone locally and
done again on the new tip.

The git merge machinery, drift, the test log and the sync engine are imported inside the functions
for start-up speed: the CLI's lifecycle commands import this module for every command (a claim
too), and only a merge needs them."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pygit2
from pygit2 import Oid, Repository

from gitliza.core import clock

from gitliza.core.encoding import record
from gitliza.core.model import Task
from gitliza.core.ops.review import Merge
from gitliza.errors import (ConcurrencyConflict, GitFailure, IllegalTransition, InconsistentState,
                            LizaError)
from gitliza.git.store import Committed
from gitliza.git.tasklocks import task_lock
from gitliza.git.treecheck import TreeRefused
from gitliza.git.repository import ref_oid
from gitliza.git.worktrees.listing import checkouts_of_branch
from gitliza.services.lifecycle.cleanup import drop_worktree
from gitliza.services.lifecycle.common import (NO_SHA, checkout_bounds, dry_run,
                                                record_refused_tree, require_task, warn)
from gitliza.services.lifecycle.integration import first_parent_introducing
from gitliza.services.lifecycle.remote import ensure_commit, pull_first

if TYPE_CHECKING:
    from gitliza.services.api import Liza
    from gitliza.git.merge import MergeOutcome, Runner

INTEGRATION_TEST = "scripts/integration-test.sh"
MERGE_ATTEMPTS = 3  # the integration branch moved under us (another merge): merge again
REASON_MAX = 1000


class MergeFailed(GitFailure):
    """Conflict or failing integration test: INTEGRATION_FAILED was recorded, branch untouched."""

    code = "INTEGRATION_FAILED"

    def __init__(self, message: str, committed: Committed, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.committed = committed


@dataclass(frozen=True)
class MergeResult:
    committed: Committed
    merge: MergeOutcome
    branch: str
    notices: tuple[str, ...] = ()


class _MergeLost(Exception):
    """Another machine merged into the integration branch first; our merge was undone locally."""


def merge(liza: Liza, task: str, *, integration_timeout: float | None = None,
          tested_trees: frozenset[Oid] = frozenset(),
          runner: Runner | None = None) -> MergeResult:
    """Merge exactly the approved review_commit into the integration branch, then record MERGED
    and remove the task's worktree and branch. A conflict or a failing integration test records
    INTEGRATION_FAILED and raises MergeFailed (exit 3), the integration branch untouched.

    With a team remote: the board and the integration branch are pulled first (a failed pull
    fails the merge: merging on a stale tip would fork the branch), review_commit is fetched if
    this machine lacks it, and auto-sync pushes MERGED and the integration branch in one atomic
    push. If another machine's merge reached the remote in between, this merge is undone locally
    (never shared) and done again on the new tip."""
    notes: list[str] = []
    for attempt in range(1, MERGE_ATTEMPTS + 1):
        pull_first(liza, f"merge {task}", strict=True)
        try:
            res = _merge_once(liza, task, integration_timeout, tested_trees, runner)
        except _MergeLost as e:
            if attempt == MERGE_ATTEMPTS:
                raise ConcurrencyConflict(f"merge {task}: the integration branch kept moving on "
                                          f"the remote ({e}); nothing was shared",
                                          hint="retry `git liza merge`") from None
            notes.append(f"merged again: {e}")
            continue
        return dataclasses.replace(res, notices=res.notices + tuple(notes))
    raise AssertionError("unreachable")


def _merge_once(liza: Liza, task: str, integration_timeout: float | None,
                tested_trees: frozenset[Oid] = frozenset(),
                runner: Runner | None = None) -> MergeResult:
    from gitliza.git.drift import drift_commits
    from gitliza.git.merge import (CheckoutNotUpdated, IntegrationTestFailed, MergeConflict,
                                   merge_commit_into)
    from gitliza.services.sync.branches import IntegrationDiverged
    repo: Repository = liza.repo
    with task_lock(repo, task):
        board = liza.board()
        t = require_task(board, task)
        dry_run(liza, Merge(actor=liza.agent, time=liza.now(), task=task, result="merged",
                            merge_commit=t.review_commit or NO_SHA), board)
        assert t.review_commit is not None  # APPROVED implies it (the core checked the state)
        ensure_commit(liza, t.review_commit, f"{task}'s review_commit")
        branch = board.config.integration_branch
        review = Oid(hex=t.review_commit)
        drift = drift_commits(repo, branch, t.base_commit)
        notes: list[str] = []
        for attempt in range(1, MERGE_ATTEMPTS + 1):
            try:
                outcome = merge_commit_into(
                    repo, branch, review, message=_merge_message(t, branch),
                    signature=_signature(liza.agent, liza.now()),
                    integration_test=Path(INTEGRATION_TEST),
                    integration_timeout=integration_timeout, tested_trees=tested_trees,
                    runner=runner, bounds=checkout_bounds(board))
            except ConcurrencyConflict:
                if attempt == MERGE_ATTEMPTS:
                    raise
                continue
            except (MergeConflict, IntegrationTestFailed, TreeRefused) as e:
                reason = _one_line(str(e))
                if isinstance(e, TreeRefused):  # never checked out: the human must look
                    record_refused_tree(liza, task, reason)
                if isinstance(e, IntegrationTestFailed):
                    from gitliza.services import testlog
                    kept = testlog.keep(repo, task, liza.now(), e.output)
                    if kept is not None:  # the whole output, as wt-merge.sh keeps it
                        reason = _one_line(f"{str(e)[:REASON_MAX - 80]} (full output: {kept})")
                failed = liza.apply(lambda _b, now: Merge(actor=liza.agent, time=now, task=task,
                                                         result="failed", reason=reason))
                raise MergeFailed(f"merge {task} failed: {reason}", failed,
                                  hint=f"{branch} was not changed; {task} is INTEGRATION_FAILED "
                                       "and can be claimed again") from e
            except CheckoutNotUpdated as e:  # the branch moved: the merge itself is done
                outcome = e.outcome
                notes.append(str(e))
            break
        merged = outcome.new
        if outcome.kind == "up-to-date":  # merged before (a crash before the board write)
            merged = first_parent_introducing(repo, outcome.new, review)
        op = Merge(actor=liza.agent, time=liza.now(), task=task, result="merged",
                   merge_commit=str(merged), drift_commits=drift)
        try:
            done = liza.apply(lambda _b, now: dataclasses.replace(op, time=now))
        except IntegrationDiverged as e:
            # Auto-sync found another machine's merge on the remote's integration branch: ours
            # was never shared. Take it back (board op and branch, each by CAS) and merge again.
            if not _undo_merge(liza, branch, outcome, task, str(merged)):
                raise
            raise _MergeLost(str(e)) from None
        except IllegalTransition as e:
            if getattr(e, "code", "") == "OP_DROPPED":
                # Auto-sync dropped the MERGED record (the task moved on remotely, or a sync of
                # another process here found the remote's integration branch moved on: doomed.py):
                # the local merge commit must not stay on the integration branch, nothing records
                # it. Still APPROVED on the board: merged again on the new tip.
                _undo_branch(repo, branch, outcome)
                if _still_approved(liza, task):
                    raise _MergeLost(str(e)) from None
                raise
            raise _unrecorded(branch, task, outcome, e) from e
        except LizaError as e:
            raise _unrecorded(branch, task, outcome, e) from e
        if not _shared(liza, task, str(merged)) and \
                _undo_merge(liza, branch, outcome, task, str(merged)):
            # Its auto-sync gave up (every round lost the race, or the push failed): kept, a
            # MERGED record the remote lacks wedges this clone once the remote's integration
            # branch moves on (every later sync, and so every op, fails IntegrationDiverged:
            # the fleet scenario's B team died of it). Taken back while it is the tip, it is
            # merged again on the remote's new tip (or the reviewer's next pass does).
            raise _MergeLost(f"the merge of {task} did not reach the remote; taken back")
        notes += drop_worktree(liza, task)
    from gitliza.services.lifecycle.conflicts import send_back_conflicts
    try:  # the integration branch moved: what waits for review or merge is checked against it
        notes += send_back_conflicts(liza)
    except LizaError as e:  # the merge is done and recorded; the next check catches up
        notes.append(f"conflict check after the merge: {e}")
    return MergeResult(done, outcome, branch, done.outcome.notices + tuple(notes))


def _still_approved(liza: Liza, task: str) -> bool:
    from gitliza.core.states import TaskState
    t = liza.board().task(task)
    return t is not None and t.status == TaskState.APPROVED


def _shared(liza: Liza, task: str, merged: str) -> bool:
    """Whether the remote's board, as this clone last fetched or pushed it, records `task`
    MERGED at `merged` (True with no remote to share with)."""
    from gitliza.core.states import TaskState
    from gitliza.git.remotes import remote as remotes
    from gitliza.git.repository import repo_path
    remote = liza.sync_target()
    if remote is None:
        return True
    tip = remotes.read_ref(repo_path(liza.repo), remotes.tracking_of(remote, remotes.STATE_REF))
    if tip is None:
        return False
    board = liza.store.board_at(liza.store.commit(tip))
    t = board.task(task) or board.get("archive", task)
    return t is not None and t.status == TaskState.MERGED and t.merge_commit == merged


def _unrecorded(branch: str, task: str, outcome: MergeOutcome, e: LizaError) -> InconsistentState:
    # Two refs cannot move together: the branch has the work, the board says APPROVED.
    return InconsistentState(
        f"{branch} now contains {task}'s review commit (at {outcome.new}) but MERGED "
        f"could not be recorded: {e}",
        hint="`git liza doctor --fix` records it; do not merge again by hand")


def _undo_merge(liza: Liza, branch: str, outcome: MergeOutcome, task: str, merged: str) -> bool:
    """Take back a merge that was never shared: the local board's tip must be exactly this MERGED
    op (recorded here, or replayed onto the remote's board by the sync that refused to push it),
    and the integration branch must still be at the merge result. Both move back by CAS."""
    store = liza.store
    tip = store.tip()
    if tip is None:
        return False
    commit = store.commit(tip)
    try:
        op = record.parse(commit.message).op
    except LizaError:
        return False
    if not (isinstance(op, Merge) and op.task == task and op.merge_commit == merged
            and op.actor == liza.agent and commit.parent_ids):
        return False
    from gitliza.services.sync.boardref import retract_tip
    if not retract_tip(store, tip, f"liza merge: undo unshared merge of {task}"):
        return False
    return _undo_branch(liza.repo, branch, outcome)


def _undo_branch(repo: Repository, branch: str, outcome: MergeOutcome) -> bool:
    """Move the integration branch back from our merge result to where it was, by CAS; not when
    a worktree has it checked out (its files followed the merge) -- then it stays, and the next
    sync reports the divergence."""
    ref = repo.references.get(f"refs/heads/{branch}")
    if outcome.kind == "up-to-date":
        return True
    cur = ref_oid(ref) if ref is not None else None
    if ref is None or cur is None or (cur != outcome.new
                                      and not repo.descendant_of(cur, outcome.new)):
        return True  # it no longer holds the merge: the sync that dropped ops returned it
    if cur != outcome.new:
        return False  # built on since: not ours to move
    if checkouts_of_branch(repo, f"refs/heads/{branch}"):
        warn(f"{branch} keeps the unshared merge {str(outcome.new)[:12]}: it is checked out; "
             f"reset it to {str(outcome.old)[:12]} by hand")
        return False
    try:
        ref.set_target(outcome.old, "liza merge: undo unshared merge")
    except (pygit2.GitError, OSError):
        return False
    return True


def _merge_message(t: Task, branch: str) -> str:
    return (f"Merge {t.id} into {branch}\n\n{_one_line(t.description)[:200]}\n\n"
            f"Liza-Task: {t.id}\nLiza-Review-Commit: {t.review_commit}\n"
            f"Liza-Approved-By: {t.approved_by}\n")


def _signature(actor: str, now: str) -> pygit2.Signature:
    return pygit2.Signature(actor, f"{actor}@liza.invalid", clock.to_epoch(now), 0)


def _one_line(text: str) -> str:
    one = " ".join(text.split())
    return one if len(one) <= REASON_MAX else one[: REASON_MAX - 3] + "..."
