"""A supervisor whose model provider refuses it waits, and says so once (docs/agents.md "When the
provider is in trouble").

After a run that ended on a provider's fault (core/agents/faults.py: not logged in, rate limited,
quota spent, overloaded, unreachable) the supervisor neither counts the run against its agent nor
relaunches at once: it waits until the reset the provider gave (else a capped, jittered backoff),
keeping its task's lease, with one line (`coder-1: claude rate limited until 14:05:00Z (5-hour
limit); waiting 58m`) and its agent marked on the board (`provider-wait`: WAITING FOR PROVIDER in
`status`, `top` and the web board; an alarm when a human must act).

The supervisors of one machine that run the same CLI share the wait: a small file per CLI under
the git common dir (`liza-provider/CLI.json`, under a lock). One of them hits the limit, all of
them wait for the same reset; when it has passed, one of them (the first to look) probes with its
next launch while the others keep waiting, until the probe's run ends: the provider back (the file
is removed, everyone launches) or still refusing (a new wait for all).
"""
from __future__ import annotations

import fcntl
import json
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from gitliza.agentcli import Profile
from gitliza.core import clock
from gitliza.core.agents import faults
from gitliza.core.ops.provider import ProviderWaitOp
from gitliza.core.agents.faults import End, Ending, Wait
from gitliza.core.presence.supervision import ago
from gitliza.errors import LeaseLost, LizaError
from gitliza.git.repository import common_dir
from gitliza.services.api import Liza

DIR = "liza-provider"
PROBE = 900.0  # seconds a probe's run may take before another supervisor probes in its place
RECHECK = 10.0  # a waiting supervisor looks at the shared wait this often (a probe's success)


@dataclass
class Shared:
    """The wait of every supervisor of this machine for one CLI (a file under a lock)."""

    path: Path

    @classmethod
    def of(cls, common_dir: Path, cli: str) -> Shared:
        d = common_dir / DIR
        d.mkdir(mode=0o700, exist_ok=True)
        return cls(d / f"{cli}.json")

    def _locked(self, change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> Any:
        with open(self.path.with_suffix(".lock"), "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                state = json.loads(self.path.read_text())
            except (OSError, ValueError):
                state = {}
            if not isinstance(state, dict):
                state = {}
            new = change(state)
            if new is None:
                self.path.unlink(missing_ok=True)
            elif new is not state:
                tmp = self.path.with_suffix(".tmp")
                tmp.write_text(json.dumps(new))
                os.replace(tmp, self.path)
            return new

    def read(self) -> dict[str, Any]:
        try:
            state = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return state if isinstance(state, dict) else {}

    def gate(self, me: str, now: float) -> tuple[float, dict[str, Any]]:
        """Seconds to wait before a launch (0: go; this supervisor may be the probe), and the
        shared state."""
        out: list[float] = [0.0]

        def change(s: dict[str, Any]) -> dict[str, Any] | None:
            if not s:
                return s
            until = float(s.get("until", 0))
            if until > now:
                out[0] = until - now
                return s
            probe, since = s.get("probe"), float(s.get("probe_since", 0))
            if probe and probe != me and now - since < PROBE:
                out[0] = min(RECHECK, PROBE - (now - since))
                return s
            return {**s, "probe": me, "probe_since": now}

        state = self._locked(change)
        return out[0], state or {}

    def fault(self, me: str, ending: Ending, now: float, rand: float) -> dict[str, Any]:
        """A run ended on the provider's fault: the wait every supervisor keeps now."""
        def change(s: dict[str, Any]) -> dict[str, Any]:
            attempt = int(s.get("attempt", 0)) + 1
            wait = faults.wait_seconds(ending, now, attempt, rand)
            until = max(float(s.get("until", 0)), now + wait)
            since = float(s.get("since", now)) if s else now
            return {"end": ending.end.value, "until": until, "since": since,
                    "attempt": attempt, "by": me, "line": ending.line[:300],
                    "reset": ending.reset, "window": ending.window}
        out: dict[str, Any] = self._locked(change)
        return out

    def clear(self) -> bool:
        """The provider answered: nobody waits any more. Whether there was a wait."""
        had: list[bool] = [False]

        def change(s: dict[str, Any]) -> None:
            had[0] = bool(s)
            return None
        if not self.path.exists():
            return False
        self._locked(change)
        return had[0]


class ProviderWaits:
    """One supervisor's side of it: the gate before a launch, the wait after a faulted run."""

    def __init__(self, liza: Liza, common_dir: Path, cli: str,
                 log: Callable[[str], None], stopping: Callable[[], bool],
                 login: str = "") -> None:
        self.liza, self.cli, self.log, self.login = liza, cli, log, login
        self.shared = Shared.of(common_dir, cli)
        self._stopping = stopping
        self._said: tuple[Any, ...] | None = None  # the wait last announced (once per wait)
        self._recorded: str | None = None  # what the board says of this agent now
        self.all_waiting = ""  # "claude, codex": every CLI of a fallback list waits (fallback.py)

    @classmethod
    def of(cls, liza: Liza, profile: Profile, command: Sequence[str],
           log: Callable[[str], None], stopping: Callable[[], bool]) -> ProviderWaits:
        """A supervisor's waits: keyed by its CLI (a `-- COMMAND` by its program's name)."""
        cli = os.path.basename(command[0]) if command else profile.name
        return cls(liza, common_dir(liza.repo), cli, log, stopping, profile.login)

    def before(self, sleep: Callable[[float], None]) -> bool:
        """Before a launch: wait while this CLI's shared wait is on (another supervisor's limit
        is ours too); `sleep` keeps the work's lease meanwhile. Whether the supervisor stops."""
        while not self._stopping():
            left, state = self.shared.gate(str(self.liza.agent), time.time())
            if left <= 0:
                return False
            self._announce(state, shared=state.get("by") != self.liza.agent)
            sleep(min(left, RECHECK))
        return True

    def waited(self, ending: Ending | None, sleep: Callable[[float], None], once: bool) -> bool:
        """After a run: whether it ended on the provider's fault (then the wait is done, and the
        run counts for nothing); else the provider answered, as far as it says."""
        if ending is not None and ending.fault and not once:
            self.after(ending, sleep)
            return True
        self.ok(ending)
        return False

    def why(self, ending: Ending | None) -> str:
        """What the supervisor's line about a failed run adds: the CLI's own last word."""
        if ending is None or ending.end == End.DONE or not ending.line:
            return ""
        return f"; {ending.text(self.cli)}: {ending.line}"

    def after(self, ending: Ending, sleep: Callable[[float], None]) -> None:
        """A run ended on the provider's fault: the shared wait, announced, then kept."""
        state = self.shared.fault(str(self.liza.agent), ending, time.time(), random.random())
        self._announce(state, shared=False)
        self.before(sleep)

    def ok(self, ending: Ending | None) -> None:
        """A run the provider answered (it did its work, or failed on its own): the wait is
        over for everyone. A run we stopped or that crashed says nothing of the provider."""
        if ending is None or ending.end not in (End.DONE, End.AGENT_ERROR, End.CONTEXT_LIMIT):
            return
        if self.shared.clear() or self._said is not None:
            self.log(f"{self.cli}: provider answering again")
        self._said = None
        self._record(None)

    def _announce(self, state: dict[str, Any], shared: bool) -> None:
        try:
            end = End(state.get("end", "rate_limited"))
        except ValueError:
            end = End.RATE_LIMITED
        until = float(state.get("until", 0))
        key = (end, int(until), state.get("attempt"), self.all_waiting)
        if key == self._said:
            return
        self._said = key
        human = end in faults.HUMAN  # no reset lifts it: the login is tried again
        ending = Ending(end, 0, str(state.get("line") or ""), None if human else int(until),
                        state.get("window") if isinstance(state.get("window"), str) else None)
        now = clock.from_epoch(time.time())
        line = (f"{ending.text(self.cli)}; {'trying again in' if human else 'waiting'} "
                f"{ago(now, max(now, clock.from_epoch(until)))}"
                + (f" (the wait of {state.get('by')}, same CLI on this machine)" if shared else "")
                + (f": {ending.line}" if ending.line else ""))
        note = (state.get("window") or str(state.get("line") or ""))[:200]
        if human:
            note = fix(self.cli, ending.line, self.login)
            line += f" -- {note}"
        if self.all_waiting:  # the PROVIDER alarm at once: no fallback is left (core/agents/faults.py)
            note = f"{faults.ALL_WAITING} {self.all_waiting} waiting" + (f"; {note}" if note else "")
            line += f" ({faults.ALL_WAITING} {self.all_waiting} waiting)"
        self.log(line)
        since = clock.from_epoch(float(state.get("since") or time.time()))
        self._record(Wait(self.cli, end, since, clock.from_epoch(until),
                          " ".join(note.split())).record())

    def _record(self, wait: str | None) -> None:
        if wait == self._recorded:
            return
        board = self.liza.board()
        me = board.agent(self.liza.agent)
        if me is None or me.provider_wait == wait:
            self._recorded = wait
            return
        try:
            self.liza.do(ProviderWaitOp, wait=wait)
            self._recorded = wait
        except LeaseLost:
            raise
        except LizaError as e:
            self.log(f"provider wait not recorded on the board: {e}")


def fix(cli: str, line: str, login: str = "") -> str:
    """What a human does about a refused login: the variable the CLI's error names, else how
    its profile says it is logged in."""
    import re
    m = re.search(r"`([A-Z][A-Z0-9_]*)`|\$([A-Z][A-Z0-9_]*)|\b([A-Z][A-Z0-9_]*_API_KEY)\b", line)
    if m is not None:
        return f"set {next(g for g in m.groups() if g)} (the key {cli} reads), or log it in"
    return f"log {cli} in: {login}" if login else f"log {cli} in or set its API key"
