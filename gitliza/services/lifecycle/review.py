"""Submit and review: READY_FOR_REVIEW with the worktree HEAD as review_commit (after the
clean-sync check), the review lease with review_commit checked out (fetched first when it was made
on another machine), and the verdict on exactly that commit."""
from __future__ import annotations

import os
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Sequence

import pygit2
from pygit2 import Oid, Repository

from gitliza.core import quorum
from gitliza.core.board import Board
from gitliza.core.model import Evidence
from gitliza.core.invariants import reviewable
from gitliza.core.presence import leasemarks
from gitliza.core.presence.leasemarks import REVIEW
from gitliza.core.ops import Op
from gitliza.core.ops.review import ClaimReview, Verdict
from gitliza.core.ops.work import Submit
from gitliza.core.states import TaskState
from gitliza.core import lockscope
from gitliza.core.ops.journal import AnomalyOp
from gitliza.core.ops.work import scope_violation_line
from gitliza.errors import (IllegalTransition, LizaError, NotFound, ScopeViolation,
                            ValidationError)
from gitliza.git import mergecheck, treecheck
from gitliza.git.tasklocks import task_lock
from gitliza.git.checkouts import clean_sync_problems, worktree_head
from gitliza.git.evidence import evidence_gaps
from gitliza.git.worktrees.tasktrees import add_task_worktree
from gitliza.services import leasewatch
from gitliza.services.attic import keep_leftovers, kept_line
from gitliza.services.lifecycle.carry import carry_clean_fixes
from gitliza.services.lifecycle.conflicts import send_back_conflicts
from gitliza.services.lifecycle.integration import integration_tip
from gitliza.services.lifecycle.common import (NO_SHA, Done, checkout_bounds, dry_run,
                                                record_refused_tree, require_task, warn)
from gitliza.services.locations import existing_task_dir, task_dir
from gitliza.services.lifecycle.remote import ensure_commit, pull_first

if TYPE_CHECKING:
    from gitliza.services.api import Liza

S = TaskState


def resolve_commit(repo: Repository, rev: str) -> str:
    try:
        return str(repo.revparse_single(rev).peel(pygit2.Commit).id)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        raise ValidationError(f"{rev!r} is not a commit in this repository") from None


def submit(liza: Liza, task: str, commit: str | None = None) -> Done:
    """Clean-sync check of the task worktree, then READY_FOR_REVIEW with review_commit = its HEAD
    (`commit`, if given, must name that same commit). Nothing changes when the check fails."""
    repo: Repository = liza.repo
    board = dry_run(liza, Submit(actor=liza.agent, time=liza.now(), task=task, commit=NO_SHA))
    t = require_task(board, task)
    path = existing_task_dir(repo, t)
    problems = clean_sync_problems(path)
    if problems:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more"
                                            if len(problems) > 5 else "")
        raise ValidationError(f"{task}: worktree {path} is not clean (Clean Sync Invariant): "
                              f"{shown}", hint="commit, or remove, every change, then submit")
    head = str(worktree_head(path))
    if commit is not None and resolve_commit(repo, commit) != head:
        raise ValidationError(f"--commit {commit} is not the worktree HEAD {head[:12]}",
                              hint="submit what is checked out in the task worktree")
    if t.base_commit is not None:
        if head == t.base_commit:
            raise ValidationError(f"{task}: nothing committed since base {head[:12]}",
                                  hint="commit your work in the task worktree first")
        if not repo.descendant_of(Oid(hex=head), Oid(hex=t.base_commit)):
            raise ValidationError(f"{task}: HEAD {head[:12]} does not descend from base_commit "
                                  f"{t.base_commit[:12]}",
                                  hint="rebase or merge onto the base instead of replacing it")
    # No task tree may hold gitliza's own `.liza`: once merged it would be checked out
    # into the main worktree's `.liza/`.
    treecheck.refuse_liza_entry(repo, head, task)
    try:  # every reviewer and the merge would check it out: past the bounds, none does
        treecheck.refuse_large(repo, Oid(hex=head), checkout_bounds(board), task)
    except treecheck.CheckoutTooLarge as e:
        record_refused_tree(liza, task, str(e))
        raise
    changed = _scope_check(liza, board, t.id, head)
    clash = _conflicts(repo, board.config.integration_branch, head)
    if clash:
        raise ValidationError(
            f"{task}: {head[:12]} does not merge with {board.config.integration_branch} "
            f"(conflicts in: {', '.join(clash[:10])}); no reviewer would be given it",
            hint=f"merge {board.config.integration_branch} into the task branch, resolve, "
                 "commit, then submit")
    done = liza.do(Submit, task=task, commit=head, changed=changed)
    return Done(done, path, done.outcome.notices)


def _conflicts(repo: Repository, branch: str, commit: str) -> list[str]:
    """The paths `commit` conflicts in with the integration branch (none when the branch does
    not exist here yet: nothing to conflict with)."""
    try:
        tip = integration_tip(repo, branch)
    except ValidationError:
        return []
    return mergecheck.conflicts(repo, tip, Oid(hex=commit))


def _scope_check(liza: Liza, board: Board, task: str, head: str) -> tuple[str, ...]:
    """The paths `head` changes, when `task` has a lock scope (else nothing is computed). A
    change outside it is refused (ScopeViolation, exit 1, one line naming the files) and
    recorded as a scope_violation anomaly: the coder reverts those files, or asks the planner
    (`block`) for a wider scope; its supervisor does not retry it as a crash."""
    t = require_task(board, task)
    if not t.lock_scope:
        return ()
    repo: Repository = liza.repo
    tip = integration_tip(repo, board.config.integration_branch)
    changed = mergecheck.task_paths(repo, tip, Oid(hex=head))
    out = lockscope.outside(t.lock_scope, changed)
    if out:
        line = scope_violation_line(task, out)
        with suppress(LizaError):  # the refusal stands even if the record cannot be written
            liza.do(AnomalyOp, type="scope_violation", task=task, ordered=True,
                    details=(("files", ", ".join(out)[:500]),))
        raise ScopeViolation(line, hint="revert those files in the task branch, or `git liza "
                                        "block` asking the planner for a wider lock scope")
    return tuple(changed)


def claim_review(liza: Liza, task: str | None = None) -> Done:
    """Take a review lease on `task`, or on the oldest waiting review this reviewer may take, and
    make sure `.worktrees/<task>` has review_commit checked out.

    On the coder's machine that is the coder's worktree, used as it is. On another machine (a
    team remote), the board and the task branches are pulled first, the review commit must be
    here before the lease is taken, and the worktree is created at review_commit on branch
    `liza/<task>` (or moved there from an earlier review round when it is clean and review_commit
    descends from it)."""
    me = liza.agent
    pull_first(liza, "claim-review")
    # A reviewer never takes one that conflicts, nor a fix that keeps its approval.
    sent_back = tuple(send_back_conflicts(liza)) + tuple(carry_clean_fixes(liza))

    def pick(board: Board, now: str) -> str:
        if task is not None:
            return task
        found = [t for t in reviewable(board, now, me)
                 if me not in t.failed_by and _free_here(liza, board, t.id, now)]
        if not found:
            raise NotFound(f"nothing to review for {me}")
        return found[0].id

    def make_op(board: Board, now: str) -> Op:
        tid = pick(board, now)
        op: Op = ClaimReview(actor=me, time=now, task=tid, takeover=_takeover(liza, board, tid,
                                                                               now))
        return op

    # The commit must be here before the lease is taken: a reviewer who cannot see the work must
    # not hold the review. (The task is predicted on the current board; make_op picks again.)
    board = liza.board()
    with suppress(NotFound):
        predicted = board.task(pick(board, liza.now()))
        if predicted is not None and predicted.review_commit and \
                predicted.status == S.READY_FOR_REVIEW:
            ensure_commit(liza, predicted.review_commit, f"{predicted.id}'s review_commit")
    done = liza.apply(make_op)
    tid = done.outcome.event.task
    if not tid:
        return Done(done, None, sent_back + done.outcome.notices)
    t = done.outcome.board.task(tid)
    notes: tuple[str, ...] = ()
    if t is not None and t.review_commit:
        ensure_commit(liza, t.review_commit, f"{tid}'s review_commit")
        with task_lock(liza.repo, tid):
            notes = _review_checkout(liza.repo, tid, Oid(hex=t.review_commit),
                                     checkout_bounds(done.outcome.board))
    return Done(done, task_dir(liza.repo, tid), sent_back + done.outcome.notices + notes)


def _takeover(liza: Liza, board: Board, task: str, now: str) -> str | None:
    """The claim-review's takeover record: NOBODY for a lease beside the others' under a
    quorum short of reviewers (it takes over none), else the lease judged on this clone's
    clock (leasewatch)."""
    t = board.task(task)
    if t is not None and t.reviewing_by not in (None, liza.agent) and \
            quorum.room(board.config, t, liza.agent):
        return leasemarks.NOBODY
    return leasewatch.takeover(liza.repo, board, task, REVIEW, liza.agent, now)


def _free_here(liza: Liza, board: Board, task: str, now: str) -> bool:
    """Whether this reviewer may take a review lease on `task`: nobody else's is live for this
    clone (its own clock), or the quorum has room for one more beside them."""
    try:
        _takeover(liza, board, task, now)
    except IllegalTransition:
        return False
    return True


def _review_checkout(repo: Repository, task: str, review: Oid,
                     bounds: tuple[int, int] | None = None) -> tuple[str, ...]:
    """`.worktrees/<task>` at `review` for the reviewer. An existing checkout at review_commit
    (the coder's, on the same machine) is used as it is; one that is clean and behind review_commit
    (this reviewer's, from an earlier round) is moved to it; anything else is kept untouched, and
    verdict will say that HEAD is not review_commit. Never loses work: a local branch liza/<task>
    with commits review_commit lacks is kept in the attic before the worktree is made."""
    path = task_dir(repo, task)
    if (path / ".git").exists():
        head = worktree_head(path)
        if head == review:
            return ()
        dirty = clean_sync_problems(path)
        if dirty or not repo.descendant_of(review, head):
            why = f"it has local changes ({'; '.join(dirty[:3])})" if dirty else \
                f"its HEAD {str(head)[:12]} is not an ancestor of review_commit"
            msg = f"kept {path} as it is: {why}; review exactly {review} there"
            warn(msg)
            return (msg,)
    kept = keep_leftovers(repo, task, path, review)
    add_task_worktree(repo, task, review, fresh=True, bounds=bounds)
    if kept:
        msg = f"the earlier checkout of {task}: {kept_line(kept)}"
        warn(msg)
        return (msg,)
    return ()


# The reviewer's agent CLI and model, set by its supervisor in the environment the broker runs the
# agent's commands in (gitliza/team/sessions.py): recorded on the verdict, never taken from the
# agent's arguments (review_diversity counts them, core/quorum.py).
CLI_ENV = "LIZA_AGENT_CLI"
MODEL_ENV = "LIZA_AGENT_MODEL"


def verdict(liza: Liza, task: str, decision: str, reason: str | None = None,
            commit: str | None = None, evidence: Sequence[str | Evidence] = ()) -> Done:
    """Approve or reject. The reviewed commit (default: the worktree HEAD) must be review_commit
    (the core checks), and so must the worktree HEAD: a HEAD that moved after submit means the
    reviewer looked at something else than what would be merged. An approval is a vote toward
    the task's review quorum, with `evidence` (`N=KIND:REF`) for each acceptance criterion; a
    path's must exist in the reviewed commit."""
    repo: Repository = liza.repo
    board = liza.board()
    t = require_task(board, task)
    reviewed = resolve_commit(repo, commit) if commit is not None else None
    proofs = tuple(e if isinstance(e, Evidence) else quorum.parse_evidence(e) for e in evidence)
    who = {"cli": os.environ.get(CLI_ENV) or None, "model": os.environ.get(MODEL_ENV) or None}
    args: dict[str, Any] = dict(verdict=decision, reason=reason, counted=True, evidence=proofs,
                                **who)
    dry_run(liza, Verdict(actor=liza.agent, time=liza.now(), task=task,
                          commit=reviewed or t.review_commit or NO_SHA, **args), board)
    path = existing_task_dir(repo, t)
    head = str(worktree_head(path))
    if head != t.review_commit:
        raise ValidationError(f"{task}: worktree HEAD {head[:12]} is not the submitted "
                              f"review_commit {str(t.review_commit)[:12]}",
                              hint=f"review exactly {t.review_commit}: `git -C {path} checkout "
                                   f"{t.review_commit}`, or have the coder resubmit")
    if decision == "approve":  # a rejection of such a tree is what it deserves
        treecheck.refuse_liza_entry(repo, head, task)
    missing = evidence_gaps(repo, head, proofs) or ()
    if missing:
        raise ValidationError(f"{task}: evidence {missing[0]}")
    done = liza.do(Verdict, task=task, commit=reviewed or head, **args)
    return Done(done, path, done.outcome.notices)
