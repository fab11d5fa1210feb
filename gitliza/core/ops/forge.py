"""The forge bridge's ops (docs/forge.md), all the human's (the bridge runs as the human who set
it up, core/forgerules.py decides what it records):

- `forge-link`: the task's pull request number on the board (idempotent: the same number again
  changes nothing; another number for a task that has one is refused: one PR per task);
- `forge-checks`: the forge's required checks all passed on the task's approved commit, which
  lets the merge queue take it (a failing check is recorded by `merge --result failed`, the
  integration test's own path, so it is counted as one);
- `human-review`: the human's review on the pull request: "request changes" rejects the task with
  the review's text (and its line comments as review notes), an approval is the human's vote
  toward the review quorum. The forge's review id goes in the history, so a replay, a restart or
  a second bridge never takes one review twice."""
from __future__ import annotations

from dataclasses import dataclass

from gitliza.core import quorum
from gitliza.core.forgerules import REVIEW_NOTE, taken, waits_for_checks
from gitliza.core.model import ReviewVote
from gitliza.core.ops.base import (Ctx, Op, check_sha, free_agent, need_text, register_op,
                                   replace)
from gitliza.core.states import HUMAN_ACTOR, TaskState
from gitliza.errors import ValidationError

S = TaskState


@register_op
@dataclass(frozen=True, kw_only=True)
class ForgeLink(Op):
    NAME = "forge-link"
    task: str
    number: int

    def run(self, ctx: Ctx) -> None:
        ctx.allowed()
        t = ctx.require_task(self.task)
        if isinstance(self.number, bool) or not 0 < self.number < 2**31:
            raise ValidationError(f"a pull request number must be positive, got {self.number!r}")
        if t.forge_pr == self.number:
            ctx.summary = f"forge-link {t.id}: #{self.number} already"
            return
        if t.forge_pr is not None:
            raise ValidationError(f"{t.id} already has pull request #{t.forge_pr}: one per task")
        ctx.put_task(replace(t, forge_pr=self.number,
                             history=ctx.history(t, "forge_linked", agent=self.actor,
                                                 note=f"pull request #{self.number}")))
        ctx.summary = f"forge-link {t.id}: pull request #{self.number}"


@register_op
@dataclass(frozen=True, kw_only=True)
class ForgeChecks(Op):
    NAME = "forge-checks"
    task: str
    commit: str

    def run(self, ctx: Ctx) -> None:
        ctx.allowed()
        t = ctx.require_task(self.task)
        check_sha(self.commit, "checked commit")
        if t.status != S.APPROVED or self.commit != t.review_commit:
            raise ValidationError(f"{t.id} is {t.status} at {str(t.review_commit)[:12]}: its "
                                  f"checks on {self.commit[:12]} gate nothing")
        if not waits_for_checks(ctx.board.config, t):
            ctx.summary = f"forge-checks {t.id}: passed already"
            return
        ctx.put_task(replace(t, checks_passed=self.commit,
                             history=ctx.history(t, "checks_passed", agent=self.actor,
                                                 commit=self.commit)))
        ctx.summary = f"forge-checks {t.id}: the required checks passed on {self.commit[:12]}"


@register_op
@dataclass(frozen=True, kw_only=True)
class HumanReview(Op):
    NAME = "human-review"
    task: str
    verdict: str  # approve | reject
    commit: str
    review: int  # the forge's review id: taken once
    reason: str | None = None

    def run(self, ctx: Ctx) -> None:
        t = ctx.require_task(self.task)
        if self.verdict not in ("approve", "reject"):
            raise ValidationError(f"verdict must be approve or reject, got {self.verdict!r}")
        reject = self.verdict == "reject"
        votes = quorum.votes_of(t) + (ReviewVote(agent=HUMAN_ACTOR, commit=self.commit,
                                                 time=self.time),)
        need = quorum.required(ctx.board.config, t)
        done = len(votes) >= need
        ctx.transition(t, S.REJECTED if reject else S.APPROVED if done else S.READY_FOR_REVIEW,
                       reason=self.reason if reject else None)
        check_sha(self.commit, "reviewed commit")
        if taken(t, self.review):
            raise ValidationError(f"forge review {self.review} is on the board already")
        if self.commit != t.review_commit:
            raise ValidationError(f"reviewed commit {self.commit[:12]} is not {t.id}'s "
                                  f"review_commit {str(t.review_commit)[:12]}")
        note = f"{REVIEW_NOTE}{self.review}"
        if reject:
            reason = need_text(self.reason, "a rejection reason").strip()
            for agent in quorum.reviewers(t):  # the human's word ends every review in progress
                free_agent(ctx, t, agent)
            ctx.put_task(replace(
                t, status=S.REJECTED, rejection_reason=reason, reviewing_by=None,
                review_lease_expires=None, co_reviews=(), review_votes=(), checks_passed=None,
                approved_by=None, review_cycles_current=t.review_cycles_current + 1,
                review_cycles_total=t.review_cycles_total + 1,
                history=ctx.history(t, "rejected", agent=HUMAN_ACTOR, commit=self.commit,
                                    reason=reason, note=note)))
            return
        if any(v.agent == HUMAN_ACTOR for v in quorum.votes_of(t)):
            raise ValidationError(f"the human already approved {t.id} at {self.commit[:12]}")
        if not done:
            ctx.put_task(replace(t, review_votes=votes,
                                 history=ctx.history(t, "vote", agent=HUMAN_ACTOR,
                                                     commit=self.commit, note=note)))
            ctx.summary = f"human-review {t.id}: the human's approval, {len(votes)} of {need}"
            return
        for agent in quorum.reviewers(t) + ((t.assigned_to,) if t.assigned_to else ()):
            free_agent(ctx, t, agent)
        ctx.put_task(replace(t, status=S.APPROVED, approved_by=HUMAN_ACTOR, review_votes=votes,
                             reviewing_by=None, review_lease_expires=None, co_reviews=(),
                             history=ctx.history(t, "approved", agent=HUMAN_ACTOR,
                                                 commit=self.commit, note=note)))
