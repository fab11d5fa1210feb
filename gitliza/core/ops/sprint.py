"""The sprint's scope (sprint-governance.md): the planner names the tasks a sprint plans to finish
(`scope.planned`) and those it may take on if time allows (`scope.stretch`); the sprint completes
when every planned task is terminal (`engine.completes`, a rule `apply` runs after every op)."""
from __future__ import annotations

from dataclasses import dataclass

from gitliza.core.ids import check_id
from gitliza.core.model import SprintScope, SprintStatus
from gitliza.core.ops.base import Ctx, Op, register_op, replace, require_goal_open
from gitliza.errors import ValidationError


@register_op
@dataclass(frozen=True, kw_only=True)
class SprintScopeOp(Op):
    NAME = "sprint-scope"
    planned: tuple[str, ...] = ()
    stretch: tuple[str, ...] = ()

    def run(self, ctx: Ctx) -> None:
        ctx.allowed()
        require_goal_open(ctx)
        sp = ctx.board.sprint
        if sp.status != SprintStatus.IN_PROGRESS:
            raise ValidationError(f"sprint {sp.id} is {sp.status.value}; its scope is final")
        seen: set[str] = set()
        for tid in (*self.planned, *self.stretch):
            check_id(tid, "task id")
            if tid in seen:
                raise ValidationError(f"{tid} is named twice (planned and stretch are disjoint)")
            seen.add(tid)
            if ctx.task(tid) is None:
                raise ValidationError(f"task {tid} does not exist")
        ctx.put("sprint", "", replace(sp, scope=SprintScope(planned=self.planned,
                                                            stretch=self.stretch)))
        ctx.summary = (f"sprint-scope {sp.id}: planned {', '.join(self.planned) or '-'}, stretch "
                       f"{', '.join(self.stretch) or '-'} by {self.actor}")
