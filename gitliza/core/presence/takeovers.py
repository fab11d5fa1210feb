"""Whose lease a takeover takes over, and whether a renewal outran it.

A takeover (a claim of a task another coder holds, a claim-review over another reviewer's review
lease) records the lease mark it judged expired (leasemarks.Evidence). The core checks that mark
against the board and the renewals the op carries (`Op.live`); but the holder may have renewed on
refs/liza/live/<agent> since, in a renewal the taker was never shown. Whoever holds that renewal
judges the takeover `outrun`: the server hook refuses the push (hooks/server.py), and a sync that
fetched the renewal drops the op at once as a lost race (services/sync/doomed.py) instead of
pushing it into the same refusal until the board catches up. Pure.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from gitliza.core.board import Board
from gitliza.core.model import Task
from gitliza.core.ops.base import Op
from gitliza.core.presence.leasemarks import Evidence
from gitliza.core.presence.renewals import Renewal, overlay
from gitliza.core.states import TaskState

TAKEOVER_OPS = ("claim", "claim-review")
# How the server hook words the refusal of an outrun takeover: the one refusal a sync's next
# fetch can cure (it brings the renewal; the replay then drops the takeover, sync/engine.py).
OUTRUN_REFUSAL = "takes over a lease renewed since it was judged"


@dataclass(frozen=True, slots=True)
class Outrun:
    """A takeover of `task` that judged the lease mark `judged`, while a renewal runs it to
    `until`."""

    task: str
    judged: str
    until: str


def held_until(t: Task, op: Op) -> str | None:
    """The expiry of the lease `op` would take over on `t` (someone else's claim for a claim,
    someone else's review lease for a claim-review); None when it takes over nobody's."""
    if op.NAME == "claim" and t.status == TaskState.CLAIMED and t.assigned_to != op.actor:
        return t.lease_expires
    if op.NAME == "claim-review" and t.reviewing_by not in (None, op.actor):
        return t.review_lease_expires
    return None


def lease_taken(before: Board, op: Op, held: Iterable[Renewal]) -> tuple[Task, str] | None:
    """The task and lease expiry `op` takes over on `before`, as the renewals it judged by and
    `held` (the judge's own) make it; None when it is no takeover."""
    if op.NAME not in TAKEOVER_OPS or getattr(op, "takeover", None) == "none":
        return None
    t = overlay(before, [*op.live, *held]).task(getattr(op, "task"))
    if t is None:
        return None
    until = held_until(t, op)
    return None if until is None else (t, until)


def outrun(before: Board, op: Op, held: Iterable[Renewal]) -> Outrun | None:
    """Whether a renewal in `held` moved the lease `op` takes over past the mark it judged."""
    evidence = getattr(op, "takeover", None)
    if evidence is None:
        return None
    taken = lease_taken(before, op, held)
    if taken is None:
        return None
    t, until = taken
    judged = Evidence.decode(evidence).mark
    return Outrun(t.id, judged, until) if until > judged else None
