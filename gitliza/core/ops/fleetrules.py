"""The machine rules a claim obeys (core/presence/placement.py): shared by the coder's claim (work.py) and the
reviewer's (review.py), so that the board, not the supervisor, enforces them."""
from __future__ import annotations

from gitliza.core.presence import placement
from gitliza.core.model import Task
from gitliza.core.ops.base import Ctx
from gitliza.errors import ValidationError


def machine_rules(ctx: Ctx, agent: str, task: Task, what: str, needs: bool = True) -> None:
    """Refuses, in one line, a claim by an agent of a drained machine (unless the task is
    already its own) or one whose supervisor lacks a label the task needs."""
    host = placement.drained_machine(ctx.board, agent)
    if host is not None and task.assigned_to != agent:
        raise ValidationError(f"{what} {task.id}: machine {host} is drained: {agent} finishes "
                              "what it holds and takes no new work",
                              hint=f"`git liza undrain {host}` lets it take work again")
    missing = placement.unmet(ctx.board, agent, task) if needs else []
    if missing:
        have = placement.labels_of(ctx.board, agent)
        raise ValidationError(f"{what} {task.id}: it needs label(s) {', '.join(missing)}, which "
                              f"{agent}'s supervisor does not offer (labels: "
                              f"{', '.join(have) or 'none'})",
                              hint="a supervisor started with `--labels` offers them")
