"""Liveness off the audit chain: an agent's renewals, and the effective lease they give.

A heartbeat and a supervisor token renewal are not protocol transitions: they only push an
expiry forward. They live on `refs/liza/live/<agent-id>` (git/liveref.py), one small commit per
renewal whose tree holds `live.toml`, a `Renewal`. The board (refs/liza/state) keeps the protocol:
the claim that grants a lease, supervise start/takeover/end, reclaims, stand-downs.

The **effective lease** of an agent's work is the newest of the board's and the agent's renewals
for the same agent, task and supervisor generation: `effective(board, renewals)` gives the
entities whose lease fields a renewal moves (the task's `lease_expires` or
`review_lease_expires`, the agent's `lease_expires` and `heartbeat`, the supervisor token's
`expires`), and `overlay` the board as readers see it (views, state.yaml, the watcher's alarms,
the supervisor's checks, the ops a command builds). The rules, all pure and all monotone (a
renewal only ever moves an expiry later, so merging records from several clones in any order
gives one answer):

- a renewal counts only for the generation that holds the agent id on the board (a superseded
  supervisor's renewals are ignored), and only for the task the agent holds on the board (a
  renewal naming a task the agent lost, or a task someone else holds now, is ignored);
- a lease it grants is at most the lease length after its heartbeat (a renewal cannot grant
  itself an hour);
- a token that was ended (expires None) stays ended.

A reader does not refuse a renewal made after the lease it extends had run out: the ref keeps only
the newest renewal, so a reader cannot tell a late one from the last of a chain of timely ones.
The writer never makes a late one (services/liveness.py refuses with LeaseLost: stand down, as the
heartbeat op did), and once a reclaim moved the claim on the board no renewal of the old holder
counts (the task is no longer its); a holder that renews late only shows it is alive.

An op that judges a lease (a claim over another's, a holder's submit, a supervisor start) carries
the renewals it judged by in `Op.live`; `apply` lays them over the board first (`effective`), so
the board commit records the lease as the writer saw it, and replay (verify, the server hook)
reproduces the same tree from the op alone.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable

from gitliza.core.quorum import review_lease, reviewers, with_review_lease
from gitliza.core import clock
from gitliza.core.board import Board, Changes
from gitliza.core.states import AgentState, TaskState

LIVE_FILE = "live.toml"


@dataclass(frozen=True, slots=True)
class Renewal:
    """One renewal of `agent`'s liveness (live.toml), as written by its supervisor or by
    `git liza heartbeat`. `commit`: the live commit it was read from (set by the reader, never
    stored in live.toml: a commit cannot name itself), the evidence an op records."""

    agent: str
    heartbeat: str
    generation: int | None = None  # the supervisor token it speaks for (None: no supervisor)
    task: str | None = None  # the task whose lease (or review lease) it extends
    lease_expires: str | None = None
    supervisor_expires: str | None = None
    commit: str | None = None


def _lease_seconds(board: Board, task_id: str) -> int:
    t = board.task(task_id)
    if t is not None and t.lease_duration_override is not None:
        return t.lease_duration_override
    return int(board.config.lease_duration)


def _bounded(start: str, end: str | None, seconds: int) -> str | None:
    """`end`, unless it lies more than `seconds` after `start` (a forged or broken record)."""
    if end is None:
        return None
    try:
        limit = clock.plus(start, seconds)
    except Exception:  # noqa: BLE001 - a malformed time in someone's record counts as none
        return None
    return end if end <= limit else None


def _well_formed(r: Renewal) -> bool:
    try:
        clock.check_ts(r.heartbeat, "heartbeat")
    except Exception:  # noqa: BLE001 - someone's malformed record counts as none
        return False
    return True


def order(r: Renewal) -> tuple[int, str, str]:
    """The order renewals are applied in (and which of two records for one agent is newer):
    generation first, then the heartbeat. Deterministic, so replay sees the same result."""
    return (r.generation or 0, r.heartbeat, r.commit or "")


def effective(board: Board, renewals: Iterable[Renewal]) -> Changes:
    """The entities whose lease fields `renewals` move later on `board` (see the module
    docstring for the rules). Empty when every renewal is stale, foreign or already on the
    board."""
    out: Changes = {}

    def get(coll: str, key: str) -> Any:
        return out[(coll, key)] if (coll, key) in out else board.get(coll, key)

    for r in sorted(renewals, key=order):
        if not _well_formed(r):
            continue
        a = get("agents", r.agent)
        if a is None:
            continue
        sup = get("supervisors", r.agent)
        if (sup.generation if sup is not None else None) != r.generation:
            continue
        if sup is not None and sup.expires is not None:
            until = _bounded(r.heartbeat, r.supervisor_expires, int(board.config.lease_duration))
            if until is not None and until > sup.expires:
                out[("supervisors", r.agent)] = replace(sup, expires=until)
        if r.task is not None and r.task == a.current_task:
            a = _extend_task(board, get, out, a, r)
        if a.heartbeat is None or r.heartbeat > a.heartbeat:
            a = replace(a, heartbeat=r.heartbeat)
            out[("agents", r.agent)] = a
    return out


def _extend_task(board: Board, get: Any, out: Changes, a: Any, r: Renewal) -> Any:
    """The task lease `r` extends (the agent's current task, which it still holds), and the agent
    with it; the agent as it is now."""
    assert r.task is not None
    t = get("tasks", r.task)
    until = _bounded(r.heartbeat, r.lease_expires, _lease_seconds(board, r.task))
    if t is None or until is None:
        return a
    if t.status == TaskState.CLAIMED and t.assigned_to == a.id and \
            a.status in (AgentState.WORKING, AgentState.HANDOFF):
        if t.lease_expires is not None and t.lease_expires < until:
            out[("tasks", t.id)] = replace(t, lease_expires=until)
            a = replace(a, lease_expires=until)
            out[("agents", a.id)] = a
    elif t.status == TaskState.READY_FOR_REVIEW and a.status == AgentState.REVIEWING and \
            review_lease(t, a.id) is not None:
        mine = review_lease(t, a.id)
        if mine is not None and mine < until:
            out[("tasks", t.id)] = with_review_lease(t, a.id, until)
            a = replace(a, lease_expires=until)
            out[("agents", a.id)] = a
    return a


def overlay(board: Board, renewals: Iterable[Renewal]) -> Board:
    """`board` as its readers see it: with the effective leases of `renewals`."""
    changes = effective(board, renewals)
    return board.with_changes(changes) if changes else board


def lease_of(board: Board, renewals: Iterable[Renewal], task_id: str
             ) -> tuple[str | None, str | None]:
    """(holder, effective expiry) of the lease on `task_id`: the coder's on a CLAIMED task, the
    reviewer's on a task under review; (None, None) when nobody holds one. This is the "mark" an
    observer judges expiry by (it changes with every renewal): the input of the expiry judgment
    by the observer's own clock."""
    t = overlay(board, renewals).task(task_id)
    if t is None:
        return None, None
    if t.status == TaskState.CLAIMED:
        return t.assigned_to, t.lease_expires
    if t.status == TaskState.READY_FOR_REVIEW and t.reviewing_by:
        return t.reviewing_by, t.review_lease_expires
    return None, None


def relevant(board: Board, actor: str, task_ids: Iterable[str | None],
             renewals: Iterable[Renewal]) -> tuple[Renewal, ...]:
    """The renewals an op by `actor` on `task_ids` judges by, that change the board: the actor's
    own (its lease, its token) and those of whoever holds one of the tasks (the lease a claim
    over it must find expired). Newest per agent; in `order`."""
    who = {actor}
    for tid in task_ids:
        t = board.task(tid) if tid else None
        if t is not None:
            who.update(x for x in (t.assigned_to, *reviewers(t)) if x)
    best: dict[str, Renewal] = {}
    for r in renewals:
        if r.agent in who and (r.agent not in best or order(r) > order(best[r.agent])):
            best[r.agent] = r
    return tuple(sorted((r for r in best.values() if effective(board, (r,))), key=order))


def newest(renewals: Iterable[Renewal]) -> dict[str, Renewal]:
    """The newest renewal per agent (several clones' copies of one agent's ref)."""
    best: dict[str, Renewal] = {}
    for r in renewals:
        if r.agent not in best or order(r) > order(best[r.agent]):
            best[r.agent] = r
    return best


def push_due(shared: Renewal | None, now: str, lease_seconds: int) -> bool:
    """Whether a renewal written at `now` must be pushed to the shared remote: the remote's copy
    (`shared`) is missing or older than a third of a lease. Other clones then see a renewal
    at most a third of a lease (plus their own fetch cadence) late, well inside the lease, and an
    idle agent pushes about 3 times per lease, not once per heartbeat."""
    if shared is None:
        return True
    try:
        return clock.plus(shared.heartbeat, max(1, lease_seconds // 3)) <= now
    except Exception:  # noqa: BLE001 - a malformed shared record: replace it
        return True
