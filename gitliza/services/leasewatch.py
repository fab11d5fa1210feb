"""This clone's sightings of lease marks, and the takeover evidence a claim records
(gitliza/core/presence/leasemarks.py holds the rule; this is its shell).

The sightings live in `<git common dir>/liza/leases-seen.json`: per clone, never pushed (they are
this observer's clock, meaningless to another machine). They are refreshed from the whole board
after every sync (auto-sync included, so at least once per op and per supervisor poll), from the
changed tasks after every local write, and from the board a claim or claim-review judges.
Writers race without a lock: each writes what it saw (temp file + rename), so a lost update only
restarts a wait (a later first sighting), never shortens one.

The observer's clock is `Liza.now()` (this machine's wall clock; `LIZA_NOW` in tests and demos):
every sighting and judgment of one clone is on the same clock, so a skew between machines never
enters.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from gitliza import atomic
from gitliza.core import clock
from gitliza.core.presence import leasemarks
from gitliza.core.board import Board
from gitliza.core.model import Task
from gitliza.core.ops.leases import lease_seconds_of
from gitliza.errors import IllegalTransition
from gitliza.git.repository import common_dir

FILE = "leases-seen.json"


def _path(repo: Any) -> Path:
    return common_dir(repo) / "liza" / FILE


def load(repo: Any) -> dict[str, tuple[str, int]]:
    """The sightings, or none when the file is missing or unreadable (every wait restarts)."""
    try:
        raw = json.loads(_path(repo).read_text())
        return {str(k): (str(v[0]), int(v[1])) for k, v in raw.items()}
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        return {}


def _save(repo: Any, seen: dict[str, tuple[str, int]], before: dict[str, tuple[str, int]]) -> None:
    if seen == before:
        return  # the common case (nothing renewed since): no write
    path = _path(repo)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic.write(path.parent, FILE, json.dumps(seen, sort_keys=True).encode())
    except OSError:
        pass  # a read-only clone judges from its memory of this run only: waits restart


def observe(repo: Any, leases: Iterable[leasemarks.Lease], now: str, *,
            whole: bool) -> dict[str, tuple[str, int]]:
    """Record `leases` as seen at `now` (this clone's clock); `whole`: they are all the board's."""
    before = load(repo)
    seen = leasemarks.observe(before, leases, clock.to_epoch(now), whole=whole)
    _save(repo, seen, before)
    return seen


def observe_board(repo: Any, board: Board, now: str) -> dict[str, tuple[str, int]]:
    return observe(repo, leasemarks.leases_of(board.tasks()), now, whole=True)


def observe_tasks(repo: Any, tasks: Iterable[Task], now: str) -> None:
    """After a local write: the leases of the tasks it changed (a claim, a renewal)."""
    found = leasemarks.leases_of(tasks)
    if found:
        observe(repo, found, now, whole=False)


def takeover(repo: Any, board: Board, task_id: str, kind: str, me: str, now: str) -> str | None:
    """What a claim (kind CLAIM) or claim-review (REVIEW) of `task_id` by `me` records as its
    `takeover`: NOBODY when no one else holds that lease, the evidence when this clone has seen
    the holder's mark unchanged for the lease and its grace. Raises IllegalTransition (nothing is
    written) while the lease is live for this clone, saying when it expires here. None when the
    task is not on the board (the op refuses it with its own message)."""
    t = board.task(task_id)
    if t is None:
        return None
    lease = leasemarks.lease_of(t, kind)
    if lease is None or lease.agent == me:
        return leasemarks.NOBODY
    seen = observe(repo, [lease], now, whole=False)
    seconds = lease_seconds_of(board, t)
    at = clock.to_epoch(now)
    ev = leasemarks.expired(seen, lease, seconds, at)
    if ev is not None:
        return ev.encode()
    what = "claimed" if kind == leasemarks.CLAIM else "being reviewed"
    left = leasemarks.expires_in(seen, lease, seconds, at)
    raise IllegalTransition(
        f"{t.id} is already {what} by {lease.agent} (lease until {lease.mark}); the lease is "
        f"live for this clone until it sees it unchanged for "
        f"{seconds + leasemarks.grace(seconds)} s on its own clock ({left} s to go)",
        hint="a lease is judged by the time this clone saw pass, never by another machine's clock")


def expired_here(repo: Any, board: Board, now: str) -> set[str]:
    """The tasks whose claim lease has expired for this clone (the candidates a claim may take
    over); refreshes the sightings from the whole board."""
    seen = observe_board(repo, board, now)
    at = clock.to_epoch(now)
    out: set[str] = set()
    for lease in leasemarks.leases_of(board.tasks()):
        t = board.task(lease.task)
        if lease.kind == leasemarks.CLAIM and t is not None and \
                leasemarks.expired(seen, lease, lease_seconds_of(board, t), at) is not None:
            out.add(lease.task)
    return out


def deadlines(repo: Any, board: Board, now: str) -> list[str]:
    """When, on this clone's clock, each lease someone holds expires for this clone (never-seen
    leases count from now): the times a waiting supervisor must wake up for, besides the
    recorded expiries (core/agents/wake.py). A sighting is not recorded here: the wait starts
    at the sync or the write that brought the mark."""
    seen = load(repo)
    at = clock.to_epoch(now)
    out = []
    for lease in leasemarks.held_leases(board):
        t = board.task(lease.task)
        left = 0 if t is None else leasemarks.expires_in(seen, lease, lease_seconds_of(board, t),
                                                          at)
        if left > 0:  # an expired one needs no wake-up: it is judged at once
            out.append(clock.from_epoch(at + left))
    return out
