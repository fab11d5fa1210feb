"""A team that sizes itself: `git liza team --max-coders N --max-reviewers M` (upstream Liza's
ADR-0163). The decision is pure (core/agents/sizing.py); this module watches the board and starts
the supervisors, as members of the running `Team` (gitliza/team/launch.py), so they are on the
board, labelled in the output and stopped with the team as every other member.

The Scaler wakes on the board ref (the shared RefWatcher, no polling) and, for each pooled role,
starts a supervisor per piece of waiting work beyond the idle running ones, up to the cap. It never
stops one: a pool member (`git liza agent --pool`) exits by itself after `pool_idle_exit` seconds
without work. Pool members take fresh ids (coder-3, coder-4 ...), never one that ran before in
this team, so each id's log and exit code stay its own.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from gitliza.core.agents import sizing as pool, wake
from gitliza.core.ids import check_id
from gitliza.errors import LizaError
from gitliza.team.launch import Member, Team
from gitliza.team.options import POOL_WORDS

if TYPE_CHECKING:
    from gitliza.services.api import Liza


class Scaler:
    """Starts pool members of a running team as work appears (its own thread)."""

    def __init__(self, liza: Liza, team: Team, sizes: dict[str, int]) -> None:
        self.liza, self.team, self.sizes = liza, team, sizes
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="liza-pool", daemon=True)
        self._watch: Any = None
        self._next = {role: self._first_free(role) for role in sizes}

    def _first_free(self, role: str) -> int:
        taken = [m.agent for m in self.team.team if m.role == role]
        return len(taken) + 1

    def start(self) -> Scaler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop = True
        if self._watch is not None:
            self._watch.poke()
        self._thread.join(timeout=10)
        self.team.scaling = False

    def _run(self) -> None:
        from gitliza.git.refwatch import RefWatcher
        try:
            with RefWatcher(self.liza.repo.workdir or self.liza.repo.path) as w:
                self._watch = w
                while not self._stop and not self.team.stopping:
                    if not self.step():
                        break
                    # Wake on the board; and now and then for the members' exits (a supervisor
                    # that left changes nothing on the board when it had nothing).
                    w.wait(5.0)
        finally:
            self.team.scaling = False

    def step(self) -> bool:
        """One look at the board: start what the work needs. False: the team is done."""
        try:
            board, now = self.liza.board(), self.liza.now()
        except LizaError:
            return True  # a board between two writes, or a sync hiccup: look again later
        if wake.goal_over(board):
            return False
        alive_fixed = any(not m.pool for m in self.team.team
                          if m in self.team.running(m.role))
        any_pool = any(self.team.running(role) for role in self.sizes)
        for role, most in self.sizes.items():
            running = self.team.running(role)
            work = pool.waiting(board, now, role)
            n = pool.to_start(work, len(running), pool.busy(board, [m.agent for m in running]),
                              most)
            for _ in range(n):
                agent = check_id(f"{self.team.prefix}{POOL_WORDS[role]}-{self._next[role]}",
                                 "agent id")
                self._next[role] += 1
                if not self.team.add(Member(role, agent, pool=True)):
                    return False
                any_pool = True
        # Nobody left to make work (every fixed member ended) and no pool member at work: done.
        return alive_fixed or any_pool or any(pool.waiting(board, now, r) for r in self.sizes)

