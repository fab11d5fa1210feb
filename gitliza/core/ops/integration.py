"""The integration check before review (docs/locks.md): a task waiting for review, or approved
and waiting for its merge, that no longer merges with the integration branch goes back to its
coder as an integration fix, before a reviewer spends a review on it. The in-memory merge that
finds the conflict is done by the shell (git/mergecheck.py); the op records its paths."""
from __future__ import annotations

from dataclasses import dataclass

from gitliza.core.ops.base import Ctx, Op, check_sha, need_text, register_op, replace
from gitliza.core.ops.leases import lease_live
from gitliza.core.states import TaskState
from gitliza.errors import IllegalTransition, ValidationError

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
