"""The library API: what the CLI, the supervisor, the watcher and the benchmarks use in-process.

    liza = Liza.open(".", agent="coder-1")
    board = liza.board()                         # the tip, read lazily
    done = liza.apply(lambda board, now: Claim(actor=liza.agent, time=now, ...))
"""
from __future__ import annotations

import os
import time
from typing import Any, Callable

from gitliza.core import clock
from gitliza.core.board import Board
from gitliza.core.ops.base import Op
from gitliza.core.states import HUMAN_ACTOR
from gitliza.git.store import Committed, Store

AGENT_ENV = "LIZA_AGENT_ID"
# Tests and demos move time forward (lease expiry) without sleeping; never set in production.
NOW_ENV = "LIZA_NOW"

# A hook may return a replacement record (auto-sync replays the op onto the remote's ops, which
# gives it a new commit id); None keeps the record as it is.
def now_utc(*, allow_override: bool = True) -> str:
    """The time ops carry. `LIZA_NOW` (tests, demos) overrides it unless `allow_override` is
    False, which is what the server hook uses: the pusher's environment must not set its clock."""
    forced = os.environ.get(NOW_ENV) if allow_override else None
    return clock.check_ts(forced, NOW_ENV) if forced else clock.from_epoch(time.time())


AfterCommit = Callable[["Liza", Committed], "Committed | None"]


class Liza:
    def __init__(self, store: Store, agent: str | None = None, *,
                 now: Callable[[], str] | None = None, sync: bool = True) -> None:
        self.store = store
        self.agent = agent or os.environ.get(AGENT_ENV) or HUMAN_ACTOR
        self._now = now
        self.sync = sync
        self.after_commit: list[AfterCommit] = []

    @classmethod
    def open(cls, path: str | os.PathLike[str] = ".", agent: str | None = None,
             **kw: Any) -> Liza:
        return cls(Store.discover(path), agent, **kw)

    @property
    def repo(self) -> Any:
        return self.store.repo

    def now(self) -> str:
        if self._now is not None:
            return self._now()
        return now_utc()

    def board(self, at: str | None = None) -> Board:
        return self.store.board(at)[0]

    def apply(self, make_op: Callable[[Board, str], Op]) -> Committed:
        done = self.store.transact(make_op, self.now)
        for hook in self.after_commit:
            done = hook(self, done) or done
        return done

    def do(self, cls: type[Op], **args: Any) -> Committed:
        """Apply `cls(actor=self.agent, time=now, **args)`."""
        return self.apply(lambda _board, now: cls(actor=self.agent, time=now, **args))
