"""Machines as the board sees them: each host its supervisors ran on, its agents, when
it was last seen and whether it is live.

A supervisor records its host with its generation token (the `supervise` op) and renews the token
off the chain (refs/liza/live/<agent>, shared with the remote), so every clone that follows the
remote sees, on the board with its effective leases, each machine's newest renewal. A machine is:

- **live**: one of its supervisors holds an unexpired token;
- **unreachable**: its newest token expired without being given back: the machine died, or is
  cut off from the remote (nobody can tell which from the board; both stop renewing);
- **gone**: every supervisor it ran ended cleanly (gave its token back).

Besides, a machine the human drained (`git liza drain`) is **DRAINING** while one of its agents
still holds a task and **DRAINED** once none does; a drained machine not seen yet is listed too.

Pure: the board and the time in, the rows out.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from gitliza.core import clock

from gitliza.core.presence import placement as fleet
from gitliza.core.board import Board
from gitliza.core.model import Supervisor

LIVE, UNREACHABLE, GONE = "live", "unreachable", "gone"
DRAINING, DRAINED = "DRAINING", "DRAINED"


@dataclass
class Machine:
    host: str
    status: str = GONE
    agents: list[str] = field(default_factory=list)
    live_agents: list[str] = field(default_factory=list)
    last_seen: str | None = None  # the newest renewal of its tokens (expiry minus the lease)
    tasks: list[str] = field(default_factory=list)  # tasks its live or silent agents hold
    drain: str | None = None  # DRAINING | DRAINED once the human drained it, else None
    labels: list[str] = field(default_factory=list)  # what its live supervisors offer

    def to_json(self) -> dict[str, object]:
        return {"host": self.host, "status": self.status, "agents": self.agents,
                "live_agents": self.live_agents, "last_seen": self.last_seen,
                "tasks": self.tasks, "drain": self.drain, "labels": self.labels}


def machines(board: Board, now: str) -> list[Machine]:
    """One row per host, live ones first, then by name."""
    if not board.initialized:
        return []
    lease = board.config.lease_duration
    t_now = clock.to_epoch(now)
    rows: dict[str, Machine] = {}
    for sup in board.values("supervisors"):
        assert isinstance(sup, Supervisor)
        m = rows.setdefault(sup.host or "(unknown host)", Machine(sup.host or "(unknown host)"))
        m.agents.append(sup.agent)
        seen = sup.started if sup.expires is None else \
            clock.from_epoch(max(clock.to_epoch(sup.started), clock.to_epoch(sup.expires) - lease))
        if m.last_seen is None or clock.to_epoch(seen) > clock.to_epoch(m.last_seen):
            m.last_seen = seen
        if sup.expires is None:
            continue
        if clock.to_epoch(sup.expires) > t_now:
            m.status = LIVE
            m.live_agents.append(sup.agent)
            m.labels.extend(x for x in sup.labels if x not in m.labels)
        elif m.status != LIVE:
            m.status = UNREACHABLE
        a = board.agent(sup.agent)
        if a is not None and a.current_task:
            m.tasks.append(a.current_task)
    for host in board.control.drained:
        rows.setdefault(host, Machine(host))  # drained before it was seen: it starts drained
    order = {LIVE: 0, UNREACHABLE: 1, GONE: 2}
    for m in rows.values():
        if m.host in board.control.drained:
            m.drain = DRAINING if m.tasks else DRAINED
        m.labels.sort()
        m.agents.sort()
        m.live_agents.sort()
        m.tasks.sort()
    return sorted(rows.values(), key=lambda m: (order[m.status], m.host))


def status_line(board: Board, now: str) -> str | None:
    """`status`'s one line on machines, when there is something to tell: more than one machine,
    or one that is unreachable (dead or cut off)."""
    found = machines(board, now)
    if len(found) < 2 and not any(m.status == UNREACHABLE or m.drain for m in found):
        return None
    parts = []
    for m in found:
        what = m.status.upper() if m.status == UNREACHABLE else m.status
        what += f", {m.drain}" if m.drain else ""
        if not m.agents:  # drained before any supervisor of it started
            parts.append(f"{m.host} {m.drain} (not seen yet)")
            continue
        held = f"; holds {', '.join(m.tasks)}" if m.tasks and m.status == UNREACHABLE else ""
        parts.append(f"{m.host} {what} ({', '.join(m.agents)}{held})")
    return "machines: " + ", ".join(parts) + " (`git liza machines`)"


def label_lines(board: Board, now: str, agent: str | None = None) -> list[str]:
    """`ready`'s and `status`'s lines on work no machine takes: a claimable task that needs a
    label no live supervisor on an undrained machine offers, and, for `agent`, that its own
    machine is drained."""
    out = []
    # Only a task that needs a label can wait for one: without any, the claimable tasks (a pass
    # over the board, and the invariants module) are not needed.
    needy = any(t.needs for t in board.tasks())
    if needy:
        from gitliza.core.invariants import claimable
    for t, missing in fleet.label_waits(board, now, claimable(board, now) if needy else []):
        out.append(f"{t.id} waits for label {', '.join(missing)}: no live, undrained machine "
                   f"offers it (`git liza team --labels {','.join(missing)}` on one that has it)")
    host = fleet.drained_machine(board, agent) if agent is not None else None
    if host is not None:
        out.append(f"machine {host} is drained: {agent} takes no new work "
                   f"(`git liza undrain {host}`)")
    return out
