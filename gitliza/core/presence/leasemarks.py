"""Lease expiry judged by the observer's own clock, as etcd's and Consul's leases
are: timestamps written by another machine are never compared with this machine's clock.

A lease is seen as a *mark*: the effective `lease_expires` value of an agent on a task (any
renewal changes it). An observer remembers, on its own clock, when it first saw each mark
(`observe`; the shell keeps that per clone). The lease is expired for that observer only once it
has seen the same mark unchanged for a whole lease plus the grace (`expired`). A takeover then
records its `Evidence` in the op (holder, mark, first seen, now: the observer's clock), and
`check_takeover` validates it on the board the op applies to, at write, at sync's replay and in
verify alike: the mark must still be the holder's current one (a renewal, or anyone else's claim
meanwhile, makes a replayed takeover fail instead of taking over a newer lease), the observer must
have waited the whole lease plus the grace, and its first sighting may not predate the mark by
more than MAX_SKEW (nobody sees a mark before it is written, give or take the clocks' offset).

The input is the effective lease (`leases_of`): today the board's own lease fields; when
renewals move to refs/liza/live/<agent>, the effective lease comes from there, and only
`leases_of`'s caller changes. Pure: time is passed in (epoch seconds or ISO strings).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from gitliza.core import clock
from gitliza.core.board import Board
from gitliza.core.model import Task
from gitliza.core.states import TaskState
from gitliza.errors import IllegalTransition, ValidationError

# The spec's watcher grace (blackboard-schema.md: 60 s after lease expiry), scaled down for short
# leases so that a lease of a few seconds is not held for a minute.
GRACE_MAX = 60
# The largest clock offset between two machines the board tolerates (seconds): the server hook
# refuses ops dated further ahead of its clock (liza.maxClockSkew), and a takeover's first sighting
# may not predate the mark it judges by more than this. 15 minutes covers +-10 minutes of skew.
MAX_SKEW = 900
# Above this, sync names the skew in one line (it is still tolerated up to MAX_SKEW).
WARN_SKEW = 60
# The value of a claim's `takeover` when it takes nobody's lease: such a claim (a replayed one
# too) never takes over a task that someone else holds.
NOBODY = "none"
CLAIM, REVIEW = "claim", "review"
FORGET_AFTER = 8 * 86400


@dataclass(frozen=True, slots=True)
class Lease:
    """An effective lease: `agent` holds `task` (a claim or a review lease) with this mark."""

    kind: str
    agent: str
    task: str
    mark: str

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.task}:{self.agent}"


def lease_of(t: Task, kind: str) -> Lease | None:
    """The lease on `t` of that kind, from the board's fields (the effective lease today)."""
    if kind == CLAIM and t.status == TaskState.CLAIMED and t.assigned_to and t.lease_expires:
        return Lease(CLAIM, t.assigned_to, t.id, t.lease_expires)
    if kind == REVIEW and t.status == TaskState.READY_FOR_REVIEW and t.reviewing_by and \
            t.review_lease_expires:
        return Lease(REVIEW, t.reviewing_by, t.id, t.review_lease_expires)
    return None


def leases_of(tasks: Iterable[Task]) -> list[Lease]:
    return [lease for t in tasks for kind in (CLAIM, REVIEW)
            if (lease := lease_of(t, kind)) is not None]


def held_leases(board: Board) -> list[Lease]:
    """The leases of the agents that hold one now, found through the agents (a few) rather than
    every task (thousands): what sync refreshes the sightings with. A task left CLAIMED by an
    agent that went on to other work is not among them; its wait starts when a claim judges it."""
    out = []
    for a in board.agents():
        t = board.task(a.current_task) if a.current_task else None
        if t is None:
            continue
        out += [lease for kind in (CLAIM, REVIEW)
                if (lease := lease_of(t, kind)) is not None and lease.agent == a.id]
    return out


def grace(lease_seconds: int) -> int:
    return min(GRACE_MAX, max(1, lease_seconds // 5))


# key -> (mark, first seen: epoch seconds on the observer's clock)
Sightings = Mapping[str, tuple[str, int]]


def observe(seen: Sightings, current: Iterable[Lease], now: int, *,
            whole: bool = True) -> dict[str, tuple[str, int]]:
    """The sightings after seeing `current` at `now`. A mark seen before keeps its first sighting;
    a new mark starts at `now`. A first sighting later than `now` (this clock was set back)
    restarts at `now`: the wait is never shortened by a clock step. `whole`: `current` is every
    lease on the board, so the leases that ended are forgotten."""
    # Without the whole board, sightings of ended leases are dropped once older than any lease
    # can be (CONFIG_MAX: 7 days), so the file stays small.
    out: dict[str, tuple[str, int]] = {} if whole else {
        k: v for k, v in seen.items() if now - v[1] <= FORGET_AFTER}
    for lease in current:
        had = seen.get(lease.key)
        keep = had is not None and had[0] == lease.mark and had[1] <= now
        out[lease.key] = (lease.mark, had[1]) if keep and had is not None else (lease.mark, now)
    return out


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a takeover judged, recorded in its op: the holder, its mark, and on the observer's
    clock when the mark was first seen and when it was judged."""

    holder: str
    mark: str
    first_seen: str
    now: str

    def encode(self) -> str:
        return f"{self.holder} {self.mark} {self.first_seen} {self.now}"

    @classmethod
    def decode(cls, text: str) -> Evidence:
        parts = text.split(" ")
        if len(parts) != 4:
            raise ValidationError(f"takeover evidence {text!r} is not 'HOLDER MARK FIRST NOW'")
        for ts, what in ((parts[1], "mark"), (parts[2], "first seen"), (parts[3], "now")):
            clock.check_ts(ts, f"takeover evidence's {what}")
        return cls(*parts)

    @property
    def waited(self) -> int:
        return clock.to_epoch(self.now) - clock.to_epoch(self.first_seen)


def expired(seen: Sightings, lease: Lease, lease_seconds: int, now: int) -> Evidence | None:
    """The evidence that `lease` expired for this observer at `now`, or None while it has not (or
    was never seen before: its wait starts with the first sighting)."""
    had = seen.get(lease.key)
    if had is None or had[0] != lease.mark or had[1] > now:
        return None
    if now - had[1] < lease_seconds + grace(lease_seconds):
        return None
    return Evidence(lease.agent, lease.mark, clock.from_epoch(had[1]), clock.from_epoch(now))


def expires_in(seen: Sightings, lease: Lease, lease_seconds: int, now: int) -> int:
    """Seconds until `lease` expires for this observer (the whole wait when never seen)."""
    had = seen.get(lease.key)
    start = had[1] if had is not None and had[0] == lease.mark and had[1] <= now else now
    return max(0, start + lease_seconds + grace(lease_seconds) - now)


def check_takeover(current: Lease | None, evidence: Evidence, lease_seconds: int,
                   op_time: str) -> None:
    """Refuse a takeover whose evidence does not prove that `current` (the lease it replaces, on
    the board the op applies to) expired for its observer."""
    if current is None:
        raise IllegalTransition(f"the takeover judged {evidence.holder}'s lease, which is gone")
    if (evidence.holder, evidence.mark) != (current.agent, current.mark):
        raise IllegalTransition(
            f"{current.task}'s lease is {current.agent}'s until {current.mark}, not the one the "
            f"takeover judged ({evidence.holder}'s until {evidence.mark}): it was renewed or "
            "taken since; not taken over")
    need = lease_seconds + grace(lease_seconds)
    if evidence.waited < need:
        raise IllegalTransition(
            f"{current.agent}'s lease on {current.task} was seen unchanged for {evidence.waited} s, "
            f"less than the lease and its grace ({need} s): not expired")
    written = clock.to_epoch(current.mark) - lease_seconds
    if clock.to_epoch(evidence.first_seen) < written - MAX_SKEW:
        raise ValidationError(
            f"the takeover's evidence says the mark {current.mark} was first seen at "
            f"{evidence.first_seen}, more than {MAX_SKEW} s before it was written: not credible")
    if evidence.now > op_time:
        raise ValidationError(f"the takeover's evidence is dated {evidence.now}, after the op "
                              f"({op_time})")
