"""What one agent run achieved, and what the supervisor does next (pure).

A real agent CLI's exit code says nothing about the task: `claude -p` exits 0 when every tool call
was denied. So the supervisor judges a run by the board: a run that ends with the agent still
holding its task (or, for a planner, facing the same triggers) and nothing moved is a no-progress
run, whatever its exit code. No-progress runs back off (doubling, capped) and after
`max_no_progress_runs` in a row the supervisor gives the work up; whatever happens, no supervisor
starts more than `max_launches_per_minute` agents in any sliding minute.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, Sequence

from gitliza.core.board import Board
from gitliza.core.model import Config
from gitliza.core.states import Role

EXIT_RESTART = 42  # the agent stopped gracefully (pause, stand down, context): restart it


class Outcome(Enum):
    DONE = "done"  # exit 0: look for more work
    RESTART = "restart"  # exit 42: graceful, restart after restart_delay
    CRASH = "crash"  # anything else: restart after a backed-off delay


def classify(code: int) -> Outcome:
    if code == 0:
        return Outcome.DONE
    if code == EXIT_RESTART:
        return Outcome.RESTART
    return Outcome.CRASH


def backoff(base: int, cap: int, n: int) -> float:
    """The delay after the `n`-th failure in a row: base, 2 x base, 4 x base ... up to cap."""
    if n <= 0:
        return 0.0
    return float(min(cap, base * 2 ** min(n - 1, 30)))


# The journals an agent writes to, and the field naming the writer.
_JOURNALS = (("anomalies", "reporter"), ("discovered", "by"), ("handoffs", "agent"))


def progress_mark(board: Board, agent: str, role: Role, task: str | None,
                  branch_tip: str | None = None) -> tuple[Any, ...]:
    """What a run must change to count as progress: the task's state and history (a submit, a
    verdict, a handoff, a block), the agent's journal entries, the tip of the task's branch
    (commits are progress even before a submit); for a planner, the tasks and its triggers.
    Heartbeats change none of these."""
    from gitliza.core.agents import wake
    journal = sum(1 for kind, who in _JOURNALS for e in board.values(kind)
                  if getattr(e, who) == agent)
    if task is None:
        tasks = tuple(sorted((t.id, t.status.value, len(t.history)) for t in board.tasks()))
        return ("planner", tasks, tuple(wake.planner_triggers(board)), journal,
                board.goal.status.value if board.initialized else None)
    t = board.task(task)
    if t is None:
        return ("gone", task)
    return (t.status.value, len(t.history), t.review_commit, t.handoff_pending, journal,
            branch_tip)


@dataclass(frozen=True)
class Streak:
    """The supervisor's memory of the runs before: no-progress runs and crashes in a row."""

    no_progress: int = 0
    crashes: int = 0


@dataclass(frozen=True)
class Decision:
    outcome: Outcome
    streak: Streak
    delay: float  # seconds before the next launch
    give_up: bool  # the no-progress cap is reached: give the work up
    line: str  # what the supervisor prints


def decide(streak: Streak, code: int, held: bool, progressed: bool, cfg: Config) -> Decision:
    """After one run: `held` is whether the agent still holds its work (a coder its claim, a
    reviewer its review lease, a planner the same triggers), `progressed` whether the board
    moved (progress_mark changed)."""
    outcome = classify(code)
    crashes = streak.crashes + 1 if outcome == Outcome.CRASH else 0
    stuck = held and not progressed
    n = streak.no_progress + 1 if stuck else 0
    new = Streak(no_progress=n, crashes=crashes)
    cap = cfg.max_no_progress_runs
    tail = f" (no progress {n}/{cap})" if stuck else ""
    if stuck and n >= cap:
        what = {Outcome.DONE: "exit 0", Outcome.RESTART: "exit 42"}.get(outcome, f"exit {code}")
        return Decision(outcome, new, 0.0, True,
                        f"agent made no progress in {n} runs in a row (last: {what}); giving up")
    if outcome == Outcome.CRASH:
        delay = backoff(cfg.crash_delay, cfg.crash_delay_max, max(crashes, n))
        return Decision(outcome, new, delay, False, f"agent crashed (exit {code}, {crashes} in "
                        f"a row){tail}; restarting in {delay:g}s")
    if outcome == Outcome.RESTART:
        delay = float(cfg.restart_delay) if n <= 1 else \
            backoff(cfg.restart_delay, cfg.crash_delay_max, n)
        return Decision(outcome, new, delay, False,
                        f"agent exited 42 (graceful){tail}; restarting in {delay:g}s")
    if stuck:
        delay = backoff(cfg.restart_delay, cfg.crash_delay_max, n)
        return Decision(outcome, new, delay, False, "agent exited 0 but still holds its work "
                        f"and the board did not move{tail}; restarting in {delay:g}s")
    return Decision(outcome, replace(new, no_progress=0), 0.0, False,
                    "agent completed; checking for more work")


def launch_wait(launches: Sequence[float], now: float, per_minute: int) -> float:
    """Seconds to wait before the next launch so that no 60-second window holds more than
    `per_minute` launches (`launches`: monotonic times of earlier launches, oldest first)."""
    recent = [t for t in launches if now - t < 60.0]
    if len(recent) < per_minute:
        return 0.0
    return max(0.0, recent[len(recent) - per_minute] + 60.0 - now)
