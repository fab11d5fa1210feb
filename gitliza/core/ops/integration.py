"""The integration check before review (docs/locks.md): a task waiting for review, or approved
and waiting for its merge, that no longer merges with the integration branch goes back to its
coder as an integration fix, before a reviewer spends a review on it (`conflict`). The
in-memory merge that finds the conflict is done by the shell (git/mergecheck.py); the op records
its paths. An integration fix that is exactly git's clean merge of the approved commit with an
integration commit keeps its approval (`carry-approval`): its tree is a function of reviewed
inputs, which the integration branch rule recomputes (services/verify/approvals.py)."""
from __future__ import annotations

from dataclasses import dataclass

from gitliza.core.ops.base import (Ctx, Op, check_sha, free_agent, need_text, register_op,
                                   replace)
from gitliza.core.model import Task
from gitliza.core.ops.leases import lease_live
from gitliza.core.states import TaskState
from gitliza.errors import IllegalTransition, PermissionDenied, ValidationError

APPROVALS = ("approved", "approval_carried")  # the history events that approve a commit


def last_approved(t: Task) -> str | None:
    """The commit the task was last approved at (a review, or a carried approval), if ever."""
    for h in reversed(t.history):
        if h.event in APPROVALS:
            return str(h.commit) if h.commit else None
    return None

S = TaskState


@register_op
@dataclass(frozen=True, kw_only=True)
class Conflict(Op):
    NAME = "conflict"
    task: str
    reason: str  # "conflicts in: a, b"
    tip: str  # the integration tip the review commit no longer merges with

    def run(self, ctx: Ctx) -> None:
        t = ctx.require_task(self.task)
        need_text(self.reason, "a conflict reason", 1000)
        check_sha(self.tip, "integration tip")
        ctx.transition(t, S.INTEGRATION_FAILED, reason=self.reason)
        if t.status == S.READY_FOR_REVIEW and t.reviewing_by and \
                lease_live(t.review_lease_expires, self.time):
            # The reviewer holding it finds the conflict at its merge; it is not taken from it.
            raise IllegalTransition(f"{t.id} is being reviewed by {t.reviewing_by}; its "
                                    "conflict is found when it is merged")
        if t.status == S.READY_FOR_REVIEW and t.reviewing_by:
            raise ValidationError(f"{t.id} has an expired review lease of {t.reviewing_by}; "
                                  "a reviewer takes it over first")
        ctx.put_task(replace(t, status=S.INTEGRATION_FAILED, integration_failure=self.reason,
                             reviewing_by=None, review_lease_expires=None,
                             history=ctx.history(t, "integration_failed", agent=self.actor,
                                                 reason=self.reason, commit=self.tip)))
        ctx.summary = f"conflict {t.id}: {self.reason} (back to {t.assigned_to or 'a coder'})"


@register_op
@dataclass(frozen=True, kw_only=True)
class CarryApproval(Op):
    """An integration fix whose review commit is exactly git's clean merge of the commit it was
    approved at (`approved`) with an integration commit (`onto`) is approved again without a
    second review. The shell checked the merge (services/lifecycle/carry.py); the integration
    branch rule checks it again wherever the commit travels (hooks, sync)."""

    NAME = "carry-approval"
    task: str
    commit: str
    approved: str
    onto: str

    def run(self, ctx: Ctx) -> None:
        t = ctx.require_task(self.task)
        ctx.transition(t, S.APPROVED)
        me = ctx.require_agent()
        if me.id == t.assigned_to:
            raise PermissionDenied(f"{me.id} wrote {t.id} and cannot approve it")
        for sha, what in ((self.commit, "review commit"), (self.approved, "approved commit"),
                          (self.onto, "integration commit")):
            check_sha(sha, what)
        if not t.integration_fix:
            raise ValidationError(f"{t.id} is not an integration fix: it needs a review")
        if self.commit != t.review_commit:
            raise ValidationError(f"{self.commit[:12]} is not {t.id}'s review_commit")
        if last_approved(t) != self.approved:
            raise ValidationError(f"{t.id} was not approved at {self.approved[:12]}")
        if t.reviewing_by and lease_live(t.review_lease_expires, self.time):
            raise IllegalTransition(f"{t.id} is being reviewed by {t.reviewing_by}")
        free_agent(ctx, t, t.assigned_to)
        ctx.put_task(replace(
            t, status=S.APPROVED, approved_by=me.id, reviewing_by=None,
            review_lease_expires=None,
            history=ctx.history(t, "approval_carried", agent=me.id, commit=self.commit,
                                note=f"git's clean merge of {self.approved} with {self.onto}")))
        ctx.summary = (f"carry-approval {t.id}: {self.commit[:12]} is git's clean merge of the "
                       f"approved {self.approved[:12]} with {self.onto[:12]}")
