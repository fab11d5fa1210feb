"""`git liza top`: a live terminal view of the board.

`snapshot` reads what one frame shows (the board at the tip, the last transitions, the alarms);
`render` turns a snapshot and the time into rich renderables (pure: tests render it to a
fixed-width Console); `run` keeps a rich Live screen up to date. It redraws when the board ref
changes (gitliza/git/refwatch.py, no polling) and, only while a lease or review lease is
counting down, once a second for the countdowns; the board is re-read only when the tip moved.

Alarms are the watcher's (gitliza/governance/watch.py gathers the facts the board does not hold,
core/reports/alarms.py evaluates them), re-evaluated for every frame since they move with the
clock; `alarm_source` is the extension point for anything else that can say what is wrong.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

from gitliza.core import clock
from gitliza.core.board import Board
from gitliza.core.model import Task
from gitliza.core.states import TaskState
from gitliza.core.terminal import safe_line

if TYPE_CHECKING:
    from gitliza.services.api import Liza

RECENT = 8
_ORDER = {s: i for i, s in enumerate(TaskState)}
_STATUS_STYLE = {
    TaskState.CLAIMED: "cyan", TaskState.READY_FOR_REVIEW: "magenta",
    TaskState.APPROVED: "green", TaskState.REJECTED: "yellow", TaskState.BLOCKED: "red",
    TaskState.INTEGRATION_FAILED: "red", TaskState.MERGED: "green dim",
}

# (Liza, now) -> [(level, text)] active now, or None: no alarm source here.
AlarmSource = Callable[[Any, str], "list[tuple[str, str]] | None"]


# One watcher per store for the life of the view: a frame is drawn every second while a lease
# runs, and making a watcher finds the main worktree (opening the repository) each time.
_WATCHERS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def watcher_alarms(liza: Liza, now: str) -> list[tuple[str, str]] | None:
    """What `git liza watch` would say is active now (its facts: the board, the time of the last
    state commit, a pause, a `.liza/CHECKPOINT` file)."""
    from gitliza.core.reports import alarms
    from gitliza.governance.watch import Watcher
    w = _WATCHERS.get(liza.store)
    if w is None:
        w = _WATCHERS[liza.store] = Watcher(liza.store, notify=False, send=False)
    w.now = lambda: now
    board, facts = w.read()
    return [(a.level.value, a.text) for a in alarms.evaluate(board, facts)]


@dataclass
class Snapshot:
    board: Board
    state: str | None
    recent: list[dict[str, Any]] = field(default_factory=list)  # newest first
    alarms: list[tuple[str, str]] | None = None

    @property
    def counting_down(self) -> bool:
        """Whether a frame changes with the clock alone (a lease is running)."""
        return any(t.lease_expires or t.review_lease_expires for t in self.board.tasks()) or \
            any(a.lease_expires for a in self.board.agents())


def snapshot(liza: Liza, alarm_source: AlarmSource | None = watcher_alarms) -> Snapshot:
    from gitliza.services.views.data import log_entries
    board, commit = liza.store.board()
    snap = Snapshot(board, str(commit.id) if commit is not None else None,
                    log_entries(liza, RECENT))
    refresh_alarms(snap, liza, liza.now(), alarm_source)
    return snap


def refresh_alarms(snap: Snapshot, liza: Liza, now: str, alarm_source: AlarmSource | None) -> None:
    """Alarms depend on the clock too (a lease runs out): re-evaluated for every frame."""
    snap.alarms = alarm_source(liza, now) if alarm_source is not None else None


def countdown(expires: str | None, now: str) -> str:
    """'4m05s' left, or 'expired 12s' ago; '' without a lease."""
    if not expires:
        return ""
    left = clock.to_epoch(expires) - clock.to_epoch(now)
    return _span(left) if left > 0 else f"expired {_span(-left)}"


def ago(ts: str | None, now: str) -> str:
    if not ts:
        return ""
    return f"{_span(max(0, clock.to_epoch(now) - clock.to_epoch(ts)))} ago"


def _span(seconds: int) -> str:
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m"


def _task_agent(t: Task) -> str:
    if t.status == TaskState.READY_FOR_REVIEW and t.reviewing_by:
        return f"{t.assigned_to or ''} / review {t.reviewing_by}"
    return t.assigned_to or ""


def _plain(text: str) -> Any:
    """Board text as a cell: never rich markup (`[link=...]` would plant a link), every control
    character shown escaped (core/terminal.py)."""
    from rich.text import Text
    return Text(safe_line(text))


def render(snap: Snapshot, now: str) -> Any:
    """One frame: header, tasks, agents, alarms, last transitions. Board text is hostile input:
    it goes in as plain, escaped text (`_plain`)."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    b = snap.board
    if not b.initialized:
        return Text("no board here: run `git liza init GOAL` first")
    live = sorted(b.tasks(), key=lambda t: (not t.awaiting_human, _ORDER[t.status], t.priority,
                                            t.id))
    archived = sum(1 for _ in b.values("archive"))
    head = Text.assemble(
        ("gitliza top  ", "bold"), safe_line(f"{b.goal.id} [{b.goal.status}] {b.goal.description}") + "\n",
        f"state {snap.state[:12] if snap.state else '-'}  now {now}  tasks {len(live)} live, "
        f"{archived} archived", *_control(b))

    tasks = Table(title="tasks", title_justify="left", expand=True)
    for col in ("task", "status", "pri", "agent"):
        tasks.add_column(col, no_wrap=col != "agent")
    tasks.add_column("description", no_wrap=True, overflow="ellipsis", ratio=2)
    tasks.add_column("lease", no_wrap=True)
    for t in live:
        lease = t.review_lease_expires if t.status == TaskState.READY_FOR_REVIEW else \
            t.lease_expires
        word = "AWAITING HUMAN" if t.awaiting_human else t.status.value
        tasks.add_row(_plain(t.id), Text(word, style=_STATUS_STYLE.get(t.status, "")),
                      str(t.priority), _plain(_task_agent(t)), _plain(t.description),
                      countdown(lease, now))

    from gitliza.core.presence.supervision import of_agent
    agents = Table(title="agents", title_justify="left", expand=True)
    for col in ("agent", "role", "status", "task", "heartbeat", "lease", "supervisor"):
        agents.add_column(col, no_wrap=True)
    notes: list[str] = []
    from gitliza.core.agents import faults
    for a in sorted(b.agents(), key=lambda a: a.id):
        sup = of_agent(b, a, now)
        waits = faults.wait_line(b, a, now)
        if waits:
            notes.append(waits)
        agents.add_row(_plain(a.id), a.role.value,
                       Text(faults.WAITING, style="bold yellow") if waits else a.status.value,
                       _plain(a.current_task or ""),
                       ago(a.heartbeat, now), countdown(a.lease_expires, now),
                       Text(sup.state.value, style="" if sup.running else "bold yellow"))
        line = sup.line(now)
        if line:
            notes.append(line)

    from gitliza.core.presence.hosts import label_lines
    notes += label_lines(b, now)
    parts: list[Any] = [head, tasks, agents, *_machines(b, now)] + \
        [_plain(n) for n in notes] + [_alarms(snap.alarms)]
    recent = Table(title="last transitions", title_justify="left", expand=True)
    recent.add_column("state", no_wrap=True)
    recent.add_column("time", no_wrap=True)
    recent.add_column("transition")
    for e in snap.recent:
        recent.add_row(e["state"][:12], _plain(e.get("time", "")),
                       _plain(e.get("summary", e.get("error", ""))))
    parts.append(recent)
    return Group(*parts)


def _machines(b: Board, now: str) -> list[Any]:
    """The machines the agents run on (core/presence/hosts.py), once there is more than one or one
    is unreachable or drained: nothing for a one-machine team with no news."""
    from rich.table import Table
    from rich.text import Text

    from gitliza.core.presence.hosts import UNREACHABLE, machines
    found = machines(b, now)
    if len(found) < 2 and not any(m.status == UNREACHABLE or m.drain for m in found):
        return []
    table = Table(title="machines", title_justify="left", expand=True)
    for col in ("machine", "state", "agents", "last seen", "holds", "labels"):
        table.add_column(col, no_wrap=col != "agents")
    for m in found:
        word = m.status + (f" {m.drain}" if m.drain else "")
        style = "bold red" if m.status == UNREACHABLE else "bold yellow" if m.drain else ""
        table.add_row(_plain(m.host), Text(word, style=style), _plain(", ".join(m.agents)),
                      ago(m.last_seen, now) if m.last_seen else "never",
                      _plain(", ".join(m.tasks)), _plain(", ".join(m.labels)))
    return [table]


def _control(b: Board) -> list[tuple[str, str]]:
    """The levers a human pulled (pause, abort, checkpoint): what every agent obeys right now."""
    c = b.control
    flags = [(safe_line(f"  ABORTED by {c.aborted_by}"), "bold red")] if c.aborted else []
    if c.paused:
        flags.append((safe_line(f"  PAUSED by {c.paused_by}"), "bold yellow"))
    if b.sprint.status == "CHECKPOINT":
        flags.append((safe_line(f"  CHECKPOINT ({c.checkpoint_trigger or 'manual'})"),
                      "bold yellow"))
    return flags


def _alarms(alarms: Sequence[tuple[str, str]] | None) -> Any:
    from rich.text import Text
    if alarms is None:
        return Text("alarms: not available (no alarm source)", style="dim")
    if not alarms:
        return Text("alarms: none", style="green")
    out = Text("alarms:\n", style="bold")
    for level, text in alarms:
        out.append(f"  {level.upper():8} {safe_line(text)}\n", style="red" if level == "critical"
                   else "yellow")
    return out


def frame_text(snap: Snapshot, now: str, width: int = 100) -> str:
    """A frame as plain text at a fixed width (what `top --once` prints when piped)."""
    import io

    from rich.console import Console
    console = Console(width=width, file=io.StringIO(), color_system=None, record=True)
    console.print(render(snap, now))
    return console.export_text()


def run(liza: Liza, alarm_source: AlarmSource | None = watcher_alarms,
        console: Any = None) -> None:
    """Keep the view up until interrupted."""
    from rich.live import Live

    from gitliza.git.refwatch import RefWatcher

    with RefWatcher(liza.store.repo.path, control_files=False) as watcher:
        snap = snapshot(liza, alarm_source)
        with Live(render(snap, liza.now()), console=console, screen=True,
                  auto_refresh=False) as live:
            while True:
                changed = watcher.wait(timeout=1.0 if snap.counting_down else None)
                now = liza.now()
                if changed or snap.state != _tip(liza):
                    snap = snapshot(liza, alarm_source)
                else:
                    refresh_alarms(snap, liza, now, alarm_source)
                live.update(render(snap, now), refresh=True)


def _tip(liza: Liza) -> str | None:
    tip = liza.store.tip()
    return str(tip) if tip is not None else None

