"""What every stage of the lifecycle shares: `Done` (a committed transition plus what the shell
did on disk), the warning line the caller gets no other way, and the core's dry run that refuses a
transition before the shell touches the disk."""
from __future__ import annotations

import sys
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gitliza.core.board import Board
from gitliza.core.model import Task
from gitliza.core.ops import Op, apply as core_apply
from gitliza.core import treerules
from gitliza.core.ops.journal import AnomalyOp
from gitliza.core.terminal import safe
from gitliza.errors import LizaError, NotFound
from gitliza.git.store import Committed

if TYPE_CHECKING:
    from gitliza.services.api import Liza

NO_SHA = "0" * 40  # placeholder commit for dry-runs whose real commit is not known yet


def warn(text: str) -> None:
    """Warnings that the caller gets no other way (kept worktrees, lagging checkouts)."""
    sys.stderr.write(f"gitliza: warning: {safe(text)}\n")  # board text in it: escaped

@dataclass(frozen=True)
class Done:
    """A committed transition plus what the shell did or could not do on disk."""

    committed: Committed
    worktree: Path | None = None
    notices: tuple[str, ...] = field(default=())

def dry_run(liza: Liza, op: Op, board: Board | None = None) -> Board:
    """Run the core on the current board first, so that a stood-down agent hears "stand down"
    (LeaseLost) rather than an error about a worktree that now belongs to someone else."""
    b = liza.board() if board is None else board
    core_apply(b, op)
    return b


def require_task(board: Board, task: str) -> Task:
    t = board.task(task)
    if t is None:
        raise NotFound(f"no task {task!r}", hint="`git liza status` lists the tasks")
    return t


def checkout_bounds(board: Board) -> tuple[int, int]:
    """(bytes, files) a checkout may write: the human's `sandbox_checkout_max_*`, else the
    defaults (core/treerules.py)."""
    c = board.config
    return treerules.checkout_bounds(c.sandbox_checkout_max_mb, c.sandbox_checkout_max_files)


def record_refused_tree(liza: Liza, task: str, line: str) -> None:
    """A tree refused before its checkout (too large, a `.liza` entry): an anomaly naming the
    task, where the human sees it. The refusal stands even if the record cannot be written."""
    with suppress(LizaError):
        liza.do(AnomalyOp, type="system_ambiguity", task=task, ordered=True,
                details=(("protocol_section", "checkout refused"), ("question", line[:500])))
