"""Opening a repository, and where it keeps what all its worktrees share (the git common dir).

The lowest layer of gitliza/git/: the object writer (packs.py), the board store, worktrees, merges
and the ref watcher all find the common dir here, so none of them imports another for it.
"""
from __future__ import annotations

import os
from pathlib import Path

import pygit2

from gitliza.errors import GitFailure, ValidationError


def common_dir(repo: pygit2.Repository) -> Path:
    """The git common dir (shared by all worktrees), where refs and their lock files live."""
    gitdir = Path(repo.path)
    marker = gitdir / "commondir"
    if marker.exists():
        return (gitdir / marker.read_text().strip()).resolve()
    return gitdir.resolve()


def open_repository(path: str | os.PathLike[str] = ".") -> pygit2.Repository:
    try:
        found = pygit2.discover_repository(str(path))
    except pygit2.GitError as e:
        raise GitFailure(f"cannot read a git repository at {path}: {e}") from None
    if found is None:
        raise ValidationError(f"not a git repository: {Path(path).resolve()}",
                              hint="run gitliza inside a repository or one of its worktrees")
    try:
        return pygit2.Repository(found)
    except pygit2.GitError:
        # Codex's sandbox mounts an empty read-only `.git` (another filesystem) into every
        # writable root, a worktree's git dir included: opened by that git dir, libgit2 stops
        # at the mount and finds nothing. Opened from the worktree, it is found.
        return pygit2.Repository(str(path))
