"""`git liza wait`: block until a board condition holds (for scripts and agents).

    git liza wait change                          # the board (or a .liza/ control file) changed
    git liza wait change --since OID              # ... differs from state OID (no race)
    git liza wait work --agent coder-1            # there is work this agent's role can start
    git liza wait status --task t1 --status MERGED

Blocks on the board ref through RefWatcher (no polling) and wakes up on its own only when a lease
expires (which can make a task claimable without any write). Exit 0 when the condition holds,
1 when `--timeout` passed first.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from gitliza.services.api import Liza
from gitliza.core import clock
from gitliza.core.agents import wake
from gitliza.core.board import Board
from gitliza.core.states import HUMAN_ACTOR, TaskState
from gitliza.errors import EXIT_VALIDATION, ValidationError
from gitliza.git.refwatch import RefWatcher

EXIT_TIMEOUT = EXIT_VALIDATION
KINDS = ("change", "work", "status")


@dataclass(frozen=True)
class Condition:
    kind: str
    task: str | None = None
    status: TaskState | None = None
    since: str | None = None  # `change`: compare with this state oid instead of the start tip

    def describe(self) -> str:
        if self.kind == "status":
            return f"{self.task} reaches {self.status}"
        return {"change": "the board changes", "work": "work for me"}[self.kind]


@dataclass
class WaitResult:
    condition: Condition
    met: bool
    seconds: float
    tip: str | None
    detail: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"condition": self.condition.kind, "met": self.met, "task": self.condition.task,
                "status": self.condition.status.value if self.condition.status else None,
                "seconds": round(self.seconds, 3), "state": self.tip, "detail": self.detail}

    def describe(self) -> str:
        what = self.condition.describe()
        if not self.met:
            return f"timed out after {self.seconds:.1f}s waiting until {what}"
        return f"{what}" + (f": {', '.join(self.detail)}" if self.detail else "")


def parse(kind: str, task: str | None = None, status: str | None = None,
          since: str | None = None) -> Condition:
    if kind not in KINDS:
        raise ValidationError(f"unknown wait condition {kind!r}; one of: {', '.join(KINDS)}")
    if kind == "status":
        if task is None or status is None:
            raise ValidationError("wait status needs --task TASK and --status STATUS")
        try:
            return Condition(kind, task, TaskState(status.upper()))
        except ValueError:
            raise ValidationError(f"{status!r} is not a task status: "
                                  + ", ".join(s.value for s in TaskState)) from None
    if task is not None or status is not None:
        raise ValidationError("--task and --status go with `wait status`")
    if since is not None and kind != "change":
        raise ValidationError("--since goes with `wait change`")
    return Condition(kind, since=since)


def checker(liza: Liza, cond: Condition, start_tip: str | None,
            start_flags: frozenset[str]) -> Callable[[Board, str, str | None, frozenset[str]],
                                                      list[str] | None]:
    """A function (board, now, tip, control files) -> details when `cond` holds, else None."""
    if cond.kind == "change":
        return lambda _b, _n, tip, flags: (
            [f"state {tip[:12] if tip else '-'}"] + sorted(flags)
            if tip != start_tip or flags != start_flags else None)
    if cond.kind == "status":
        def status(board: Board, _n: str, _t: str | None, _f: frozenset[str]) -> list[str] | None:
            t = board.task(cond.task or "")
            return [f"{t.id} {t.status}"] if t is not None and t.status == cond.status else None
        return status
    if liza.agent == HUMAN_ACTOR:
        raise ValidationError("wait work needs an agent: --agent ID or LIZA_AGENT_ID")
    me = liza.board().agent(liza.agent)
    if me is None:
        raise ValidationError(f"{liza.agent} is not registered",
                              hint=f"`git liza register {liza.agent} --role ROLE`")

    def work(board: Board, now: str, _t: str | None, _f: frozenset[str]) -> list[str] | None:
        return wake.work_for(board, me.role, me.id, now) or None
    return work


def wait(liza: Liza, cond: Condition, timeout: float | None,
         watcher: RefWatcher | None = None) -> WaitResult:
    """Block until `cond` holds or `timeout` seconds pass."""
    started = time.monotonic()
    own = watcher is None
    w = watcher if watcher is not None else RefWatcher(liza.repo.path).start()
    try:
        tip, flags = w.tip(), w.flags()
        if cond.since is not None:
            since = liza.store.resolve(cond.since)
            tip = str(since.id) if since is not None else None
        check = checker(liza, cond, tip, flags)
        while True:
            board, now = liza.board(), liza.now()
            tip, flags = w.tip(), w.flags()
            got = check(board, now, tip, flags)
            if got is not None:
                return WaitResult(cond, True, time.monotonic() - started, tip, got)
            left = None if timeout is None else timeout - (time.monotonic() - started)
            if left is not None and left <= 0:
                return WaitResult(cond, False, time.monotonic() - started, tip)
            w.wait(min_timeout(left, seconds_until(wake.next_deadline(board, now), now)))
    finally:
        if own:
            w.close()


def seconds_until(deadline: str | None, now: str) -> float | None:
    """Seconds from `now` to `deadline` (+1: leases are compared at second precision)."""
    if deadline is None:
        return None
    return max(0.0, clock.to_epoch(deadline) - clock.to_epoch(now) + 1.0)


def min_timeout(*values: float | None) -> float | None:
    known = [v for v in values if v is not None]
    return min(known) if known else None
