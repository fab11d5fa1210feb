"""What governance reads from the board's history: the logged ops (for the circuit breaker's
evidence) and each sprint's span and final board (for per-sprint metrics). The history is the
first-parent chain of refs/liza/state, which git gives for free."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import pygit2

from gitliza.core import clock

from gitliza.core.encoding import record

from gitliza.core.reports import metrics
from gitliza.core.board import Board
from gitliza.core.agents.circuit import Logged
from gitliza.core.model import Metrics
from gitliza.errors import LizaError
from gitliza.git.store import Store


def logged(store: Store, at: str | None = None, since: str | None = None) -> list[Logged]:
    """The state commits up to `at`, oldest first (stopping, going back, before `since`)."""
    out: list[Logged] = []
    for c in store.history(at):
        when = clock.from_epoch(c.author.time)
        if since is not None and when < since:
            break
        out.append(_logged(c, when))
    out.reverse()
    return out


def _logged(c: pygit2.Commit, when: str) -> Logged:
    try:
        t = record.parse(c.message).trailers
    except LizaError:
        return Logged(str(c.id), when, "unreadable", c.author.name)
    return Logged(str(c.id), t.get("Liza-Time", when), t["Liza-Op"], t["Liza-Actor"],
                  t.get("Liza-Task"))


@dataclass(frozen=True)
class SprintSpan:
    sprint: str
    goal: str
    started: str | None
    ended: str | None       # None: the current sprint
    last_commit: str        # the last state commit of the sprint
    metrics: Metrics


def _spans(store: Store, at: str | None) -> Iterator[tuple[str, str, pygit2.Commit, Board]]:
    seen: str | None = None
    for c in store.history(at):  # newest first
        board = store.board_at(c)
        try:
            sid, gid = board.sprint.id, board.goal.id
        except LizaError:
            continue
        if sid != seen:
            seen = sid
            yield sid, gid, c, board


def sprint_metrics(store: Store, at: str | None = None) -> list[SprintSpan]:
    """Each sprint of the history, oldest first, with its metrics: the task states at its last
    commit and the events of its own span (a later sprint does not recount earlier events)."""
    spans = list(_spans(store, at))
    spans.reverse()
    out: list[SprintSpan] = []
    for i, (sid, gid, commit, board) in enumerate(spans):
        started = board.sprint.timeline.started
        ended = board.sprint.timeline.ended
        if ended is None and i + 1 < len(spans):
            ended = spans[i + 1][3].sprint.timeline.started
        m = metrics.compute(board.all_tasks(), since=started, until=ended, sprint_started=started)
        out.append(SprintSpan(sid, gid, started, ended, str(commit.id), m))
    return out
