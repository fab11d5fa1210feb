"""Which terminal tasks the materialized `.liza/state.yaml` still lists (blackboard-schema.md:
`archive/` holds "terminal-state tasks older than threshold"). The board stores every terminal
task under `archive/` at once; the view follows the schema, so that the original's validator,
which only reads `tasks:`, finds every task a live entry names:

- a task that ended less than `config.archive_after` seconds before the view's state, and
- a terminal task that a live entry references (a live task's `depends_on`, `supersedes` or
  `superseded_by`, the sprint's scope, a handoff, a discovery, a human note),

whatever its age. Pure: the caller gives the end times and the state's time."""
from __future__ import annotations

from typing import Mapping

from gitliza.core import clock
from gitliza.core.board import Board
from gitliza.core.model import Task


def ended_at(t: Task) -> str:
    """When a terminal task ended: its last history entry (the terminal transition)."""
    return t.history[-1].time if t.history else t.created


def referenced(board: Board) -> set[str]:
    """Task ids that the live entries of the board name."""
    out: set[str] = set()
    for t in board.tasks():
        out.update(t.depends_on)
        out.update(t.superseded_by)
        if t.supersedes:
            out.add(t.supersedes)
    scope = board.sprint.scope
    out.update(scope.planned)
    out.update(scope.stretch)
    out.update(board.keys("handoff"))
    for d in board.values("discovered"):
        out.update(x for x in (d.during, d.converted_to_task) if x)
    for n in board.values("human_notes"):
        if n.for_task:
            out.add(n.for_task)
    return out


def recent(ended: Mapping[str, str], now: str, seconds: int) -> set[str]:
    """The tasks of `ended` (id -> end time) that ended at most `seconds` before `now`."""
    cutoff = clock.plus(now, -seconds)
    return {tid for tid, when in ended.items() if when >= cutoff}
