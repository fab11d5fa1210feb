"""gitliza.core.reports.queries on in-memory boards."""
from __future__ import annotations

from gitliza.core.board import Board, MemorySource
from gitliza.core.model import HumanNote, Task
from gitliza.core.reports.queries import all_tasks_terminal, notes_for
from gitliza.core.states import TaskState

T0 = "2025-01-17T14:00:00Z"


def _task(tid: str, status: TaskState) -> Task:
    return Task(id=tid, description="d", status=status, created=T0)


def test_all_tasks_terminal() -> None:
    assert all_tasks_terminal(Board())
    done = {("archive", "a"): _task("a", TaskState.MERGED)}
    assert all_tasks_terminal(Board(MemorySource(done)))
    live = {**done, ("tasks", "b"): _task("b", TaskState.BLOCKED)}
    assert not all_tasks_terminal(Board(MemorySource(live)))


def test_notes_for_a_task_oldest_first() -> None:
    notes = {
        ("human_notes", "2"): HumanNote("2025-01-17T15:00:00Z", "late", for_task="t-1"),
        ("human_notes", "1"): HumanNote("2025-01-17T14:00:00Z", "early", for_task="t-1"),
        ("human_notes", "3"): HumanNote("2025-01-17T14:30:00Z", "other", for_task="t-2"),
        ("human_notes", "4"): HumanNote("2025-01-17T14:10:00Z", "all"),
    }
    board = Board(MemorySource(notes))
    assert [n.message for n in notes_for(board, "t-1")] == ["early", "late"]
    assert notes_for(board, "t-9") == []
