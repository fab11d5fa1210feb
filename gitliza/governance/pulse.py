"""What `git liza watch` says besides its alarms: a goal that starts or ends (a line
at once, its summary with it), and a heartbeat, a one-line state of the board, when the watch
starts and then at most every `EVERY` seconds while nothing else was printed, so a quiet board
reads as watched, not as a hung watcher. `watch --quiet` leaves both out. Times come in; the
caller prints."""
from __future__ import annotations

from collections import Counter

from gitliza.core import clock
from gitliza.core.board import Board

EVERY = 300  # seconds between heartbeat lines at most


class Pulse:
    def __init__(self, every: int = EVERY) -> None:
        self.every = every
        self.goal: tuple[str, str] | None = None
        self.last: str | None = None  # when the last line (ours or an alarm's) was printed

    def spoke(self, now: str) -> None:
        """Another line was printed at `now`: the next heartbeat counts from it."""
        self.last = now

    def lines(self, board: Board, now: str, alarms: int) -> list[str]:
        """The lines due at `now`: a goal's transition, then a heartbeat if one is due."""
        out: list[str] = []
        goal = board.goal if board.initialized else None
        key = (goal.id, str(goal.status)) if goal is not None else None
        if goal is not None and self.goal is not None and key != self.goal:
            ends = [a.summary for a in goal.alignment_history
                    if a.event in ("goal_completed", "goal_aborted")]
            tail = f": {ends[-1]}" if goal.status != "IN_PROGRESS" and ends else \
                f": {goal.description}"
            what = "started" if goal.id != self.goal[0] and goal.status == "IN_PROGRESS" \
                else str(goal.status)
            out.append(f"GOAL {goal.id} {what}{tail}")
        self.goal = key
        if out or self.due(now) == 0:
            out.append(heartbeat(board, alarms))
            self.last = now
        return out

    def due(self, now: str) -> float:
        """Seconds until the next heartbeat (0: due now)."""
        if self.last is None:
            return 0
        return max(0.0, clock.to_epoch(self.last) + self.every - clock.to_epoch(now))


def heartbeat(board: Board, alarms: int) -> str:
    """`watching: goal g-2 IN_PROGRESS; 3 task(s): 1 MERGED, 2 CLAIMED; no alarms`."""
    if not board.initialized:
        return "watching: no board yet"
    goal = board.goal
    tasks = Counter(str(t.status) for t in board.tasks())
    counts = ", ".join(f"{n} {s}" for s, n in sorted(tasks.items()))
    return (f"watching: goal {goal.id} {goal.status}; {sum(tasks.values())} live task(s)"
            f"{': ' + counts if counts else ''}; "
            f"{'no alarms' if not alarms else f'{alarms} alarm(s) active'}")
