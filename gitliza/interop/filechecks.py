"""What liza-validate.sh checks of a state.yaml against the project around it, beyond the schema:
every task's spec_ref names a file that exists (skipped with SKIP_SPEC_FILE_CHECK=true, as the
original allows), and a CLAIMED task's worktree is a directory. `validate FILE` judges the file
against the project it sits in (`<project>/.liza/state.yaml`), `import` against this repository."""
from __future__ import annotations

import os
from pathlib import Path

from gitliza.core.board import Board
from gitliza.core.ids import spec_path
from gitliza.core.states import TaskState


def problems(board: Board, root: Path) -> list[str]:
    out: list[str] = []
    tasks = sorted(board.all_tasks(), key=lambda t: t.id)
    for t in tasks:
        if t.status == TaskState.CLAIMED and t.worktree and not (root / t.worktree).is_dir():
            out.append(f"task {t.id}: CLAIMED task has worktree={t.worktree} but the directory "
                       f"does not exist under {root}")
    if os.environ.get("SKIP_SPEC_FILE_CHECK", "false") != "true":
        for t in tasks:
            if t.spec_ref and not (root / spec_path(t.spec_ref)).is_file():
                out.append(f"task {t.id}: spec_ref file not found: {spec_path(t.spec_ref)} "
                           "(create it, or set SKIP_SPEC_FILE_CHECK=true)")
    return out
