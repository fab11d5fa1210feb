"""Questions about a board that several callers ask (commands, the supervisor, prompt builders).

Pure: a board in, plain values out; nothing here reads the clock or git.
"""
from __future__ import annotations

from gitliza.core.board import Board
from gitliza.core.model import HumanNote
from gitliza.core.states import TERMINAL


def all_tasks_terminal(board: Board) -> bool:
    """Whether every task of the board is MERGED, ABANDONED or SUPERSEDED (vacuously true with no
    task): the condition for `complete-goal`. Terminal tasks live under archive/, so only the live
    collection is read."""
    return all(t.status in TERMINAL for t in board.tasks())


def notes_for(board: Board, task_id: str) -> list[HumanNote]:
    """The human notes addressed to `task_id` (`note --for TASK`), oldest first: what an agent must
    read before it starts on the task (task-lifecycle.md, "Read `human_notes` if present"). Journal
    keys start with the note's time, so key order is chronological; the timestamp sort makes that
    explicit and keeps notes of the same second in key order."""
    notes = [n for n in board.values("human_notes") if n.for_task == task_id]
    return sorted(notes, key=lambda n: n.timestamp)
