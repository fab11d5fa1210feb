"""A member's ordered fallback of agent CLIs (docs/agents.md "Route around it"): `models`
`coder=claude:opus,codex`, or `git liza agent --cli claude,codex`.

Before each launch the supervisor runs the first CLI of its list whose shared provider wait
(team/provider.py) is over and whose login check passes (team/logins.py); so a rate-limited or
spent first CLI hands the next run to the second, and gets it back once its reset has passed.
When a run ended on the provider's fault the supervisor records the wait (every supervisor of
the machine sees it) but does not sit it out while another CLI is free; before that run's work
is taken up by another CLI its worktree is in the attic (commits and uncommitted edits: the
session keeps a failed run's, team/sessions.py; this module one the CLI exited 0 from). When
every CLI of the list waits, the supervisor waits for the earliest reset, and its board record
says so ("all of claude, codex waiting"): the PROVIDER alarm, at once.
"""
from __future__ import annotations

import random
import time
from typing import Callable, Sequence

import pygit2

from gitliza import agentcli
from gitliza.agentcli import Profile
from gitliza.core.agents import teammodels, wake
from gitliza.core.agents.faults import HUMAN, End, Ending
from gitliza.core.states import Role
from gitliza.core.agents.wake import Hold
from gitliza.errors import LizaError
from gitliza.services.api import Liza
from gitliza.team import runner
from gitliza.team.logins import not_ready
from gitliza.team.provider import ProviderWaits
from gitliza.team.sessions import Sessions
from gitliza.team.work import Job


def profiles(cli: str | None, model: str | None, command: Sequence[str]) -> list[Profile]:
    """The supervisor's CLIs in order (`--cli claude:opus,codex`; `--model` is the first's), each
    one's program found now: a wrong name or a missing program is an error before the board
    changes. A `-- COMMAND` is one plain program."""
    chain = teammodels.chain(cli) if cli and not command else ((None, None),)
    out = [agentcli.with_model(agentcli.PLAIN if command else agentcli.profile(c),
                               m or (model if i == 0 else None)) for i, (c, m) in enumerate(chain)]
    for p in out:
        runner.require(command[0] if command else p.executable)
    return out


class Fallback:
    """The supervisor's provider side: the waits of each CLI of its list, the one it runs now."""

    def __init__(self, liza: Liza, profiles: Sequence[Profile], command: Sequence[str],
                 log: Callable[[str], None], stopping: Callable[[], bool], role: Role) -> None:
        self.liza, self.log, self.role = liza, log, role
        self.profiles = list(profiles)
        # A wait ends on the supervisor's stop and on the board's ABORT: a human who sees every
        # CLI waiting (an hour, a week) may stop the team without signalling each supervisor.
        def ends() -> bool:
            return stopping() or wake.hold(liza.board()) == Hold.ABORT
        self.waits = [ProviderWaits.of(liza, p, command, log, ends) for p in self.profiles]
        self.at = 0  # the CLI the next run uses
        self.faulted = False  # the last run ended on its provider's fault, its work not kept

    @property
    def current(self) -> ProviderWaits:
        return self.waits[self.at]

    def route(self, job: Job, sessions: Sessions) -> None:
        """Before a launch: the CLI it uses (the sessions' profile), said when it changes."""
        if len(self.waits) < 2:
            return
        now = time.time()
        left = [self._left(w, p, now) for w, p in zip(self.waits, self.profiles)]
        i = teammodels.pick(left)
        everyone = ", ".join(w.cli for w in self.waits) if all(s > 0 for s in left) else ""
        for w in self.waits:
            w.all_waiting = everyone
        if i == self.at:
            return
        old, new = self.waits[self.at], self.waits[i]
        if self.faulted:
            self._keep(job, f"its run with {old.cli} ended by the provider, "
                            f"before the next with {new.cli}")
        self.faulted = False
        said = self._said(old, now)
        if not everyone:  # else the wait's own line says it ("all of claude, codex waiting")
            self.log(f"{said}; next run with {new.cli}" if said else
                     f"next run with {new.cli} (its wait is over)")
        self.at = i
        sessions.profile = self.profiles[i]

    def _left(self, w: ProviderWaits, p: Profile, now: float) -> float:
        """Seconds until this CLI may run: its shared wait; never, while it is not logged in."""
        state = w.shared.read()
        left = max(0.0, float(state.get("until", 0) or 0) - now)
        if left <= 0 and p.logged_in is not None and not_ready([p.name]):
            return float("inf")
        return left

    @staticmethod
    def _said(w: ProviderWaits, now: float) -> str:
        """`claude rate limited until 14:05:00Z (5-hour limit)`, while its wait is on."""
        state = w.shared.read()
        until = float(state.get("until", 0) or 0)
        if until <= now:
            return ""
        try:
            end = End(state.get("end", "rate_limited"))
        except ValueError:
            end = End.RATE_LIMITED
        window = state.get("window") if isinstance(state.get("window"), str) else None
        return Ending(end, 0, "", None if end in HUMAN else int(until), window).text(w.cli)

    def _keep(self, job: Job, why: str) -> None:
        """A coder's worktree to the attic before another CLI works in it."""
        if self.role != Role.CODER or job.task is None:
            return
        from gitliza.services.lifecycle.cleanup import keep_state
        try:
            for note in keep_state(self.liza, job.task, why):
                self.log(f"{note} (kept before another CLI takes the task up)")
        except (LizaError, OSError, pygit2.GitError) as e:
            self.log(f"{job.task}: cannot keep the worktree in the attic: {e}")

    # -- the supervisor's calls, for the CLI it runs now ------------------------------------------
    def before(self, sleep: Callable[[float], None]) -> bool:
        return self.current.before(sleep)

    def waited(self, ending: Ending | None, sleep: Callable[[float], None], once: bool) -> bool:
        """After a run: whether it ended on the provider's fault. With a fallback list the wait
        is recorded for all, not sat out here: the next launch's `route` picks the CLI."""
        fault = ending is not None and ending.fault and not once
        # A failed run's worktree is in the attic already (team/sessions.py `_keep`, after an
        # exit other than 0): kept here only when the CLI exited 0 all the same.
        self.faulted = fault and ending is not None and ending.code == 0
        if fault and ending is not None and len(self.waits) > 1:
            w = self.current
            w.shared.fault(str(self.liza.agent), ending, time.time(), random.random())
            return True
        return self.current.waited(ending, sleep, once)

    def why(self, ending: Ending | None) -> str:
        return self.current.why(ending)
