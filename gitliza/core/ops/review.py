"""Reviewer ops and the merge record: claim-review, verdict (approve, reject, or a review deadlock
that blocks the task), merge (MERGED or INTEGRATION_FAILED). The merge itself is done by the shell
before the op is applied; the op records the merge commit so that replay needs nothing but the
board."""
from __future__ import annotations

from dataclasses import dataclass

from gitliza.core import clock, quorum
from gitliza.core.forgerules import forge_merges, waits_for_checks
from gitliza.core.model import Config, Evidence, ReviewVote, Task
from gitliza.core.ops.base import (Ctx, Op, check_sha, free_agent, need_text, register_op,
                                   replace)
from gitliza.core.ops.fleetrules import machine_rules
from gitliza.core.ops.blocking import add_anomaly, block_fields, with_failed
from gitliza.core.presence.leasemarks import REVIEW
from gitliza.core.ops.leases import (STAND_DOWN, drop_stale_review, holds_live, judge_takeover,
                                     lease_live, lease_seconds)
from gitliza.core.states import HUMAN_ACTOR, AgentState, TaskState
from gitliza.errors import (AlreadyHeld, IllegalTransition, LeaseLost, PermissionDenied,
                            ValidationError)

S = TaskState
A = AgentState


@register_op
@dataclass(frozen=True, kw_only=True)
class ClaimReview(Op):
    NAME = "claim-review"
    task: str
    # As Claim.takeover, for the review lease (core/presence/leasemarks.py).
    takeover: str | None = None

    def run(self, ctx: Ctx) -> None:
        t = ctx.require_task(self.task)
        ctx.transition(t, S.READY_FOR_REVIEW)
        me = ctx.require_agent()
        if me.id == t.assigned_to or me.id in t.failed_by:
            raise PermissionDenied(f"{me.id} wrote {t.id} and cannot review it")
        if me.current_task != t.id:  # a review it holds already, it finishes
            machine_rules(ctx, me.id, t, "claim-review", needs=False)
        if any(v.agent == me.id for v in quorum.votes_of(t)):
            raise ValidationError(f"{me.id} already approved {t.id} at "
                                  f"{str(t.review_commit)[:12]}: another reviewer must")
        t = _drop_expired_co_reviews(ctx, t)
        if me.id in (r.agent for r in t.co_reviews):
            raise IllegalTransition(f"{t.id} is already being reviewed by you (lease until "
                                    f"{quorum.review_lease(t, me.id)})")
        other = t.reviewing_by not in (None, me.id)
        # Under a quorum short of reviewers, a lease beside the others': it takes over none.
        beside = other and quorum.room(ctx.board.config, t, me.id)
        if beside:
            pass
        elif other and judge_takeover(ctx, t, REVIEW, self.takeover):
            pass  # the takeover's own evidence decided (it raises when refused)
        elif t.reviewing_by is not None and lease_live(t.review_lease_expires, self.time):
            who = "you" if t.reviewing_by == me.id else t.reviewing_by
            raise AlreadyHeld(f"{t.id} is already being reviewed by {who} (lease until "
                              f"{t.review_lease_expires})", task=t.id, holder=t.reviewing_by)
        if me.status != A.IDLE and holds_live(ctx, me):
            raise ValidationError(f"{me.id} is {me.status} on {me.current_task}; finish it first")
        if me.current_task != t.id:
            drop_stale_review(ctx, me)
        if t.reviewing_by is not None and t.reviewing_by != me.id and not beside:
            free_agent(ctx, t, t.reviewing_by)
            ctx.notices.append(f"{t.reviewing_by}'s review lease on {t.id} had expired: "
                               "it must stand down")
        expires = clock.plus(self.time, lease_seconds(ctx, t))
        held = quorum.with_review_lease(t, me.id, expires) if beside else \
            replace(t, reviewing_by=me.id, review_lease_expires=expires)
        ctx.put_task(replace(held, history=ctx.history(t, "review_claimed", agent=me.id)))
        ctx.put_agent(replace(me, status=A.REVIEWING, current_task=t.id, lease_expires=expires,
                              heartbeat=self.time))


@register_op
@dataclass(frozen=True, kw_only=True)
class Verdict(Op):
    NAME = "verdict"
    task: str
    verdict: str
    commit: str
    reason: str | None = None
    # Issue 40 (core/quorum.py): the verdict is a vote toward the review quorum, with the
    # acceptance evidence and the root-cause gate. The command layer always sets it; a verdict
    # written before it existed replays as it was (one approval approves, nothing recorded).
    counted: bool = False
    # The reviewer's agent CLI and model, as its supervisor recorded them (the broker's
    # environment, never the agent's word), and the evidence per acceptance criterion.
    cli: str | None = None
    model: str | None = None
    evidence: tuple[Evidence, ...] = ()

    def run(self, ctx: Ctx) -> None:
        t = ctx.require_task(self.task)
        if self.verdict not in ("approve", "reject"):
            raise ValidationError(f"verdict must be approve or reject, got {self.verdict!r}")
        approve = self.verdict == "approve"
        config = ctx.board.config
        if not self.counted and _needs_count(config, t):
            raise ValidationError(f"{t.id}'s review has a quorum, evidence or diversity rule: "
                                  "an uncounted verdict cannot decide it")
        need = quorum.required(config, t) if self.counted else 1
        votes = quorum.votes_of(t) if self.counted else ()
        cycles = t.review_cycles_current + (0 if approve else 1)
        limit = t.max_review_cycles or config.max_review_cycles
        rca = not approve and self.counted and \
            t.review_cycles_total + 1 - t.root_cause_at >= config.rca_after_rejections
        if approve:
            target = S.APPROVED if len(votes) + 1 >= need else S.READY_FOR_REVIEW
        else:
            target = S.BLOCKED if cycles >= limit or rca else S.REJECTED
        ctx.transition(t, target, reason=self.reason)
        me = ctx.require_agent()
        if me.id == t.assigned_to:
            raise PermissionDenied(f"{me.id} wrote {t.id} and cannot give it a verdict")
        mine = quorum.review_lease(t, me.id)
        if mine is None:
            if not quorum.reviewers(t):
                raise ValidationError(f"{t.id} has no review lease",
                                      hint=f"`git liza claim-review {t.id}` first")
            raise LeaseLost(f"{t.id} is being reviewed by {', '.join(quorum.reviewers(t))}, "
                            f"not {me.id}: {STAND_DOWN}")
        if not lease_live(mine, self.time):
            raise LeaseLost(f"{me.id}'s review lease on {t.id} expired at "
                            f"{mine}: {STAND_DOWN}")
        check_sha(self.commit, "reviewed commit")
        if self.commit != t.review_commit:
            raise ValidationError(f"reviewed commit {self.commit[:12]} is not {t.id}'s "
                                  f"review_commit {str(t.review_commit)[:12]}")
        if not approve:
            need_text(self.reason, "a rejection reason")
        if approve and self.counted:
            quorum.check_vote(config, t, me.id, self.cli, self.model)
            quorum.check_evidence(t, self.evidence)
        elif self.evidence:
            raise ValidationError("evidence goes with an approval")
        ctx.put_agent(replace(me, status=A.IDLE, current_task=None, lease_expires=None,
                              heartbeat=self.time))
        base = quorum.with_review_lease(t, me.id, None)
        if target != S.READY_FOR_REVIEW and quorum.reviewers(base):
            _free_co_reviewers(ctx, base)  # the review is over for everyone
            base = replace(base, reviewing_by=None, review_lease_expires=None, co_reviews=())
        if approve:
            if self.counted:
                votes += (ReviewVote(agent=me.id, commit=self.commit, time=self.time,
                                     cli=self.cli, model=self.model, evidence=self.evidence),)
            _approve(ctx, base, t, target == S.APPROVED, need, votes)
            return
        assert self.reason is not None
        base = replace(base, rejection_reason=self.reason, review_cycles_current=cycles,
                       review_cycles_total=t.review_cycles_total + 1, review_votes=(),
                       history=ctx.history(t, "rejected", agent=me.id, commit=self.commit,
                                           reason=self.reason))
        if target == S.REJECTED:
            ctx.put_task(replace(base, status=S.REJECTED))
            return
        free_agent(ctx, t, t.assigned_to)
        if rca and cycles < limit:
            # The root-cause gate (ADR-0145 upstream): the same task rejected again and again is
            # a planning problem, not a coding one; nobody codes it until someone says why.
            n = base.review_cycles_total - t.root_cause_at
            ctx.put_task(replace(block_fields(
                ctx, base, f"root cause needed: {n} rejections (rca_after_rejections "
                f"{config.rca_after_rejections})",
                ("Why does this task keep failing review? Record it: "
                 f"`git liza root-cause {t.id} NOTE`",), t.failed_by), needs_root_cause=True))
            ctx.notices.append(f"{t.id} moved to BLOCKED (root cause needed)")
            return
        add_anomaly(ctx, "review_deadlock", t.id, cycles=cycles)
        ctx.put_task(block_fields(ctx, base, f"review deadlock: {cycles} review cycles without "
                                  f"approval (max_review_cycles {limit})",
                                  ("Is the done_when achievable as specified?",),
                                  with_failed(t, t.assigned_to)))
        ctx.notices.append(f"{t.id} moved to BLOCKED (review deadlock)")


def _drop_expired_co_reviews(ctx: Ctx, t: Task) -> Task:
    """The task without the leases beside the first whose time is up (judged by the op's time);
    their reviewers stand down."""
    gone = [r for r in t.co_reviews if not lease_live(r.expires, ctx.op.time)]
    for r in gone:
        free_agent(ctx, t, r.agent)
        ctx.notices.append(f"{r.agent}'s review lease on {t.id} had expired: it must stand down")
    return replace(t, co_reviews=tuple(r for r in t.co_reviews if r not in gone)) if gone else t


def _free_co_reviewers(ctx: Ctx, t: Task) -> None:
    """A verdict that ends the review (a rejection, the approval that reaches the quorum) ends
    the other reviewers' leases too: they stand down."""
    for agent in quorum.reviewers(t):
        if agent != ctx.op.actor:
            free_agent(ctx, t, agent)
            ctx.notices.append(f"{agent}'s review of {t.id} ended with this verdict: it must "
                               "stand down")


def _needs_count(config: Config, t: Task) -> bool:
    """A board or task with an issue-40 rule takes counted verdicts only (a verdict without the
    flag would skip the quorum, the evidence and the diversity)."""
    return config.review_quorum > 1 or bool(config.quorum_rules) or \
        config.review_diversity != "off" or bool(t.criteria) or bool(t.review_votes)


def _approve(ctx: Ctx, base: Task, t: Task, done: bool, need: int,
             votes: tuple[ReviewVote, ...]) -> None:
    me = ctx.op.actor
    if not done:
        ctx.put_task(replace(base, review_votes=votes,
                             history=ctx.history(t, "vote", agent=me, commit=t.review_commit,
                                                 note=f"approval {len(votes)} of {need}")))
        ctx.summary = f"verdict {t.id}: approval {len(votes)} of {need} by {me}"
        return
    free_agent(ctx, t, t.assigned_to)
    ctx.put_task(replace(base, status=S.APPROVED, approved_by=me, review_votes=votes,
                         history=ctx.history(t, "approved", agent=me, commit=t.review_commit)))


@register_op
@dataclass(frozen=True, kw_only=True)
class RootCause(Op):
    """The planner's or the human's root-cause note on a BLOCKED task (the gate after
    `rca_after_rejections` rejections, or any block): recorded, the task goes back to UNCLAIMED
    as `unblock` does, and the next coder's prompt carries the note."""

    NAME = "root-cause"
    task: str
    note: str

    def run(self, ctx: Ctx) -> None:
        t = ctx.require_task(self.task)
        ctx.transition(t, S.UNCLAIMED)
        need_text(self.note, "a root-cause note")
        ctx.put_task(replace(t, status=S.UNCLAIMED, blocked_reason=None, blocked_questions=(),
                             assigned_to=None, worktree=None, base_commit=None,
                             lease_expires=None, root_cause=self.note.strip(),
                             root_cause_at=t.review_cycles_total, needs_root_cause=False,
                             history=ctx.history(t, "root_cause", agent=self.actor,
                                                 note=self.note.strip())))


@register_op
@dataclass(frozen=True, kw_only=True)
class Merge(Op):
    NAME = "merge"
    task: str
    result: str  # "merged" | "failed"
    merge_commit: str | None = None
    reason: str | None = None
    # Integration commits since the task's base when it was merged (wt-merge.sh logs it).
    drift_commits: int | None = None

    def run(self, ctx: Ctx) -> None:
        t = ctx.require_task(self.task)
        if self.result not in ("merged", "failed"):
            raise ValidationError(f"merge result must be merged or failed, got {self.result!r}")
        merged = self.result == "merged"
        ctx.transition(t, S.MERGED if merged else S.INTEGRATION_FAILED, reason=self.reason)
        if merged:
            check_sha(self.merge_commit, "merge commit")
            if waits_for_checks(ctx.board.config, t):  # the forge's gate (docs/forge.md)
                raise ValidationError(f"{t.id} waits for the forge's required checks "
                                      f"({ctx.board.config.forge_required_checks}) on "
                                      f"{str(t.review_commit)[:12]}")
            if forge_merges(ctx.board.config) and self.actor != HUMAN_ACTOR:
                raise ValidationError(f"{t.id} is merged by the forge (forge_merge on): the "
                                      "bridge records the forge's merge commit")
            ctx.put_task(replace(t, status=S.MERGED, merge_commit=self.merge_commit,
                                 worktree=None, integration_failure=None,
                                 history=ctx.history(t, "merged", agent=self.actor,
                                                     commit=self.merge_commit)))
        else:
            need_text(self.reason, "an integration failure reason")
            for agent in quorum.reviewers(t):  # in review (a forge check failed): no review left
                free_agent(ctx, t, agent)
            ctx.put_task(replace(t, status=S.INTEGRATION_FAILED, integration_failure=self.reason,
                                 reviewing_by=None, review_lease_expires=None, co_reviews=(),
                                 history=ctx.history(t, "integration_failed", agent=self.actor,
                                                     reason=self.reason)))
