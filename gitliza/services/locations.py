"""Where a task's worktree lives: the main worktree (even from inside a task worktree) and
`<main>/.worktrees/<task>`, checked to stay inside the repository."""
from __future__ import annotations

from pathlib import Path

from pygit2 import Repository

from gitliza.core.ids import check_id
from gitliza.core.model import Task
from gitliza.core.ops.work import worktree_path
from gitliza.errors import ValidationError
from gitliza.git.repository import common_dir
from gitliza.git.worktrees.tasktrees import WORKTREES_DIR, contained_path


def main_root(repo: Repository) -> Path:
    """The main worktree, even when `repo` was opened inside a task worktree."""
    main = Repository(str(common_dir(repo)))
    if main.is_bare or main.workdir is None:
        raise ValidationError(f"{main.path} is a bare repository: task worktrees need a main "
                              "worktree")
    return Path(main.workdir).resolve()


def task_dir(repo: Repository, task: str) -> Path:
    """`<main>/.worktrees/<task>`, checked to stay inside the repository (ids, `..`, symlinks)."""
    check_id(task, "task id")
    root = main_root(repo)
    path = contained_path(root, worktree_path(task))
    if path != root / WORKTREES_DIR / task:  # a symlink that stays inside is still refused
        raise ValidationError(f"{root / WORKTREES_DIR / task} is a symlink; refusing to use it")
    return path

def existing_task_dir(repo: Repository, t: Task) -> Path:
    path = task_dir(repo, t.id)
    if not (path / ".git").exists():
        raise ValidationError(f"{t.id}'s worktree {path} is missing",
                              hint="`git liza doctor --fix` recreates it from the task branch")
    return path
