"""Why an agent run ended, and what a provider's fault makes the supervisor do (pure).

Each agent CLI's module (gitliza/agentcli/) reads its CLI's own output line by line into `Sign`s
(a 429 with its reset, a 401, an overload...); `judge` turns the signs, the exit code and our own
stop into one `Ending`. A provider's fault (not logged in, rate limited, quota spent, overloaded,
network unreachable) is nobody's failure: the supervisor waits (`wait_seconds`: the reset the
provider gave, else a capped, jittered backoff) and launches again, and the run counts toward
no limit of the coder's (docs/agents.md "When the provider is in trouble").

A `-- COMMAND` agent (any program) says the same with one line of its output,

    gitliza-end: rate_limited until=2026-12-05T14:05:00Z 5-hour limit

(`until=` an ISO time or epoch seconds, optional; the rest a note), or with an exit code:
75 (EX_TEMPFAIL) rate limited, 77 (EX_NOPERM) not logged in.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Iterable, Mapping, Sequence

from gitliza.core import clock
from gitliza.core.board import Board
from gitliza.core.model import Agent
from gitliza.errors import ValidationError

EXIT_RESTART = 42  # core/agents/runs.py's graceful restart


class End(str, Enum):
    DONE = "done"  # exit 0 (or 42, a graceful restart)
    AGENT_ERROR = "agent_error"  # the CLI or the agent failed on its own
    NOT_LOGGED_IN = "not_logged_in"  # no login, a bad or revoked key
    RATE_LIMITED = "rate_limited"
    QUOTA = "quota"  # a usage limit or credit spent (resets later, or never by itself)
    OVERLOADED = "overloaded"  # the provider is overloaded or down (5xx, 529)
    NETWORK = "network"  # the provider cannot be reached
    CONTEXT_LIMIT = "context_limit"  # the context or the output limit
    KILLED = "killed"  # stopped by a limit of ours (budget, lease lost, stop)
    CRASHED = "crashed"  # killed by a signal, or an exit nothing explains


# The provider's faults: nobody's failure, waited out.
FAULTS = frozenset({End.NOT_LOGGED_IN, End.RATE_LIMITED, End.QUOTA, End.OVERLOADED, End.NETWORK})
# Faults a human must fix (a login, a key): the alarm is raised at once.
HUMAN = frozenset({End.NOT_LOGGED_IN})
# Which sign wins when a run showed several (a 401 explains later connection errors).
_RANK = {End.NOT_LOGGED_IN: 0, End.QUOTA: 1, End.RATE_LIMITED: 2, End.OVERLOADED: 3,
         End.NETWORK: 4, End.CONTEXT_LIMIT: 5, End.AGENT_ERROR: 6}

WORDS = {End.DONE: "done", End.AGENT_ERROR: "agent error", End.NOT_LOGGED_IN: "not logged in",
         End.RATE_LIMITED: "rate limited", End.QUOTA: "quota spent",
         End.OVERLOADED: "provider overloaded", End.NETWORK: "provider unreachable",
         End.CONTEXT_LIMIT: "context limit", End.KILLED: "stopped by gitliza",
         End.CRASHED: "crashed"}


@dataclass(frozen=True)
class Sign:
    """What one line of a CLI's output says about the run's end."""

    end: End
    line: str  # the line (or its message), for people
    reset: int | None = None  # epoch second the limit lifts, when told
    window: str | None = None  # which limit ("5-hour limit")
    final: bool = False  # the CLI's own last word on the run (Claude's error `result`)
    aside: bool = False  # only a delay or a status, its message on another line (Gemini's)


@dataclass(frozen=True)
class Ending:
    end: End
    code: int
    line: str = ""  # the CLI's last meaningful line
    reset: int | None = None
    window: str | None = None

    @property
    def fault(self) -> bool:
        return self.end in FAULTS

    def text(self, cli: str) -> str:
        """`claude rate limited until 14:05:00Z (5-hour limit)`."""
        out = f"{cli} {WORDS[self.end]}"
        if self.reset is not None:
            out += f" until {clock.from_epoch(self.reset)}"
        if self.window:
            out += f" ({self.window})"
        return out


def judge(signs: Sequence[Sign], code: int, stopped_by: str | None, last: str = "",
          exits: Mapping[int, End] | None = None) -> Ending:
    """The run's end from the signs its output gave (oldest first), its exit code and why we
    stopped it (None: it exited by itself). A sign counts only for a run that failed: a CLI
    that retried past a 429 and finished did its work."""
    fault = best(signs)
    said = fault.line if fault is not None else last
    if stopped_by is not None:
        # Our stop on a provider's sign (the CLI would have retried for minutes) is the
        # provider's fault; any other stop is ours.
        if fault is not None and fault.end in FAULTS and stopped_by.startswith(PROVIDER_STOP):
            return Ending(fault.end, code, said, fault.reset, fault.window)
        return Ending(End.KILLED, code, stopped_by)
    failed = code not in (0, EXIT_RESTART) or any(s.final for s in signs)
    if not failed:
        return Ending(End.DONE, code, last)
    if fault is not None:
        return Ending(fault.end, code, said, fault.reset, fault.window)
    if exits and code in exits:  # the CLI's own exit codes (Gemini's 41: no login)
        return Ending(exits[code], code, said)
    if code == 75:
        return Ending(End.RATE_LIMITED, code, said)
    if code == 77:
        return Ending(End.NOT_LOGGED_IN, code, said)
    if code < 0 or code >= 128:
        return Ending(End.CRASHED, code, said)
    return Ending(End.AGENT_ERROR, code, said)


def best(signs: Iterable[Sign]) -> Sign | None:
    """The sign that explains the run: the most telling kind, the latest of that kind; its
    reset, if it gave none, the latest a fault's sign gave (Gemini says the kind and the delay
    on two lines)."""
    out: Sign | None = None
    reset: int | None = None
    named: Sign | None = None  # the provider naming its limit (Claude's rate_limit_event)
    signs = list(signs)
    told = [s for s in signs if not s.aside] or signs  # an aside explains only when alone
    for s in told:
        if out is None or _RANK.get(s.end, 9) <= _RANK.get(out.end, 9):
            out = s
    for s in signs:
        if s.end in FAULTS and s.reset is not None:
            reset = s.reset
        if s.window and s.end in (End.RATE_LIMITED, End.QUOTA):
            named = s
    if out is not None and named is not None and out.end in (End.RATE_LIMITED, End.QUOTA):
        out = Sign(named.end, out.line, named.reset or out.reset, named.window, out.final)
    if out is not None and out.end in HUMAN:
        return Sign(out.end, out.line, None, out.window, out.final)  # no reset lifts a bad key
    if out is not None and out.reset is None and reset is not None and out.end in FAULTS:
        out = Sign(out.end, out.line, reset, out.window, out.final)
    return out


PROVIDER_STOP = "provider: "  # the prefix of the supervisor's stop on a provider's sign


def stop_now(signs: Sequence[Sign], now: float) -> Sign | None:
    """A sign the supervisor stops the agent on, rather than let the CLI retry on its own for
    minutes (Claude retries a 401 ten times, a 429 for more than 5 minutes): a bad login or a
    spent quota at once; a limit that lifts more than LONG seconds from now at once too (the
    CLI would sit out an hour unseen: the supervisor's wait is shown and shared); a rate limit,
    an overload or a dead network once the CLI said it three times."""
    if not signs:
        return None
    s = signs[-1]
    if s.end in (End.NOT_LOGGED_IN, End.QUOTA):
        return s
    if s.end in (End.RATE_LIMITED, End.OVERLOADED) and s.reset is not None and \
            s.reset - now > LONG:
        return s
    if s.end in (End.RATE_LIMITED, End.OVERLOADED, End.NETWORK) and \
            sum(1 for x in signs if x.end in FAULTS) >= 3:
        return best(x for x in signs if x.end in FAULTS)
    return None


LONG = 60  # seconds: a reset further than this is waited out by the supervisor, not the CLI


# -- waiting ---------------------------------------------------------------------------------------
BACKOFF_BASE = 30  # seconds: the first wait without a reset
BACKOFF_CAP = 900  # the longest wait without a reset (a login is re-checked this often)
RESET_CAP = 8 * 86400  # a reset further than this is not believed (a weekly limit fits)
JITTER = 0.2  # +-20%: the supervisors of several machines do not come back at once


def wait_seconds(ending: Ending, now: float, attempt: int, rand: float) -> float:
    """Seconds to wait before the next launch after `attempt` provider faults in a row (1: the
    first); `rand` in [0, 1) from the caller. The backoff, base x 2^(attempt-1) capped and
    jittered, or the provider's reset when it is later (plus a few seconds: its clock and
    ours): a provider that says "retry in 5 s" at every attempt still gets at most 3 launches
    in 2 minutes."""
    n = max(1, attempt)
    backoff = float(min(BACKOFF_CAP, BACKOFF_BASE << min(n - 1, 20)))
    backoff *= 1 - JITTER + 2 * JITTER * rand
    if ending.reset is not None and 0 < ending.reset - now <= RESET_CAP:
        return max(backoff, float(ending.reset - now) + 2.0 + 8.0 * rand)
    return backoff


# -- reading lines ---------------------------------------------------------------------------------
# What every CLI's plain text may say (its stderr, an error line of its JSON), checked after the
# CLI's own reading. Ordered: the first match wins.
_STATUS = r"(?:status|code|HTTP|error)\W{0,4}"  # a status as a CLI prints it, not any number
_TEXT: tuple[tuple[End, re.Pattern[str]], ...] = (
    (End.NOT_LOGGED_IN, re.compile(
        r"not logged in|please run /login|invalid[ _-]?(x-)?api[ _-]?key|"
        r"incorrect api key|api key not valid|API_KEY_INVALID|authentication[_ ]error|"
        r"authentication_failed|401 unauthori[sz]ed|" + _STATUS + r"401\b|missing (an )?api "
        r"key|no api key|OAuth token (has )?expired|login required|invalid_api_key|"
        r"API_KEY environment variable|Missing environment variable", re.I)),
    (End.QUOTA, re.compile(
        r"insufficient_quota|exceeded your current quota|usage limit|credit balance|"
        r"out of credits|quota exceeded", re.I)),
    (End.RATE_LIMITED, re.compile(
        r"rate[ _-]?limit|too many requests|" + _STATUS + r"429\b|RESOURCE_EXHAUSTED|"
        r"rate_limited|resource (has been )?exhausted", re.I)),
    (End.OVERLOADED, re.compile(
        r"overloaded|" + _STATUS + r"(529|50[234])\b|service unavailable|server_error|"
        r"internal server error|bad gateway|\bUNAVAILABLE\b", re.I)),
    (End.NETWORK, re.compile(
        r"ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|connection refused|"
        r"connection error|error sending request|failed to connect|network is unreachable|"
        r"could not resolve|fetch failed|unable to connect|stream disconnected|connect error",
        re.I)),
    (End.CONTEXT_LIMIT, re.compile(
        r"context[ _-]?(length|window|limit)|prompt is too long|maximum context|too many tokens|"
        r"output token maximum|context_length_exceeded", re.I)),
)
_COMMAND = re.compile(r"^gitliza-end:\s*(\w+)(?:\s+until=(\S+))?\s*(.*)$")
_RETRY_IN = re.compile(r"(?:try again in|retry(?:ing)? in|retry after|retryDelay\W+)\s*"
                       r"(\d+(?:\.\d+)?)\s*(ms|s|m|h)?", re.I)


def text_sign(text: str, now: float) -> Sign | None:
    """A sign in plain text (an error message, a stderr line): its kind, and the wait it names
    ("try again in 20s")."""
    for end, pat in _TEXT:
        if pat.search(text):
            return Sign(end, _clip(text), retry_in(text, now))
    return None


def command_sign(text: str) -> Sign | None:
    """A `-- COMMAND` agent's own word: `gitliza-end: KIND [until=TIME] [note]`."""
    m = _COMMAND.match(text.strip())
    if m is None:
        return None
    try:
        end = End(m.group(1).lower())
    except ValueError:
        return None
    return Sign(end, _clip(text.strip()), parse_time(m.group(2)), m.group(3).strip() or None,
                final=True)


def retry_in(text: str, now: float) -> int | None:
    m = _RETRY_IN.search(text)
    if m is None:
        return None
    n = float(m.group(1))
    unit = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[(m.group(2) or "s").lower()]
    return int(now + n * unit + 0.999)


def parse_time(v: object) -> int | None:
    """A reset as an epoch second, from epoch seconds (or milliseconds) or an ISO time."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        n = int(v)
        return n // 1000 if n > 10 ** 11 else n if n > 0 else None
    if isinstance(v, str):
        s = v.strip()
        if s.isdigit():
            return parse_time(int(s))
        s = re.sub(r"\.\d+", "", s).replace("+00:00", "Z")
        try:
            return clock.to_epoch(s)
        except (ValidationError, ValueError):  # an unreadable time is no reset
            return None
    return None


def _clip(text: str, n: int = 300) -> str:
    t = " ".join(text.split())
    return t if len(t) <= n else t[:n] + "..."


# -- the board's record of a wait -----------------------------------------------------------------
# Agent.provider_wait: `CLI END since TIME [until TIME]: note`, one line (an op's argument).
_WAIT = re.compile(r"^(\S+) (\w+) since (\S+)(?: until (\S+))?(?:: (.*))?$")


@dataclass(frozen=True)
class Wait:
    cli: str
    end: End
    since: str
    until: str | None = None
    note: str = ""

    def record(self) -> str:
        return (f"{self.cli} {self.end.value} since {self.since}"
                + (f" until {self.until}" if self.until else "")
                + (f": {self.note}" if self.note else ""))

    def fix(self) -> str:
        """What a human does about it (the alarm's hint)."""
        if self.end == End.NOT_LOGGED_IN:
            return f"log {self.cli} in (or set its API key), then nothing: the team resumes"
        if self.end == End.QUOTA:
            return f"add credit or raise {self.cli}'s limit, or wait for its reset"
        return f"wait, or check {self.cli}'s provider status and this machine's network"


def parse_wait(text: str | None) -> Wait | None:
    if not text:
        return None
    m = _WAIT.match(text)
    if m is None:
        return None
    try:
        end = End(m.group(2))
    except ValueError:
        return None
    return Wait(m.group(1), end, m.group(3), m.group(4), m.group(5) or "")


WAITING = "WAITING FOR PROVIDER"
ALL_WAITING = "all of"  # a wait's note "all of claude, codex waiting": every fallback spent


def waiting(board: Board, agent: Agent, now: str) -> Wait | None:
    """The wait `agent`'s supervisor recorded, while that supervisor runs (a stopped one's
    record is history, not a wait)."""
    w = parse_wait(agent.provider_wait)
    if w is None:
        return None
    sup = board.get("supervisors", agent.id)
    if sup is None or sup.expires is None or sup.expires <= now:
        return None
    return w


def status_word(board: Board, agent: Agent, now: str) -> str:
    """The agent's status as readers show it: WAITING FOR PROVIDER over the board's state."""
    return WAITING if waiting(board, agent, now) is not None else agent.status.value


def wait_line(board: Board, agent: Agent, now: str) -> str | None:
    """`coder-1: WAITING FOR PROVIDER: claude rate limited until 14:05:00Z (5-hour limit)`."""
    w = waiting(board, agent, now)
    if w is None:
        return None
    return (f"{agent.id}: {WAITING}: {w.cli} {WORDS[w.end]} since {w.since}"
            + (f" until {w.until}" if w.until and w.end not in HUMAN else "")
            + (f" ({w.note})" if w.note else ""))


def alarms(board: Board, down: int, now: str) -> list[tuple[str, str]]:
    """The PROVIDER alarms (core/reports/alarms.py), one per CLI naming its waiting agents: at once when
    a human must act (a refused login, a bad key, every CLI of a member's fallback list
    waiting: team/fallback.py), else once a wait is older than `down`
    seconds (`alarm_provider_down`). Resolved when their supervisors say it answers."""
    by_cli: dict[tuple[str, str], list[tuple[str, Wait]]] = {}
    for a in sorted(board.agents(), key=lambda a: a.id):
        w = waiting(board, a, now)
        if w is None:
            continue
        human = w.end in HUMAN
        spent = w.note.startswith(f"{ALL_WAITING} ")  # every CLI of its fallback list waits
        if human or spent or clock.to_epoch(now) - clock.to_epoch(w.since) > down:
            why = "human" if human else "spent" if spent else "down"
            by_cli.setdefault((w.cli, why), []).append((a.id, w))
    out = []
    for (cli, why), waits in sorted(by_cli.items()):
        w = waits[0][1]
        who = ", ".join(agent for agent, _ in waits)
        since = min(x.since for _, x in waits)
        out.append((cli, f"PROVIDER: {cli} {WORDS[w.end]} for {who} since {since}"
                    + (f" until {w.until}" if w.until and why != "human" else "")
                    + f" \u2014 {w.note if why != 'down' and w.note else w.fix()}"))
    return out


def alarm_times(board: Board, down: int, now: str) -> list[str]:
    """When a wait becomes an alarm (core/reports/alarms.py `next_deadline`)."""
    out = []
    for a in board.agents():
        w = waiting(board, a, now)
        if w is not None and w.end not in HUMAN:
            out.append(clock.plus(w.since, down + 1))
    return out
