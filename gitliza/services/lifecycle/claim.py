"""Claim and release: taking a task into its own worktree (the two-phase claim: the core decides,
then the worktree, then CLAIMED by CAS, the worktree removed again on failure) and giving it back.
Without a task id, the best claimable task this coder can get."""
from __future__ import annotations

import dataclasses
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import pygit2
from pygit2 import Oid, Repository

from gitliza.core.board import Board
from gitliza.core.invariants import claimable
from gitliza.core.presence.leasemarks import CLAIM
from gitliza.core.model import Task
from gitliza.core.ops import Op, apply as core_apply
from gitliza.core.ops.work import Claim, Release
from gitliza.core.ops.work import worktree_path
from gitliza.core.states import HUMAN_ACTOR, TaskState
from gitliza.errors import (ConcurrencyConflict, IllegalTransition, LizaError, NotFound,
                            ValidationError)
from gitliza.git.reflocks import RefLocked
from gitliza.git.repository import ref_oid
from gitliza.git.store import Committed
from gitliza.git.tasklocks import task_lock
from gitliza.git.treecheck import CheckoutTooLarge
from gitliza.git.worktrees.tasktrees import add_task_worktree, remove_task_worktree, task_branch
from gitliza.services import leasewatch
from gitliza.services.attic import keep_leftovers, kept_line
from gitliza.services.lifecycle.cleanup import drop_worktree, keep_state
from gitliza.services.lifecycle.common import (Done, checkout_bounds, record_refused_tree,
                                                warn)
from gitliza.services.lifecycle.integration import integration_tip
from gitliza.services.locations import task_dir
from gitliza.services.lifecycle.remote import pull_first, shared_integration_tip

if TYPE_CHECKING:
    from gitliza.services.api import Liza

S = TaskState
# Observers of the two-phase claim's gap: called with the task id after its worktree exists and
# before the CLAIMED commit. Empty in the CLI; a harness (crash-recovery tests, fault injection)
# registers one in its own process to act inside the gap.
AFTER_WORKTREE: list[Callable[[str], None]] = []


@dataclass(frozen=True)
class ClaimResult:
    committed: Committed
    task: str
    status: TaskState  # CLAIMED, or BLOCKED when the claim exhausted the task
    worktree: Path | None  # absolute; None when not claimed
    branch: str | None
    base_commit: str | None
    reused: bool  # the coder's existing worktree was kept (re-claim after REJECTED, ...)
    notices: tuple[str, ...] = ()


class _Replan(Exception):
    """The board changed between the dry-run and the commit so that the claim would now end
    differently (CLAIMED vs BLOCKED): start the claim over instead of committing a surprise."""


def claim(liza: Liza, task: str | None = None) -> ClaimResult:
    """Claim `task`, or the best claimable task for this coder (priority, then age).

    Without `task`, a candidate whose claim fails because the task moved on (IllegalTransition,
    another process holding its lock) is skipped for the next one; errors about the coder itself
    (wrong role, busy on another task) are raised at once. A claim that exhausts a task (BLOCKED)
    is recorded, and the next candidate is tried.

    With a team remote, the integration branch is brought up to date first: a claim branches from
    the integration tip the team sees, not from a stale local one. The board is pulled too when
    the local one refuses the claim (the task may have come back from review on another machine);
    a claim the local board allows is committed and reconciled by auto-sync, like every op.
    """
    pull_first(liza, "claim", board=False)
    try:
        return _claim(liza, task)
    except ValidationError as e:  # illegal transition, busy coder, no candidate...
        if liza.sync_remote() is None or e.code == "OP_DROPPED":
            raise  # no remote to ask, or the remote's board is what refused it
        pull_first(liza, "claim", board=True)
        return _claim(liza, task)


def _claim(liza: Liza, task: str | None) -> ClaimResult:
    if task is not None:
        with task_lock(liza.repo, task) as _:
            return _claim_locked(liza, task)
    notices: list[str] = []
    tried: set[str] = set()
    last: LizaError | None = None
    while True:
        board, now = liza.board(), liza.now()
        candidates = [t.id for t in _claim_candidates(liza, board, now, liza.agent) if t.id not in tried]
        if not candidates:
            if last is not None:
                raise last
            raise NotFound(f"no claimable task for {liza.agent}",
                           hint="`git liza ready` lists claimable tasks")
        result = _claim_first_free(liza, candidates, tried)
        if isinstance(result, LizaError):
            last = result
            continue
        if result is None:
            continue
        notices += result.notices
        if result.status == S.CLAIMED:
            return dataclasses.replace(result, notices=tuple(notices))
        tried.add(result.task)


def _claim_candidates(liza: Liza, board: Board, now: str, coder: str) -> list[Task]:
    """Claimable tasks for `coder`, best first; its own task back from review comes first. A
    task someone else holds is a candidate once its lease expired for this clone (its clock)."""
    found = claimable(board, now, coder, expired=leasewatch.expired_here(liza.repo, board, now))
    me = board.agent(coder)
    # Its own work back (a rejection, or an integration fix of a task it wrote, even once it
    # moved on: the coder that did the work keeps the fix when it is free), then the rest.
    mine = [t for t in found if me is not None and (
        t.id == me.current_task
        or (t.status in (S.REJECTED, S.INTEGRATION_FAILED) and t.assigned_to == coder))]
    return mine + [t for t in found if t not in mine]


def _claim_first_free(liza: Liza, candidates: list[str], tried: set[str]
                      ) -> ClaimResult | LizaError | None:
    """Claim the first candidate whose lock is free, so that concurrent claimers spread over the
    tasks instead of queueing on the same best one; when every lock is held, wait for the best."""
    for tid in candidates:
        with task_lock(liza.repo, tid, timeout=0) as got:
            if got:
                return _claim_or_skip(liza, tid, tried)
    with task_lock(liza.repo, candidates[0]):
        return _claim_or_skip(liza, candidates[0], tried)


def _claim_or_skip(liza: Liza, tid: str, tried: set[str]) -> ClaimResult | LizaError:
    try:
        return _claim_locked(liza, tid)
    except (IllegalTransition, NotFound) as e:  # the task moved on: the caller tries the next
        tried.add(tid)
        return e
    except RefLocked as e:  # its branch's lock is held (a crashed git): the next task, and why
        warn(f"skipped {tid}: {e}")
        tried.add(tid)
        return e


def _claim_locked(liza: Liza, task: str) -> ClaimResult:
    for _ in range(3):
        try:
            return _claim_attempt(liza, task)
        except _Replan:
            continue
    raise ConcurrencyConflict(f"{task} kept changing during the claim; nothing was changed",
                              hint="retry")


def _claim_attempt(liza: Liza, task: str) -> ClaimResult:
    repo: Repository = liza.repo
    board, now = liza.board(), liza.now()
    rel = worktree_path(task)
    t = board.task(task)
    # The same coder keeps its checkout; so does anyone taking over an INTEGRATION_FAILED task
    # (liza-claim-task.sh preserves that worktree: the failed work is what the fix starts from),
    # and the coder the human reassigned a task to (it continues the task's branch).
    reuse = (t is not None and t.base_commit is not None
             and (t.status == S.INTEGRATION_FAILED
                  or (t.assigned_to == liza.agent
                      and t.status in (S.REJECTED, S.INTEGRATION_FAILED, S.CLAIMED,
                                       S.UNCLAIMED))))
    if reuse:
        assert t is not None and t.base_commit is not None
        base = t.base_commit
    else:
        branch = board.config.integration_branch
        base = str(shared_integration_tip(liza, branch, integration_tip(repo, branch)))
    # Phase 1: the core decides on the current board, nothing is touched if it refuses.
    # What this clone judged of the current holder's lease, on its own clock (a live lease
    # refuses here, nothing touched); recorded in the op, which the core checks.
    probe = Claim(actor=liza.agent, time=now, task=task, worktree=rel, base_commit=base,
                  forgive_faults=True,
                  takeover=leasewatch.takeover(repo, board, task, CLAIM, liza.agent, now))
    claims = _claim_outcome(board, probe, task)

    def make_op(fresh: Board, at: str) -> Op:
        op: Op = Claim(actor=liza.agent, time=at, task=task, worktree=rel, base_commit=base,
                       forgive_faults=True,
                       takeover=leasewatch.takeover(repo, fresh, task, CLAIM, liza.agent, at))
        if _claim_outcome(fresh, op, task) != claims:
            raise _Replan()
        return op

    if not claims:  # exhaustion: record BLOCKED, no worktree is made
        done = liza.apply(make_op)
        return ClaimResult(done, task, S.BLOCKED, None, None, None, False,
                           done.outcome.notices)
    # Phase 2: the worktree. Phase 3: CLAIMED by CAS, make_op re-validating on every retry.
    kept: list[str] = []
    try:
        path, created = _prepare_worktree(repo, task, Oid(hex=base), reuse, kept,
                                          checkout_bounds(board))
    except CheckoutTooLarge as e:  # nothing written, nothing claimed: the human must look
        record_refused_tree(liza, task, str(e))
        raise
    for observe in AFTER_WORKTREE:
        observe(task)
    try:
        done = liza.apply(make_op)
    except BaseException:
        # Never remove a worktree this claim did not make (the coder's own work), nor one its
        # claim stays on the local board for (committed, then the auto-sync failed: the
        # supervisor starts the agent in it once the remote has the claim, team/work.py).
        if created and not _kept_locally(liza, task, base, rel):
            with suppress(LizaError):
                remove_task_worktree(repo, task)
        raise
    return ClaimResult(done, task, S.CLAIMED, path, task_branch(task), base, not created,
                       done.outcome.notices + ((f"the earlier work in {rel}: "
                                                f"{kept_line(kept)}",) if kept else ()))

def restore_worktree(liza: Liza, task: str) -> str | None:
    """The worktree of `liza.agent`'s claim of `task`, recreated when it is missing (at its
    branch tip, else at the claim's base), before an agent is started in it; one line saying so,
    None when it was there (or the claim is not this agent's)."""
    board = liza.board()
    t = board.task(task)
    if t is None or t.status != S.CLAIMED or t.assigned_to != liza.agent or t.base_commit is None:
        return None
    path = task_dir(liza.repo, task)
    if (path / ".git").exists():
        return None
    with task_lock(liza.repo, task):
        _prepare_worktree(liza.repo, task, Oid(hex=t.base_commit), True, None,
                          checkout_bounds(board))
    return f"{task}'s worktree was missing: recreated at {path} from its branch"


def _kept_locally(liza: Liza, task: str, base: str, rel: str) -> bool:
    """Whether the local board records this very claim (`liza.agent`'s, on `base`, in `rel`)."""
    try:
        t = liza.board().task(task)
    except LizaError:
        return False
    return (t is not None and t.status == S.CLAIMED and t.assigned_to == liza.agent
            and t.base_commit == base and t.worktree == rel)


def _claim_outcome(board: Board, op: Op, task: str) -> bool:
    """True if `op` claims the task, False if it moves it to BLOCKED; raises if it is refused."""
    out = core_apply(board, op)
    t = out.board.task(task)
    return t is not None and t.status == S.CLAIMED


def _prepare_worktree(repo: Repository, task: str, base: Oid, reuse: bool,
                      kept: list[str] | None = None,
                      bounds: tuple[int, int] | None = None) -> tuple[Path, bool]:
    """The worktree for a claim, and whether this claim created it from scratch.

    Re-claim by the same coder keeps its checkout (and its commits on `liza/<task>`); when the
    directory is gone it is recreated at the branch tip, or at base if the branch is gone too.
    Any other claim starts fresh from the integration tip: leftovers belong to nobody (the board
    says so, and the task lock keeps concurrent claimers of this task out) or to a coder whose
    lease was taken over.
    """
    path = task_dir(repo, task)
    if not reuse:
        refs = keep_leftovers(repo, task, path, base)
        if kept is not None:
            kept += refs
        return add_task_worktree(repo, task, base, fresh=True, bounds=bounds).path, True
    branch = repo.references.get(f"refs/heads/{task_branch(task)}")
    if path.is_dir() and branch is not None and _on_branch(path, task):
        return path, False
    start = ref_oid(branch) if branch is not None else base
    add_task_worktree(repo, task, start, bounds=bounds)
    return path, False


def _on_branch(path: Path, task: str) -> bool:
    try:
        head = Repository(str(path), pygit2.enums.RepositoryOpenFlag.NO_SEARCH).head
    except (pygit2.GitError, KeyError):
        return False
    return bool(head.name == f"refs/heads/{task_branch(task)}")

def release(liza: Liza, task: str) -> Done:
    """Give a claimed task back: UNCLAIMED, then its worktree and branch go (work is discarded;
    a dirty worktree is kept with a warning). The human frees any task (the coder's, a
    rework's, a review lease): the worktree stays where it is, since the work in it is not the
    human's to throw away; the next claim keeps what it finds there in the attic."""
    with task_lock(liza.repo, task):
        done = liza.do(Release, task=task)
        if liza.agent == HUMAN_ACTOR:
            path = task_dir(liza.repo, task)
            kept = keep_state(liza, task, "the human's release", locked=True) \
                if path.exists() else []
            notes: tuple[str, ...] = (f"worktree kept: {path}" + (
                f"; {kept[0].partition(': ')[2]}" if kept else "") + " (the next claim keeps "
                "what it finds there in the attic too)",) if path.exists() else ()
        else:
            notes = drop_worktree(liza, task)
    return Done(done, None, done.outcome.notices + notes)
