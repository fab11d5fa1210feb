"""core/board.py: a board lists a collection once and keeps a pass read to its end (issue 51:
`status` reads the tasks in several passes), while a reader that stops early stays lazy."""
from __future__ import annotations

from typing import Any

from gitliza.core.board import Board, MemorySource
from gitliza.core.model import Task
from gitliza.core.states import TaskState


class Counting(MemorySource):
    def __init__(self, entities: dict[tuple[str, str], Any]) -> None:
        super().__init__(entities)
        self.gets = 0
        self.lists = 0

    def get(self, coll: str, key: str) -> Any | None:
        self.gets += 1
        return super().get(coll, key)

    def keys(self, coll: str) -> list[str]:
        self.lists += 1
        return list(super().keys(coll))


def task(i: int) -> Task:
    return Task(id=f"t{i}", description="d", status=TaskState.UNCLAIMED,
                created="2025-01-17T14:00:00Z")


def test_a_whole_pass_is_kept_and_a_partial_one_stays_lazy() -> None:
    src = Counting({("tasks", f"t{i}"): task(i) for i in range(10)})
    board = Board(src)
    assert next(board.tasks()).id == "t0"
    assert src.gets == 1  # stopped early: one entity read, nothing kept
    assert [t.id for t in board.tasks()] == sorted(f"t{i}" for i in range(10))
    gets, lists = src.gets, src.lists
    assert [t.id for t in board.tasks()] == sorted(f"t{i}" for i in range(10))
    assert (src.gets, src.lists) == (gets, lists) == (11, 1)  # the second pass read nothing
    keys = board.keys("tasks")
    keys.clear()  # the caller's own list
    assert len(board.keys("tasks")) == 10


def test_a_changed_board_reads_its_own_entities() -> None:
    board = Board(Counting({("tasks", f"t{i}"): task(i) for i in range(3)}))
    assert len(list(board.tasks())) == 3
    changed = board.with_changes({("tasks", "t1"): None, ("tasks", "t9"): task(9)})
    assert [t.id for t in changed.tasks()] == ["t0", "t2", "t9"]
    assert [t.id for t in board.tasks()] == ["t0", "t1", "t2"]
