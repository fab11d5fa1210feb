"""The supervisor's generation token (the `supervise` op): one agent id, one supervisor.

Taken at start (the agent registered first if it is new), renewed every lease_duration / 2 (by
the supervisor's loop and by the lease keeper's thread, under one lock), checked against the board
(once another supervisor took the id over, this one stands down) and given back at the end.
"""
from __future__ import annotations

import os
import threading
from typing import Callable

from gitliza.core import clock
from gitliza.core.board import Board
from gitliza.core.ops.control import Supervise
from gitliza.core.ops.goal import Register
from gitliza.core.states import Role
from gitliza.errors import (ConcurrencyConflict, GitFailure, LeaseLost, LizaError, NoBoard,
                            ValidationError)
from gitliza.services import procinfo
from gitliza.services import liveness
from gitliza.services.api import Liza


class StandDown(Exception):
    """Another supervisor holds this agent id now."""


def renewal_every(lease: int) -> int:
    """Seconds between two renewals of a supervisor's token: half its lease. (A third was tried
    for the loaded fleet's flapping `machines`, and made an idle supervisor's token lapse at a
    5 s lease, 1 run in 8 of tests/team/test_follow_remote.py: not understood yet, so not kept.)"""
    return max(1, lease // 2)


class Generation:
    """This supervisor's token for `agent`: its generation (0 until taken) and when it is due
    for renewal."""

    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.gen = 0
        self.renew_at = ""
        # Whether this supervisor registered the agent (it was new): only then does `end` remove
        # it; an agent the person registered by hand stays registered.
        self.registered = False
        # Why the last renewal, committed here, could not be shared (None: it was, or needed no
        # op): the supervisor says it once and works on.
        self.unshared: str | None = None
        self._lock = threading.Lock()

    def take(self, liza: Liza, role: Role, takeover: bool,
             log: Callable[[str], None] = lambda _s: None, labels: tuple[str, ...] = ()) -> None:
        """Register the agent if it is new, then take the token (`--takeover`: from a supervisor
        whose token is still live; without it, from one whose process is gone from this host,
        said in one line); `liza` writes with the new generation from then on."""
        board = liza.board()
        if not board.initialized:
            raise NoBoard()
        me = board.agent(self.agent)
        if me is None:
            liza.do(Register, agent=self.agent, role=role.value)
            self.registered = True
        elif me.role != role:
            raise ValidationError(f"{self.agent} is registered as {me.role.value}, not "
                                  f"{role.value}")
        liza.gen = None
        mode, replaces = "takeover" if takeover else "start", None
        cur = board.get("supervisors", self.agent)
        if me is not None and cur is not None and cur.registered:
            # An earlier supervisor registered it and ended holding a task (so it stayed):
            # this one removes it at its clean end, as it would have (agents alike).
            self.registered = True
        if not takeover and cur is not None and cur.expires is not None and \
                cur.expires > liza.now() and \
                procinfo.dead_here(cur.host, cur.pid, cur.pid_start, liza.repo):
            mode, replaces = "takeover", cur.generation
            log(f"taking over {self.agent} from generation {cur.generation}: its supervisor "
                f"(pid {cur.pid} on {cur.host}) is gone")
        pid = os.getpid()
        done = liza.do(Supervise, mode=mode, host=procinfo.host(liza.repo), pid=pid,
                       pid_start=procinfo.start_time(pid), replaces=replaces,
                       registered=self.registered, labels=labels)
        sup = done.outcome.board.get("supervisors", self.agent)
        assert sup is not None
        self.gen = sup.generation
        liza.gen = self.gen
        self.renew_at = clock.plus(done.outcome.event.time,
                                   renewal_every(board.config.lease_duration))

    def renew_if_due(self, liza: Liza, task: str | None = None) -> None:
        """Renew off the audit chain (services/liveness.py): with `task` (the lease keeper's
        beat) the task's lease every time, raising LeaseLost once the agent lost it; the token
        when it is due. A superseded generation raises StandDown."""
        with self._lock:
            now = liza.now()
            due = now >= self.renew_at
            if not due and task is None:
                return
            if task is not None:
                self.check(liza.board())
            try:
                liveness.renew(liza, task=task, extend_task=task is not None, renew_token=due)
            except LeaseLost as e:
                if task is not None and not self.superseded(liza.board()):
                    raise  # the task was lost, not the id: the lease keeper's stand-down
                raise StandDown(str(e)) from None
            except ValidationError as e:
                raise StandDown(str(e)) from None
            except (GitFailure, ConcurrencyConflict) as e:
                # A renewal by op (the token had expired: a loaded machine) is committed here,
                # and its auto-sync could not share it: the remote's hook refused another op of
                # this clone (a takeover judged on a lease renewed since), or a merge here
                # diverged. The follower's next sync shares it or says what it drops; raised, it
                # ended the supervisor (fleet scenario, run 8: A's whole team exited 3).
                self.unshared = str(e)
            else:
                self.unshared = None
            if due:
                lease = liza.board().config.lease_duration
                self.renew_at = clock.plus(now, renewal_every(lease))

    def superseded(self, board: Board) -> bool:
        sup = board.get("supervisors", self.agent)
        return sup is None or sup.generation != self.gen

    def check(self, board: Board) -> None:
        if self.superseded(board):
            raise StandDown(f"generation {self.gen} of {self.agent} was superseded")

    def end(self, liza: Liza) -> None:
        """Give the token back (and unregister the agent if this supervisor registered it),
        unless it was never taken or is no longer ours."""
        if not self.gen:
            return
        try:
            if not self.superseded(liza.board()):
                liza.do(Supervise, mode="end", gen=self.gen,
                        unregister=self.registered)
        except LizaError:
            pass  # the token then simply expires
