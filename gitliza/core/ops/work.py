"""Coder ops: claim, heartbeat, release, block, submit, handoff. The git side (worktrees, the
clean-sync check) is done by the shell before the op is applied; the op records what it produced
(worktree, base_commit, review_commit) so that replay needs nothing but the board. The reviewer's
ops are in review.py; the lease and blocking rules both use, in leases.py and blocking.py."""
from __future__ import annotations

from dataclasses import dataclass

from gitliza.core.quorum import review_lease, reviewers, with_review_lease
from gitliza.core import clock, lockscope
from gitliza.core.model import CBStatus, Handoff, Task
from gitliza.core.invariants import reassigned_to
from gitliza.core.ops.base import (Ctx, Op, check_sha, free_agent, need_text, register_op,
                                   replace, require_goal_open)
from gitliza.core.ops.fleetrules import machine_rules
from gitliza.core.ops.blocking import add_anomaly, block_fields, with_failed
from gitliza.core.presence.leasemarks import CLAIM
from gitliza.core.ops.leases import (STAND_DOWN, holder_check, holds_live, judge_takeover,
                                     lease_live, lease_seconds)
from gitliza.core.states import AgentState, Role, TaskState
from gitliza.errors import (AlreadyHeld, IllegalTransition, LeaseLost, NotFound, PermissionDenied,
                            ScopeViolation, ValidationError)

S = TaskState
A = AgentState


def worktree_path(task_id: str) -> str:
    return f".worktrees/{task_id}"


def scope_violation_line(task: str, outside: list[str]) -> str:
    """The one line a submit outside the lock scope is refused with."""
    shown = ", ".join(outside[:10]) + (f" and {len(outside) - 10} more" if len(outside) > 10
                                       else "")
    return f"SCOPE_VIOLATION: {task} changes files outside its lock scope: {shown}"


def deps_unmerged(ctx: Ctx, task: Task) -> list[str]:
    out = []
    for dep in task.depends_on:
        d = ctx.task(dep)
        if d is None or d.status != S.MERGED:
            out.append(dep)
    return out


@register_op
@dataclass(frozen=True, kw_only=True)
class Claim(Op):
    NAME = "claim"
    task: str
    worktree: str
    base_commit: str
    # What the claimer judged on its own clock (core/presence/leasemarks.py): "none" (it takes no one's
    # lease), or the evidence that the holder's lease expired for it. Absent in format 1's claims,
    # which keep their rule: the op's time against the recorded expiry.
    takeover: str | None = None
    # Whether a takeover leaves the previous coder out of failed_by (a crash, a kill,
    # a stand-down and the human's release are no coder's failure). False is format 1's
    # behaviour (the previous coder counted), which replay of older boards needs; every claim
    # gitliza makes records True.
    forgive_faults: bool = False

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
        other = t.status == S.CLAIMED and t.assigned_to not in (None, me.id)
        if other:
            ctx.transition(t, S.CLAIMED)  # role check first, so a planner gets the right message
        if other and judge_takeover(ctx, t, CLAIM, self.takeover):
            pass  # the takeover's own evidence decided (it raises when refused)
        elif t.status == S.CLAIMED and lease_live(t.lease_expires, now):
            ctx.transition(t, S.CLAIMED)  # role check first, so a planner gets the right message
            who = "you" if t.assigned_to == me.id else t.assigned_to
            raise AlreadyHeld(f"{t.id} is already claimed by {who} (lease until "
                              f"{t.lease_expires})", task=t.id, holder=str(t.assigned_to))
        ctx.transition(t, S.CLAIMED)
        machine_rules(ctx, me.id, t, "claim")
        if me.current_task not in (None, t.id) and holds_live(ctx, me):
            raise ValidationError(f"{me.id} is {me.status} on {me.current_task}; "
                                  "finish or release it first")
        if me.id in t.failed_by:
            raise ValidationError(f"{me.id} already failed {t.id}; another coder must take it")
        chosen = reassigned_to(t)
        if chosen not in (None, me.id) and ctx.agent(chosen or "") is not None:
            raise PermissionDenied(f"{t.id} was reassigned to {chosen} by the human: only "
                                   f"{chosen} may claim it",
                                   hint="the human may `git liza reassign` or `release` it again")
        missing = deps_unmerged(ctx, t)
        if missing:
            raise ValidationError(f"{t.id} is not claimable: waiting for {', '.join(missing)} "
                                  "to be MERGED")
        hit = lockscope.holder(ctx.board.tasks(), t.id, t.lock_scope)
        if hit is not None:
            raise ValidationError(f"{t.id} is not claimable: waiting for {hit[0]}, in flight, "
                                  f"whose lock scope ({hit[1]}) overlaps {hit[2]}")
        if self.worktree != worktree_path(t.id):
            raise ValidationError(f"worktree must be {worktree_path(t.id)}, got {self.worktree!r}")
        check_sha(self.base_commit, "base_commit")

        same_coder = t.assigned_to == me.id
        previous = None if same_coder else t.assigned_to
        # A takeover is no verdict on the previous coder: a crash, a kill, a stand-down, an
        # expired lease or the human's release are faults, not failures. Only what the protocol
        # calls failing counts (rejections past the limit, the coder's own block): Block,
        # Verdict and the iteration limit below add to failed_by. (A claim recorded before that
        # rule, without forgive_faults, counted the previous coder: replay reproduces it.)
        failed = t.failed_by if t.handoff_pending or self.forgive_faults \
            else with_failed(t, previous)
        if previous is not None:
            free_agent(ctx, t, previous)
            ctx.notices.append(f"{previous} lost {t.id} to {me.id}: it must stand down")
        iteration = (t.iteration or 0) + 1 if same_coder else 1
        limit = t.max_iterations or ctx.board.config.max_coder_iterations
        if len(failed) >= 2 and len(t.failed_by) < 2:  # only a format-1 claim
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
            if not lease_live(review_lease(t, me.id), now):
                raise LeaseLost(f"{me.id}'s review lease on {t.id} is gone: {STAND_DOWN}")
            ctx.put_task(with_review_lease(t, me.id, expires))
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
        if ctx.role() == Role.HUMAN:
            self._by_human(ctx, t)
            return
        ctx.transition(t, S.UNCLAIMED)
        me = holder_check(ctx, t, "release it")
        ctx.put_task(replace(t, status=S.UNCLAIMED, assigned_to=None, worktree=None,
                             base_commit=None, lease_expires=None,
                             history=ctx.history(t, "released", agent=me.id)))
        ctx.put_agent(replace(me, status=A.IDLE, current_task=None, lease_expires=None,
                              heartbeat=self.time))

    def _by_human(self, ctx: Ctx, t: Task) -> None:
        """The human frees a task whoever holds it: a claimed (or rejected, or failed to
        integrate, or reassigned) task goes back to UNCLAIMED, for any coder, and its coder to
        IDLE; a review lease is dropped (the task stays READY_FOR_REVIEW for another reviewer).
        Recorded as the human's."""
        if t.status == S.READY_FOR_REVIEW:
            held = reviewers(t)
            if not held:
                raise ValidationError(f"{t.id} is READY_FOR_REVIEW and nobody reviews it: "
                                      "nothing to release")
            ctx.transition(t, S.READY_FOR_REVIEW)
            for reviewer in held:
                free_agent(ctx, t, reviewer)
            ctx.put_task(replace(t, reviewing_by=None, review_lease_expires=None, co_reviews=(),
                                 history=ctx.history(t, "review_released",
                                                     agent=ctx.op.actor)))
            ctx.summary = f"release {t.id}: review lease of {', '.join(held)} freed by the human"
            return
        if t.status == S.UNCLAIMED and not t.assigned_to:
            raise ValidationError(f"{t.id} is UNCLAIMED and nobody holds it: nothing to release")
        ctx.transition(t, S.UNCLAIMED)
        free_agent(ctx, t, t.assigned_to)
        ctx.put_task(replace(t, status=S.UNCLAIMED, assigned_to=None, worktree=None,
                             base_commit=None, lease_expires=None,
                             history=ctx.history(t, "released", agent=ctx.op.actor)))
        if t.assigned_to:
            ctx.summary = f"release {t.id}: freed from {t.assigned_to} by the human"


@register_op
@dataclass(frozen=True, kw_only=True)
class Reassign(Op):
    """The human gives a task to coder `to` (GitHub's "assign"). The task waits for that
    coder's claim, without a lease: its supervisor claims it as the spec's supervisor re-claims a
    rejected task for its coder, with a lease of its own, in a worktree on its own machine that
    continues the task's branch. A CLAIMED task goes back to UNCLAIMED for it; a REJECTED or
    INTEGRATION_FAILED one stays in its state. A holder loses the task and stands down (its
    supervisor sees the task go to another coder). The previous coder is not counted as having
    failed the task: the human moved it, no review judged it. The new coder starts at iteration 1
    with the whole review budget (blackboard-schema.md "Reset on Reassign")."""

    NAME = "reassign"
    task: str
    to: str

    def run(self, ctx: Ctx) -> None:
        t = ctx.require_task(self.task)
        # The table first: a coder or a planner is refused here, before anything is looked at.
        ctx.transition(t, S.UNCLAIMED if t.status == S.CLAIMED else t.status)
        require_goal_open(ctx)
        new = ctx.agent(self.to)
        if new is None:
            raise NotFound(f"no agent {self.to!r}",
                           hint="`git liza status` lists the agents; `git liza register ID "
                                "--role coder` adds one")
        if new.role != Role.CODER:
            raise ValidationError(f"{new.id} is a {new.role.value}: {t.id} needs a coder")
        old = t.assigned_to
        if old == new.id:
            raise ValidationError(f"{t.id} is already {new.id}'s")
        if new.id in t.failed_by:
            raise ValidationError(f"{new.id} already failed {t.id}; another coder must take it",
                                  hint=f"`git liza show {t.id}` lists who failed it")
        if new.status == A.STARTING or holds_live(ctx, new):
            raise ValidationError(
                f"{new.id} is {new.status}" + (f" on {new.current_task}" if new.current_task
                                               else "") + f"; it can take {t.id} once it is free",
                hint="reassign to an idle coder, or free its task first (`git liza release`)")
        missing = deps_unmerged(ctx, t)
        if missing:
            raise ValidationError(f"{t.id} waits for {', '.join(missing)} to be MERGED; "
                                  "reassign it once it can be claimed")
        free_agent(ctx, t, old)
        ctx.put_task(replace(
            t, status=S.UNCLAIMED if t.status == S.CLAIMED else t.status, assigned_to=new.id,
            lease_expires=None, iteration=None, review_cycles_current=0,
            history=ctx.history(t, "reassigned", agent=new.id,
                                note=f"from {old}" if old else None)))
        ctx.put_agent(replace(new, status=A.WAITING, current_task=t.id, lease_expires=None))
        if old is not None:
            ctx.notices.append(f"{old} lost {t.id} to {new.id}: it must stand down")
        ctx.summary = (f"reassign {t.id} to {new.id}" + (f" (from {old})" if old else "")
                       + f" by the human; {new.id}'s supervisor claims it")


@register_op
@dataclass(frozen=True, kw_only=True)
class Block(Op):
    NAME = "block"
    task: str
    reason: str
    questions: tuple[str, ...]
    attempted: tuple[str, ...] = ()
    for_human: bool = False  # the questions are the human's to answer (AWAITING HUMAN)

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
            # A question for the human is nobody's failure: the asker may claim the
            # task again once answered, and no hypothesis exhaustion counts it.
            failed = t.failed_by if self.for_human else with_failed(t, me.id)
        free_agent(ctx, t, t.assigned_to)
        blocked = block_fields(ctx, t, self.reason, self.questions, failed,
                               for_human=self.for_human)
        ctx.put_task(replace(blocked, attempted=t.attempted + self.attempted))


@register_op
@dataclass(frozen=True, kw_only=True)
class Submit(Op):
    NAME = "submit"
    task: str
    commit: str
    # The paths the commit changes since it left the integration branch (the shell computes
    # them, git/mergecheck.py); given when the task has a lock scope, which they must not leave.
    changed: tuple[str, ...] = ()

    def run(self, ctx: Ctx) -> None:
        t = ctx.require_task(self.task)
        ctx.transition(t, S.READY_FOR_REVIEW)
        me = holder_check(ctx, t, "submit")
        check_sha(self.commit, "review commit")
        out = lockscope.outside(t.lock_scope, self.changed)
        if out:
            raise ScopeViolation(scope_violation_line(t.id, out))
        ctx.put_task(replace(t, status=S.READY_FOR_REVIEW, review_commit=self.commit,
                             lease_expires=None, reviewing_by=None, review_lease_expires=None,
                             handoff_pending=False, review_votes=(),  # a new commit: count anew
                             history=ctx.history(t, "ready_for_review", agent=me.id,
                                                 commit=self.commit)))
        ctx.put_agent(replace(me, status=A.WAITING, lease_expires=None, heartbeat=self.time))


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
