"""What a sync did: the report of a round trip (SyncReport, one of the actions below), the local
ops it replayed or dropped, and the error when every round lost a race."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from gitliza.errors import ConcurrencyConflict

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Replayed:
    """A local op re-applied on top of the remote's ops."""

    op: str
    actor: str
    task: str | None
    time: str
    original: str  # the local commit it came from (first recorded, before any replay)
    commit: str  # the commit that carries it now
    notices: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "actor": self.actor, "task": self.task, "time": self.time,
                "original": self.original, "commit": self.commit, "notices": list(self.notices)}


@dataclass(frozen=True)
class Dropped:
    """A local op that no longer applies on the remote's board: it is not on the board any more."""

    op: str
    actor: str
    task: str | None
    time: str
    original: str  # the local commit that recorded it (still in the reflog)
    reason: str  # the core's message: why the op is not legal after the remote's ops
    code: str  # the error code (INVALID_TRANSITION, LEASE_LOST, VALIDATION...)
    stand_down: bool = False  # a claim lost to another machine: the agent must stop working
    worktree: str | None = None  # what became of the local task worktree (stand-downs only)

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "actor": self.actor, "task": self.task, "time": self.time,
                "original": self.original, "reason": self.reason, "code": self.code,
                "stand_down": self.stand_down, "worktree": self.worktree}

    def describe(self) -> str:
        what = f"{self.op}{' ' + self.task if self.task else ''} by {self.actor} ({self.time})"
        text = f"dropped {what}: {self.reason}"
        if self.stand_down:
            text += f"; {self.actor} must stand down from {self.task}"
        if self.worktree:
            text += f"; worktree {self.worktree}"
        return text


@dataclass
class SyncReport:
    mode: str  # sync | pull | push
    remote: str = ""
    action: str = ""  # see ACTIONS below
    local_before: str | None = None
    local_after: str | None = None
    remote_before: str | None = None  # the remote tip at the first fetch
    remote_after: str | None = None  # the remote tip when we finished (what we pushed, if we did)
    fetched: int = 0  # remote ops new to this clone at the first fetch
    verified: int = 0  # fetched state commits replayed by verify before adopting them
    pushed: bool = False
    rounds: int = 0
    replayed: list[Replayed] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    branches: list[str] = field(default_factory=list)  # what sync did to branches, one line each
    rescued: str | None = None  # the ref keeping the dropped ops' branch work (rescue.py)
    live_pushed: int = 0  # agents' renewals pushed (refs/liza/live/*, sync/liverefs.py)

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "remote": self.remote, "action": self.action,
                "local_before": self.local_before, "local_after": self.local_after,
                "remote_before": self.remote_before, "remote_after": self.remote_after,
                "fetched": self.fetched, "verified": self.verified, "replayed": [r.to_json() for r in self.replayed],
                "dropped": [d.to_json() for d in self.dropped], "pushed": self.pushed,
                "rounds": self.rounds, "notices": list(self.notices),
                "branches": list(self.branches), "rescued": self.rescued,
                "live_pushed": self.live_pushed}


# action values
UP_TO_DATE = "up-to-date"  # nothing to do
PUSHED = "pushed"  # the remote was behind: fast-forwarded by our push
FAST_FORWARD = "fast-forward"  # we were behind: local ref moved to the remote tip
REPLAYED = "replayed"  # diverged: local ops replayed on the remote tip (and pushed, for sync)
AHEAD = "ahead"  # pull only: the local board has ops the remote lacks (not pushed)
BEHIND = "behind"  # push only: the remote has ops this clone lacks (nothing pushed)
NO_BOARD = "no-board"  # neither side has a board


class SyncGaveUp(ConcurrencyConflict):
    """Every round lost a race. `report` says what was already done (drops are final locally)."""

    def __init__(self, message: str, report: SyncReport, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.report = report
