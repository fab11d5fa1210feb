"""What the board page shows, as data: `status --json` (gitliza/services/views/) plus what a
human watching the team needs next to it (the supervisors' generations, the journals, the circuit
breaker, the watcher's alarms, the last transitions). The board is read once, at one commit, so
every panel of a page shows the same state."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gitliza.core import clock

from gitliza.core.encoding import codec
from gitliza.core.ops.leases import lease_live
from gitliza.services.views.data import log_entries, status_data

if TYPE_CHECKING:
    from gitliza.services.api import Liza

RECENT = 12
JOURNAL = 20  # the newest anomalies / notes / discoveries a page lists


def board_view(liza: Liza, watcher: Any = None) -> dict[str, Any]:
    """The status view, and the rest of the board page's panels, at one state commit.
    `watcher`: a gitliza/governance/watch.py Watcher over `liza`'s store for the alarms (None:
    no alarms)."""
    now = liza.now()
    if liza.store.tip() is None:  # no board yet: the page says how to make one, and follows
        return {"state": None, "now": now}
    data = status_data(liza)
    state = data["state"]
    board = liza.store.live_overlay(liza.store.board(state)[0])  # the leases with renewals
    data["now"] = now
    sups = {s.agent: s for s in board.values("supervisors")}
    hb = board.config.heartbeat_interval
    from gitliza.core.agents.teammodels import for_member
    for a in data["agents"]:
        sup = sups.get(a["id"])
        a["generation"] = sup.generation if sup is not None else None
        # A stopped or expired supervisor is not alive, whatever lease its task still has.
        a["alive"] = a.get("supervisor") not in ("stopped", "expired") and \
            alive(a, None if sup is None else sup.expires, hb, now)
        chosen = for_member(board.config.models, str(a.get("role")), a["id"])  # the board's pick
        a["model"] = None if chosen is None else ":".join(x for x in chosen if x)
    data["anomalies"] = _newest([codec.encode(x) for x in board.values("anomalies")], "timestamp")
    data["human_notes"] = _newest([codec.encode(x) for x in board.values("human_notes")],
                                  "timestamp")
    data["discovered"] = data["discovered"][-JOURNAL:]
    data["circuit_breaker"] = codec.encode(board.circuit_breaker)
    data["alarms"] = alarm_list(watcher, now) if watcher is not None else None
    data["recent"] = log_entries(liza, RECENT, at=state, everything=False)
    return data


def alive(agent: dict[str, Any], supervisor_expires: str | None, heartbeat_interval: int,
          now: str) -> bool:
    """Alive: its supervisor's token or its lease still runs, or it beat within two intervals."""
    if lease_live(supervisor_expires, now) or lease_live(agent.get("lease_expires"), now):
        return True
    beat = agent.get("heartbeat")
    return isinstance(beat, str) and \
        clock.to_epoch(now) - clock.to_epoch(beat) <= 2 * heartbeat_interval


def alarm_list(watcher: Any, now: str) -> list[dict[str, str]]:
    """The watcher's active alarms now (what `git liza watch` and `top` show): its facts (the
    board, the time of the last state commit, a pause, a checkpoint) through core/reports/alarms.py.
    The caller keeps the Watcher with its repository handle (top's cache keeps each store alive
    for the life of the process, which a server that reopens its handle cannot afford)."""
    from gitliza.core.reports import alarms
    watcher.now = lambda: now
    board, facts = watcher.read()
    return [{"level": a.level.value, "text": a.text} for a in alarms.evaluate(board, facts)]


def _newest(items: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    return sorted(items, key=lambda x: str(x.get(key, "")), reverse=True)[:JOURNAL]
