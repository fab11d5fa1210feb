"""The work a supervisor finds for its agent, and takes: a coder resumes its live claim or claims
the best task (worktree and all); a reviewer first merges what it approved, then resumes its
review lease or takes one; a planner answers the board's wake triggers, or completes the goal
once every task is terminal. Each is one `Job`: one agent session to run.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from gitliza.core.quorum import review_lease
from gitliza.core import mergequeue
from gitliza.core.agents import wake
from gitliza.core.board import Board
from gitliza.core.invariants import reviewable
from gitliza.core.model import Config
from gitliza.core.ops.goal import CompleteGoal
from gitliza.core.states import Role, TaskState
from gitliza.core.agents.wake import WakeTrigger
from gitliza.errors import AlreadyHeld, LeaseLost, LizaError
from gitliza.services import leasewatch
from gitliza.services.lifecycle.batch import merge_batch
from gitliza.services.lifecycle.claim import claim, restore_worktree
from gitliza.services.locations import main_root, task_dir
from gitliza.services.lifecycle.merge import MergeFailed, merge
from gitliza.services.lifecycle.review import claim_review
from gitliza.services.sync import acked
from gitliza.services.lifecycle.reviewtree import review_checkout
from gitliza.services.api import Liza

if TYPE_CHECKING:
    from gitliza.git.merge import Runner

S = TaskState


@dataclass(frozen=True)
class Job:
    """One agent session to run."""

    task: str | None
    worktree: Path
    trigger: WakeTrigger | None = None
    review_commit: str | None = None
    resume: bool = False
    signature: tuple[Any, ...] = ()  # planner: the trigger set this session answers


def max_wait(cfg: Config, role: Role) -> int:
    """How long a supervisor of `role` waits for work before it exits (seconds)."""
    return {Role.PLANNER: cfg.planner_max_wait, Role.CODER: cfg.coder_max_wait,
            Role.CODE_REVIEWER: cfg.reviewer_max_wait}[role]


class WorkFinder:
    """Finds and takes work for `liza.agent` in `role`; `answered` is the planner's trigger set
    its last session answered (the loop sets it)."""

    def __init__(self, liza: Liza, role: Role, log: Callable[[str], None],
                 runner: Runner | None = None) -> None:
        self.liza = liza
        self.runner = runner  # where a merge's integration test runs (sandbox/treerun.py)
        self.agent = liza.agent
        self.role = role
        self.log = log
        self.answered: tuple[Any, ...] = ()
        # A claim made here that the remote has not acknowledged yet (services/sync/acked.py):
        # (task, why), said once; the supervisor looks again every follow_interval.
        self.pending: tuple[str, str] | None = None
        # The pending claim was made by this supervisor (not resumed): once acknowledged, its
        # agent's first session is no resume, though the loop then finds the claim held.
        self._fresh: str | None = None

    def find(self, board: Board, now: str) -> Job | int | None:
        """A job, an exit code (the goal is complete), or None (nothing to do now)."""
        if self.role == Role.PLANNER:
            return self._planner_work(board)
        if self.role == Role.CODER:
            return self._coder_work(board, now)
        return self._reviewer_work(board, now)

    def _planner_work(self, board: Board) -> Job | int | None:
        if wake.all_terminal(board):
            return self._complete_goal(board)
        found = wake.planner_triggers(board)
        # The same unresolved triggers do not restart the planner in a loop: it runs again when
        # the set of triggers (or the tasks raising them) changes.
        signature = tuple(found)
        if not found or signature == self.answered:
            return None
        return Job(task=None, worktree=main_root(self.liza.repo), trigger=found[0][0],
                   signature=signature)

    def _complete_goal(self, board: Board) -> int:
        """The planner's supervisor marks the goal COMPLETED when every task is terminal (the
        reference's supervisor does the same)."""
        try:
            done = self.liza.do(CompleteGoal)
            self.log(f"every task is terminal: {done.outcome.event.summary}")
        except LeaseLost:
            raise
        except LizaError as e:  # another planner (or the human) completed it first
            self.log(f"complete-goal: {e}")
        return 0

    def _coder_work(self, board: Board, now: str) -> Job | None:
        held = wake.holder_of(board, self.agent)
        if held is not None and held.status == S.CLAIMED and held.assigned_to == self.agent \
                and held.lease_expires is not None and held.lease_expires > now:
            return self._acknowledged(Job(task=held.id, worktree=task_dir(self.liza.repo,
                                                                          held.id), resume=True))
        # A lease someone else holds is judged by this clone's own clock (services/leasewatch.py).
        if not wake.work_for(board, Role.CODER, self.agent, now,
                             leasewatch.expired_here(self.liza.repo, board, now)):
            return None
        try:
            res = claim(self.liza)
        except LeaseLost:
            raise
        except AlreadyHeld as e:  # a lost race: one short line, wait for the next change
            self.log(f"claim: {e.task} went to {e.holder} first")
            return None
        except LizaError as e:
            self.log(f"claim: {e}")
            return None
        for n in res.notices:
            self.log(n)
        if res.status != S.CLAIMED or res.worktree is None:
            return None
        self.log(f"claimed {res.task} in {res.worktree}")
        return self._acknowledged(Job(task=res.task, worktree=res.worktree))

    def _acknowledged(self, job: Job) -> Job | None:
        """`job`, once the remote's board holds its claim (a coder's claim, a reviewer's review
        lease); None (and one line) until then: an agent started on a claim only this clone knows
        of may work or review a task that a machine on the other side of a cut works or reviews
        too (issue 48)."""
        task = job.task
        assert task is not None
        what = "review lease" if self.role == Role.CODE_REVIEWER else "claim"
        why = acked.unacknowledged(self.liza, task, self.role)
        if why is None:
            if self.pending is not None:
                self.log(f"{what} of {task} acknowledged by the remote; starting the agent")
                if self._fresh == task:
                    job = dataclasses.replace(job, resume=False)
            self.pending = self._fresh = None
            if self.role == Role.CODER:
                # A claim whose command failed after its commit (its sync could not share it)
                # may have lost the worktree it made; the agent must not start without one.
                try:
                    said = restore_worktree(self.liza, task)
                except LizaError as e:
                    self.log(f"claim of {task}: its worktree could not be made: {e}")
                    return None
                if said:
                    self.log(said)
            return job
        if acked.holds(self.liza.board(), self.agent, task, self.role) is None:
            self.log(f"{what} of {task} given up: {why}")
            self.pending = self._fresh = None
            return None
        if self.pending != (task, why):
            self.log(f"{what} of {task} not started: it is not on the remote's board ({why}); "
                     "trying again every follow_interval")
        if self.pending is None or self.pending[0] != task:
            self._fresh = None if job.resume else task
        self.pending = (task, why)
        return None

    def merge_approved(self, board: Board) -> bool:
        """A reviewer merges the merge queue (core/mergequeue.py: approval order, integration
        fixes first, priority with aging), whoever approved each task, before it looks for more
        work and before a `--once` supervisor exits. Returns whether it tried any."""
        merged = self._merge_batches(board)
        for t in mergequeue.queue(self.liza.board() if merged else board):
            merged = True
            try:
                res = merge(self.liza, t.id, runner=self.runner)
                self.log(f"merged {t.id} into {res.branch} ({res.merge.kind})")
            except MergeFailed as e:
                self.log(f"merge of {t.id} failed (INTEGRATION_FAILED): {e}")
            except LeaseLost:
                raise
            except LizaError as e:
                if not _merged_already(self.liza.board(), t.id):  # another's merge won: quiet
                    self.log(f"merge of {t.id}: {e}")
        return merged

    def _merge_batches(self, board: Board) -> bool:
        """With config merge_batch > 1: the queue's head merged in batches, one integration test
        per batch (services/lifecycle/batch.py); what a batch leaves is merged one by one."""
        size, tried = board.config.merge_batch, False
        while size > 1:
            queue = [t.id for t in mergequeue.queue(board)]
            if len(queue) < 2:
                break
            tried = True
            try:
                done, runs = merge_batch(self.liza, queue[:size], runner=self.runner)
            except LeaseLost:
                raise
            except LizaError as e:
                self.log(f"merge batch: {e}")
                break
            if not done:
                break
            self.log(f"merged {', '.join(done)} as one batch ({runs} integration test run(s))")
            board = self.liza.board()
        return tried

    def _batch_filling(self, board: Board, now: str) -> bool:
        """With merge_batch > 1, the queue fills before it is merged: while it is shorter than a
        batch and a review waits, the review comes first (a queued task waits for at most
        merge_batch - 1 reviews; with nothing to review, what is queued is merged)."""
        size = board.config.merge_batch
        return size > 1 and 0 < len(mergequeue.queue(board)) < size and \
            bool(reviewable(board, now, self.agent))

    def _reviewer_work(self, board: Board, now: str) -> Job | None:
        if not self._batch_filling(board, now) and self.merge_approved(board):
            board, now = self.liza.board(), self.liza.now()
        held = wake.holder_of(board, self.agent)
        if held is not None and wake.still_holds(board, self.agent, held.id, self.role) and \
                (review_lease(held, self.agent) or "") > now:
            return self._clean(self._acknowledged(Job(
                task=held.id, worktree=task_dir(self.liza.repo, held.id),
                review_commit=held.review_commit, resume=True)))
        if not wake.work_for(board, Role.CODE_REVIEWER, self.agent, now):
            return None
        try:
            done = claim_review(self.liza)
        except LeaseLost:
            raise
        except AlreadyHeld as e:
            self.log(f"claim-review: {e.task} went to {e.holder} first")
            return None
        except LizaError as e:
            self.log(f"claim-review: {e}")
            return None
        tid = done.committed.outcome.event.task
        rt = done.committed.outcome.board.task(tid) if tid else None
        if rt is None or done.worktree is None:
            return None
        self.log(f"reviewing {rt.id} at {str(rt.review_commit)[:12]}")
        return self._clean(self._acknowledged(Job(task=rt.id, worktree=done.worktree,
                                                  review_commit=rt.review_commit)))

    def _clean(self, job: Job | None) -> Job | None:
        """The review runs in this reviewer's clean checkout of exactly review_commit
        (services/lifecycle/reviewtree.py), made anew before each session: never in the coder's
        worktree, whose ignored files would be tested with it."""
        if job is None or job.task is None or job.review_commit is None:
            return job
        try:
            path = review_checkout(self.liza, job.task, job.review_commit)
        except LizaError as e:
            self.log(f"review checkout of {job.task}: {e}")
            return None
        return dataclasses.replace(job, worktree=path)


def _merged_already(board: Board, task: str) -> bool:
    """Whether `task` is MERGED now (live or archived): a merge that lost to another's is no news."""
    t = board.task(task) or board.get("archive", task)
    return t is not None and t.status == S.MERGED
