"""The supervisor's judgement of a run (pure): progress by the board, capped backoff, the give-up
cap for every kind of no-progress run, and the launch rate limit."""
from __future__ import annotations

from gitliza.core.agents import runs
from gitliza.core.model import Config
from gitliza.core.ops import Submit
from gitliza.core.states import Role, TaskState
from tests.core.boards import C1, board_in

CFG = Config(restart_delay=2, crash_delay=5, crash_delay_max=60, max_no_progress_runs=4)


def _series(code: int, held: bool = True, progressed: bool = False,
            n: int = 4) -> list[runs.Decision]:
    out, streak = [], runs.Streak()
    for _ in range(n):
        d = runs.decide(streak, code, held, progressed, CFG)
        out.append(d)
        streak = d.streak
    return out


def test_exit0_with_the_task_held_and_nothing_moved_backs_off_then_gives_up() -> None:
    ds = _series(0)
    assert [d.delay for d in ds] == [2, 4, 8, 0] and [d.give_up for d in ds] == [0, 0, 0, 1]
    assert "(no progress 3/4); restarting in 8s" in ds[2].line
    assert ds[3].line == "agent made no progress in 4 runs in a row (last: exit 0); giving up"


def test_42_and_crash_loops_meet_the_same_cap() -> None:
    assert [d.delay for d in _series(42)] == [2, 4, 8, 0] and _series(42)[3].give_up
    crash = _series(3)
    assert [d.delay for d in crash] == [5, 10, 20, 0] and crash[3].give_up
    assert "(exit 3, 2 in a row) (no progress 2/4)" in crash[1].line


def test_a_run_that_moved_the_board_or_let_go_of_its_work_is_not_counted() -> None:
    assert not any(d.give_up for d in _series(0, progressed=True, n=10))
    assert not any(d.give_up for d in _series(42, held=False, n=10))
    done = _series(0, held=False, n=1)[0]
    assert done.outcome == runs.Outcome.DONE and done.delay == 0 and done.streak.no_progress == 0
    # Crashes that move the board still back off (capped), without ever giving up.
    crash = _series(3, progressed=True, n=6)
    assert [d.delay for d in crash] == [5, 10, 20, 40, 60, 60] and not any(d.give_up for d in crash)


def test_the_streak_restarts_after_progress() -> None:
    d1 = runs.decide(runs.Streak(), 0, True, False, CFG)
    d2 = runs.decide(d1.streak, 0, True, True, CFG)
    d3 = runs.decide(d2.streak, 0, True, False, CFG)
    assert d3.streak.no_progress == 1 and d3.delay == 2


def test_progress_mark_moves_with_the_work_not_with_heartbeats() -> None:
    r = board_in(TaskState.CLAIMED)
    mark = runs.progress_mark(r.board, "coder-1", Role.CODER, "task-1", "c" * 40)
    assert runs.progress_mark(r.board, "coder-1", Role.CODER, "task-1", "c" * 40) == mark
    assert runs.progress_mark(r.board, "coder-1", Role.CODER, "task-1", "e" * 40) != mark
    from gitliza.core.ops import Heartbeat
    r.do(Heartbeat, "coder-1", task="task-1")
    assert runs.progress_mark(r.board, "coder-1", Role.CODER, "task-1", "c" * 40) == mark
    r.do(Submit, "coder-1", task="task-1", commit=C1)
    assert runs.progress_mark(r.board, "coder-1", Role.CODER, "task-1", "c" * 40) != mark


def test_launch_wait_keeps_every_minute_under_the_cap() -> None:
    assert runs.launch_wait([], 100.0, 3) == 0
    assert runs.launch_wait([10.0, 20.0], 30.0, 3) == 0
    assert runs.launch_wait([10.0, 20.0, 30.0], 31.0, 3) == 39.0  # until 10.0 leaves the window
    assert runs.launch_wait([10.0, 20.0, 30.0], 70.0, 3) == 0
    assert runs.launch_wait([0.0, 10.0, 20.0, 30.0], 31.0, 3) == 39.0
