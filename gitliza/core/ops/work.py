"""Coder and reviewer ops: claim, heartbeat, release, block, submit, claim-review, verdict, merge,
handoff. The git side (worktrees, the clean-sync check, the merge itself) is done by the shell
before the op is applied; the op records what it produced (worktree, base_commit, review_commit,
merge_commit) so that replay needs nothing but the board."""
from __future__ import annotations

from dataclasses import dataclass

from gitliza.core import clock
from gitliza.core.board import journal_key
from gitliza.core.model import Agent, Anomaly, CBStatus, Handoff, Task
from gitliza.core.ops.base import (Ctx, Op, check_sha, free_agent, need_text, register_op,
                                   replace, require_goal_open)
from gitliza.core.states import AgentState, Role, TaskState
from gitliza.errors import IllegalTransition, LeaseLost, PermissionDenied, ValidationError

S = TaskState
A = AgentState
STAND_DOWN = "stand down: stop work on it and exit (42)"


def worktree_path(task_id: str) -> str:
    return f".worktrees/{task_id}"


def deps_unmerged(ctx: Ctx, task: Task) -> list[str]:
    out = []
    for dep in task.depends_on:
        d = ctx.task(dep)
        if d is None or d.status != S.MERGED:
            out.append(dep)
    return out


def lease_seconds(ctx: Ctx, task: Task | None) -> int:
    """The lease length for work on `task`: its override, else the board's config."""
    if task is not None and task.lease_duration_override is not None:
        return task.lease_duration_override
    return int(ctx.board.config.lease_duration)


def lease_live(expires: str | None, now: str) -> bool:
    return expires is not None and expires > now


def add_anomaly(ctx: Ctx, type_: str, task: str | None, **details: str | int | bool) -> None:
    # Canonical order like `anomaly` (the details every such entry ever had were already sorted,
    # so this changes no existing bytes; it keeps doctor's legacy check free of false alarms).
    from gitliza.core.ops.journal import canonical_details  # the journal ops, only when needed

    entry = Anomaly(timestamp=ctx.op.time, type=type_, reporter=ctx.op.actor, task=task,
                    details=canonical_details(tuple(details.items())))
    ctx.put("anomalies", journal_key(entry, ctx.op.time), entry)


def with_failed(task: Task, coder: str | None) -> tuple[str, ...]:
    if coder is None or coder in task.failed_by:
        return task.failed_by
    return task.failed_by + (coder,)


def block_fields(ctx: Ctx, t: Task, reason: str, questions: tuple[str, ...],
                 failed_by: tuple[str, ...]) -> Task:
    """Move `t` to BLOCKED; two distinct failed coders make it hypothesis exhaustion."""
    if len(failed_by) >= 2 and len(t.failed_by) < 2:
        add_anomaly(ctx, "hypothesis_exhaustion", t.id, coders=", ".join(failed_by))
        reason = f"Two coders failed ({', '.join(failed_by)}): hypothesis exhaustion. {reason}"
        questions = questions + ("Should the task be rescoped or split?",)
    blocked: Task = replace(
        t, status=S.BLOCKED, blocked_reason=reason, blocked_questions=questions[:3],
        failed_by=failed_by, lease_expires=None, reviewing_by=None, review_lease_expires=None,
        history=ctx.history(t, "blocked", agent=ctx.op.actor, reason=reason))
    return blocked


def holds_live(ctx: Ctx, me: Agent) -> bool:
    """Whether `me` still holds its current task with a live lease. An agent whose lease expired
    (or was taken over) is WORKING/REVIEWING on the board until it acts again; it must be able to
    start over rather than be stuck behind a hold it no longer has."""
    t = ctx.task(me.current_task) if me.current_task else None
    if t is None:
        return False
    if me.status == A.WORKING:
        return t.status == S.CLAIMED and t.assigned_to == me.id and \
            lease_live(t.lease_expires, ctx.op.time)
    if me.status == A.REVIEWING:
        return t.status == S.READY_FOR_REVIEW and t.reviewing_by == me.id and \
            lease_live(t.review_lease_expires, ctx.op.time)
    return me.status in (A.WAITING, A.HANDOFF)


def drop_stale_review(ctx: Ctx, me: Agent) -> None:
    """A reviewer starting over lets go of its expired review lease, so the task is reviewable."""
    t = ctx.task(me.current_task) if me.current_task else None
    if me.status == A.REVIEWING and t is not None and t.reviewing_by == me.id:
        ctx.put_task(replace(t, reviewing_by=None, review_lease_expires=None))


def holder_check(ctx: Ctx, t: Task, what: str) -> Agent:
    """The actor must be the coder holding `t` with a live lease; otherwise it must stand down."""
    me = ctx.require_agent()
    if t.status == S.CLAIMED and t.assigned_to != me.id:
        raise LeaseLost(f"{t.id} is claimed by {t.assigned_to}, not {me.id}: {STAND_DOWN}")
    if t.status == S.CLAIMED and not lease_live(t.lease_expires, ctx.op.time):
        raise LeaseLost(f"{me.id}'s lease on {t.id} expired at {t.lease_expires}; cannot {what}: "
                        f"{STAND_DOWN}")
    return me


@register_op
@dataclass(frozen=True, kw_only=True)
class Claim(Op):
    NAME = "claim"
    task: str
    worktree: str
    base_commit: str

    def run(self, ctx: Ctx) -> None:
        t = ctx.require_task(self.task)
        me = ctx.require_agent()
        require_goal_open(ctx)
        now = self.time
        trig = ctx.board.circuit_breaker.current_trigger
        if ctx.board.circuit_breaker.status == CBStatus.TRIGGERED:
            # circuit-breaker.md: work halts until the human resolves the trigger.
            raise IllegalTransition(
                f"claim {t.id}: the circuit breaker is TRIGGERED"
                + (f" ({trig.pattern}, {trig.severity})" if trig is not None else "")
                + "; no new work until the human resolves it",
                hint="`git liza analyze --resolve TEXT` once the pattern is dealt with")
        if t.status == S.CLAIMED and lease_live(t.lease_expires, now):
            ctx.transition(t, S.CLAIMED)  # role check first, so a planner gets the right message
            who = "you" if t.assigned_to == me.id else t.assigned_to
            raise IllegalTransition(f"{t.id} is already claimed by {who} "
                                    f"(lease until {t.lease_expires})")
        ctx.transition(t, S.CLAIMED)
        if me.current_task not in (None, t.id) and holds_live(ctx, me):
            raise ValidationError(f"{me.id} is {me.status} on {me.current_task}; "
                                  "finish or release it first")
        if me.id in t.failed_by:
            raise ValidationError(f"{me.id} already failed {t.id}; another coder must take it")
        missing = deps_unmerged(ctx, t)
        if missing:
            raise ValidationError(f"{t.id} is not claimable: waiting for {', '.join(missing)} "
                                  "to be MERGED")
        if self.worktree != worktree_path(t.id):
            raise ValidationError(f"worktree must be {worktree_path(t.id)}, got {self.worktree!r}")
        check_sha(self.base_commit, "base_commit")

        same_coder = t.assigned_to == me.id
        previous = None if same_coder else t.assigned_to
        # A coder that handed off (context exhaustion) did not fail the task: its successor
        # continues the same hypothesis from the handoff notes.
        failed = t.failed_by if t.handoff_pending else with_failed(t, previous)
        if previous is not None:
            free_agent(ctx, t, previous)
            ctx.notices.append(f"{previous} lost {t.id} to {me.id}: it must stand down")
        iteration = (t.iteration or 0) + 1 if same_coder else 1
        limit = t.max_iterations or ctx.board.config.max_coder_iterations
        if len(failed) >= 2 and len(t.failed_by) < 2:
            ctx.transition(t, S.BLOCKED)
            ctx.put_task(block_fields(ctx, replace(t, assigned_to=None), "reassignment refused",
                                      (f"Why did {', '.join(failed)} fail on {t.id}?",), failed))
            ctx.notices.append(f"{t.id} moved to BLOCKED (hypothesis exhaustion); not claimed")
            return
        if same_coder and iteration > limit:
            ctx.transition(t, S.BLOCKED)
            add_anomaly(ctx, "retry_loop", t.id, count=iteration - 1,
                        error_pattern=t.rejection_reason or t.integration_failure or "unknown")
            free_agent(ctx, t, me.id)
            ctx.put_task(block_fields(
                ctx, t, f"max_coder_iterations ({limit}) reached",
                (f"What should change so {t.id} can pass review?",), with_failed(t, me.id)))
            ctx.notices.append(f"{t.id} moved to BLOCKED (max_coder_iterations); not claimed")
            return

        expires = clock.plus(now, lease_seconds(ctx, t))
        event = "claimed" if previous is None or t.status != S.CLAIMED else "reclaimed"
        ctx.put_task(replace(
            t, status=S.CLAIMED, assigned_to=me.id, worktree=self.worktree,
            base_commit=self.base_commit, lease_expires=expires, iteration=iteration,
            review_cycles_current=t.review_cycles_current if same_coder else 0,
            reviewing_by=None, review_lease_expires=None, approved_by=None,
            integration_fix=t.integration_fix or t.status == S.INTEGRATION_FAILED,
            handoff_pending=False, failed_by=failed,
            history=ctx.history(t, event, agent=me.id)))
        ctx.put_agent(replace(me, status=A.WORKING, current_task=t.id, lease_expires=expires,
                              heartbeat=now, iterations_total=me.iterations_total + 1))


@register_op
@dataclass(frozen=True, kw_only=True)
class Heartbeat(Op):
    NAME = "heartbeat"
    # The task the agent believes it holds. An agent whose claim was taken over, or dropped by a
    # sync with another machine, is IDLE on the board; naming the task turns that into LeaseLost.
    task: str | None = None
    # A pending handoff stays pending until the agent that continues the task was given it (in
    # its prompt); such a heartbeat then clears it. False is format 1's behaviour (any heartbeat
    # cleared it), which replay of older boards needs.
    keep_handoff: bool = False

    def run(self, ctx: Ctx) -> None:
        me = ctx.require_agent()
        if self.task is not None and (me.current_task != self.task or me.status not in (
                A.WORKING, A.REVIEWING, A.HANDOFF, A.WAITING)):
            raise LeaseLost(f"{me.id} does not hold {self.task} (it is {me.status}"
                            + (f" on {me.current_task}" if me.current_task else "")
                            + f"): {STAND_DOWN}")
        now = self.time
        t = ctx.task(me.current_task) if me.current_task else None
        expires = clock.plus(now, lease_seconds(ctx, t))
        if t is not None and me.status in (A.WORKING, A.HANDOFF) and t.status == S.CLAIMED:
            holder_check(ctx, t, "heartbeat")
            ctx.put_task(replace(t, lease_expires=expires,
                                 handoff_pending=t.handoff_pending and self.keep_handoff))
            ctx.put_agent(replace(me, status=A.WORKING, lease_expires=expires, heartbeat=now))
        elif t is not None and me.status == A.REVIEWING and t.status == S.READY_FOR_REVIEW:
            if t.reviewing_by != me.id or not lease_live(t.review_lease_expires, now):
                raise LeaseLost(f"{me.id}'s review lease on {t.id} is gone: {STAND_DOWN}")
            ctx.put_task(replace(t, review_lease_expires=expires))
            ctx.put_agent(replace(me, lease_expires=expires, heartbeat=now))
        elif me.status in (A.WORKING, A.REVIEWING):
            raise LeaseLost(f"{me.id} no longer holds {me.current_task}: {STAND_DOWN}")
        else:
            ctx.put_agent(replace(me, heartbeat=now))
        if t is not None:
            ctx.task_id = t.id
        ctx.summary = f"heartbeat {me.id}" + (f" on {t.id}" if t is not None else "")


@register_op
@dataclass(frozen=True, kw_only=True)
class Release(Op):
    NAME = "release"
    task: str

    def run(self, ctx: Ctx) -> None:
        t = ctx.require_task(self.task)
        ctx.transition(t, S.UNCLAIMED)
        me = holder_check(ctx, t, "release it")
        ctx.put_task(replace(t, status=S.UNCLAIMED, assigned_to=None, worktree=None,
                             base_commit=None, lease_expires=None,
                             history=ctx.history(t, "released", agent=me.id)))
        ctx.put_agent(replace(me, status=A.IDLE, current_task=None, lease_expires=None,
                              heartbeat=self.time))


@register_op
@dataclass(frozen=True, kw_only=True)
class Block(Op):
    NAME = "block"
    task: str
    reason: str
    questions: tuple[str, ...]
    attempted: tuple[str, ...] = ()

    def run(self, ctx: Ctx) -> None:
        t = ctx.require_task(self.task)
        need_text(self.reason, "reason")
        if not 1 <= len(self.questions) <= 3:
            raise ValidationError("block needs 1 to 3 questions that would unblock the task")
        for q in self.questions:
            need_text(q, "question")
        ctx.transition(t, S.BLOCKED, reason=self.reason)
        failed = t.failed_by
        if ctx.role() == Role.CODER:
            me = holder_check(ctx, t, "block it")
            failed = with_failed(t, me.id)
        free_agent(ctx, t, t.assigned_to)
        ctx.put_task(replace(block_fields(ctx, t, self.reason, self.questions, failed),
                             attempted=t.attempted + self.attempted))


@register_op
@dataclass(frozen=True, kw_only=True)
class Submit(Op):
    NAME = "submit"
    task: str
    commit: str

    def run(self, ctx: Ctx) -> None:
        t = ctx.require_task(self.task)
        ctx.transition(t, S.READY_FOR_REVIEW)
        me = holder_check(ctx, t, "submit")
        check_sha(self.commit, "review commit")
        ctx.put_task(replace(t, status=S.READY_FOR_REVIEW, review_commit=self.commit,
                             lease_expires=None, reviewing_by=None, review_lease_expires=None,
                             handoff_pending=False,
                             history=ctx.history(t, "ready_for_review", agent=me.id,
                                                 commit=self.commit)))
        ctx.put_agent(replace(me, status=A.WAITING, lease_expires=None, heartbeat=self.time))


@register_op
@dataclass(frozen=True, kw_only=True)
class ClaimReview(Op):
    NAME = "claim-review"
    task: str

    def run(self, ctx: Ctx) -> None:
        t = ctx.require_task(self.task)
        ctx.transition(t, S.READY_FOR_REVIEW)
        me = ctx.require_agent()
        if me.id == t.assigned_to or me.id in t.failed_by:
            raise PermissionDenied(f"{me.id} wrote {t.id} and cannot review it")
        if t.reviewing_by is not None and lease_live(t.review_lease_expires, self.time):
            who = "you" if t.reviewing_by == me.id else t.reviewing_by
            raise IllegalTransition(f"{t.id} is already being reviewed by {who} "
                                    f"(lease until {t.review_lease_expires})")
        if me.status != A.IDLE and holds_live(ctx, me):
            raise ValidationError(f"{me.id} is {me.status} on {me.current_task}; finish it first")
        if me.current_task != t.id:
            drop_stale_review(ctx, me)
        if t.reviewing_by is not None and t.reviewing_by != me.id:
            free_agent(ctx, t, t.reviewing_by)
            ctx.notices.append(f"{t.reviewing_by}'s review lease on {t.id} had expired: "
                               "it must stand down")
        expires = clock.plus(self.time, lease_seconds(ctx, t))
        ctx.put_task(replace(t, reviewing_by=me.id, review_lease_expires=expires,
                             history=ctx.history(t, "review_claimed", agent=me.id)))
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

    def run(self, ctx: Ctx) -> None:
        t = ctx.require_task(self.task)
        if self.verdict not in ("approve", "reject"):
            raise ValidationError(f"verdict must be approve or reject, got {self.verdict!r}")
        approve = self.verdict == "approve"
        cycles = t.review_cycles_current + (0 if approve else 1)
        limit = t.max_review_cycles or ctx.board.config.max_review_cycles
        target = S.APPROVED if approve else (S.BLOCKED if cycles >= limit else S.REJECTED)
        ctx.transition(t, target, reason=self.reason)
        me = ctx.require_agent()
        if me.id == t.assigned_to:
            raise PermissionDenied(f"{me.id} wrote {t.id} and cannot give it a verdict")
        if t.reviewing_by != me.id:
            if t.reviewing_by is None:
                raise ValidationError(f"{t.id} has no review lease",
                                      hint=f"`git liza claim-review {t.id}` first")
            raise LeaseLost(f"{t.id} is being reviewed by {t.reviewing_by}, not {me.id}: "
                            f"{STAND_DOWN}")
        if not lease_live(t.review_lease_expires, self.time):
            raise LeaseLost(f"{me.id}'s review lease on {t.id} expired at "
                            f"{t.review_lease_expires}: {STAND_DOWN}")
        check_sha(self.commit, "reviewed commit")
        if self.commit != t.review_commit:
            raise ValidationError(f"reviewed commit {self.commit[:12]} is not {t.id}'s "
                                  f"review_commit {str(t.review_commit)[:12]}")
        if not approve:
            need_text(self.reason, "a rejection reason")
        ctx.put_agent(replace(me, status=A.IDLE, current_task=None, lease_expires=None,
                              heartbeat=self.time))
        base = replace(t, reviewing_by=None, review_lease_expires=None)
        if approve:
            free_agent(ctx, t, t.assigned_to)
            ctx.put_task(replace(base, status=S.APPROVED, approved_by=me.id,
                                 history=ctx.history(t, "approved", agent=me.id,
                                                     commit=self.commit)))
            return
        assert self.reason is not None
        base = replace(base, rejection_reason=self.reason, review_cycles_current=cycles,
                       review_cycles_total=t.review_cycles_total + 1,
                       history=ctx.history(t, "rejected", agent=me.id, commit=self.commit,
                                           reason=self.reason))
        if target == S.REJECTED:
            ctx.put_task(replace(base, status=S.REJECTED))
            return
        add_anomaly(ctx, "review_deadlock", t.id, cycles=cycles)
        free_agent(ctx, t, t.assigned_to)
        ctx.put_task(block_fields(ctx, base, f"review deadlock: {cycles} review cycles without "
                                  f"approval (max_review_cycles {limit})",
                                  ("Is the done_when achievable as specified?",),
                                  with_failed(t, t.assigned_to)))
        ctx.notices.append(f"{t.id} moved to BLOCKED (review deadlock)")


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
            ctx.put_task(replace(t, status=S.MERGED, merge_commit=self.merge_commit,
                                 worktree=None, integration_failure=None,
                                 history=ctx.history(t, "merged", agent=self.actor,
                                                     commit=self.merge_commit)))
        else:
            need_text(self.reason, "an integration failure reason")
            ctx.put_task(replace(t, status=S.INTEGRATION_FAILED, integration_failure=self.reason,
                                 history=ctx.history(t, "integration_failed", agent=self.actor,
                                                     reason=self.reason)))


@register_op
@dataclass(frozen=True, kw_only=True)
class HandoffOp(Op):
    NAME = "handoff"
    task: str
    summary: str
    next_action: str
    context_used: str | None = None
    approach: str | None = None
    blockers: str | None = None
    files_modified: tuple[str, ...] = ()
    next_steps: tuple[str, ...] = ()

    def run(self, ctx: Ctx) -> None:
        t = ctx.require_task(self.task)
        me = ctx.require_agent()
        need_text(self.summary, "summary", 200)
        need_text(self.next_action, "next_action", 200)
        if t.status != S.CLAIMED:
            raise IllegalTransition(f"handoff {t.id}: task is {t.status}; handoff is for CLAIMED")
        holder_check(ctx, t, "hand it off")
        ctx.task_id = t.id
        ctx.put("handoff", t.id, Handoff(
            task=t.id, agent=me.id, timestamp=self.time, summary=self.summary,
            next_action=self.next_action, context_used=self.context_used, approach=self.approach,
            blockers=self.blockers, files_modified=self.files_modified,
            next_steps=self.next_steps))
        ctx.put_task(replace(t, handoff_pending=True,
                             history=ctx.history(t, "handoff", agent=me.id, note=self.summary)))
        ctx.put_agent(replace(me, status=A.HANDOFF, heartbeat=self.time))
