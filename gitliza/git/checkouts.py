"""One checkout (a worktree directory): opening exactly it, its HEAD, and whether it is clean.

`clean_sync_problems` is the Clean Sync Invariant as `git status --porcelain` sees it: modified,
staged, conflicted and untracked files, dirty or out-of-sync submodules, and an operation in
progress; one human-readable line per problem.
"""
from __future__ import annotations

from pathlib import Path

import pygit2
from pygit2 import Oid, Repository
from pygit2.enums import FileStatus, RepositoryOpenFlag, RepositoryState, SubmoduleStatus

from gitliza.errors import GitFailure, ValidationError
from gitliza.git.repository import ref_oid


def open_checkout(path: Path | str) -> Repository:
    """Open exactly the worktree at `path`: NO_SEARCH so a stray directory below the main worktree
    is never silently taken for the main repository."""
    try:
        checkout = Repository(str(path), RepositoryOpenFlag.NO_SEARCH)
    except pygit2.GitError as e:
        raise GitFailure(f"{path} is not a git worktree: {e}") from e
    if checkout.is_bare:
        raise ValidationError(f"{path} is a bare repository, not a worktree")
    return checkout


def worktree_head(path: Path | str) -> Oid:
    """The commit checked out in the worktree at `path`."""
    checkout = open_checkout(path)
    if checkout.head_is_unborn:
        raise GitFailure(f"worktree {path} has no commit checked out (unborn HEAD)")
    return ref_oid(checkout.head)


_INDEX_WORDS = {
    FileStatus.INDEX_NEW: "staged new file",
    FileStatus.INDEX_MODIFIED: "staged modification",
    FileStatus.INDEX_DELETED: "staged deletion",
    FileStatus.INDEX_RENAMED: "staged rename",
    FileStatus.INDEX_TYPECHANGE: "staged type change",
}


_WORKDIR_WORDS = {
    FileStatus.WT_NEW: "untracked",
    FileStatus.WT_MODIFIED: "modified",
    FileStatus.WT_DELETED: "deleted",
    FileStatus.WT_RENAMED: "renamed",
    FileStatus.WT_TYPECHANGE: "type changed",
    FileStatus.WT_UNREADABLE: "unreadable",
    FileStatus.CONFLICTED: "unresolved merge conflict",
}


_SUBMODULE_WORDS = {
    SubmoduleStatus.INDEX_ADDED: "staged addition",
    SubmoduleStatus.INDEX_DELETED: "staged deletion",
    SubmoduleStatus.INDEX_MODIFIED: "staged commit change",
    SubmoduleStatus.WD_ADDED: "added but not staged",
    SubmoduleStatus.WD_DELETED: "deleted",
    SubmoduleStatus.WD_MODIFIED: "checked-out commit differs from the recorded one",
    SubmoduleStatus.WD_INDEX_MODIFIED: "staged changes inside",
    SubmoduleStatus.WD_WD_MODIFIED: "uncommitted changes inside",
    SubmoduleStatus.WD_UNTRACKED: "untracked files inside",
}


def clean_sync_problems(path: Path | str, *, untracked: bool = True) -> list[str]:
    """Why the worktree at `path` violates the Clean Sync Invariant; [] means clean.

    Counts what `git status --porcelain` shows: modified, staged, conflicted and untracked (not
    ignored) files, dirty or out-of-sync submodules, plus an operation in progress (merge,
    rebase..., or a git command holding the index lock). `untracked=False` leaves untracked files out (a fast-forward of a checkout
    tolerates them, like git does). One human-readable line per problem.
    """
    checkout = open_checkout(path)
    problems = _state_problems(checkout)
    submodules = set(checkout.listall_submodules())
    mode = "normal" if untracked else "no"
    for file, flags in sorted(checkout.status(untracked_files=mode).items()):
        if file in submodules:
            problems.append(_describe_submodule(checkout, file, flags))
        else:
            problems.append(_describe_file(file, flags))
    return problems


def _state_problems(checkout: Repository) -> list[str]:
    problems = []
    if (Path(checkout.path) / "index.lock").exists():
        # A git command is writing the index right now: whatever status says is about to change.
        problems.append("the index is locked by a running git command (index.lock)")
    state = checkout.state()
    if state != RepositoryState.NONE:
        name = RepositoryState(state).name or str(state)
        problems.append(f"a {name.lower().replace('_', ' ')} operation is in progress")
    return problems


def _words(flags: int, table: dict[FileStatus, str] | dict[SubmoduleStatus, str]) -> list[str]:
    return [word for flag, word in table.items() if flags & flag]


def _describe_file(file: str, flags: int) -> str:
    words = _words(flags, _INDEX_WORDS) + _words(flags, _WORKDIR_WORDS)
    return f"{file}: {', '.join(words) or f'status {flags:#x}'}"


def _describe_submodule(checkout: Repository, file: str, flags: int) -> str:
    try:
        sub_flags = int(checkout.submodules.status(checkout.submodules[file].name))
    except (pygit2.GitError, KeyError, ValueError):
        return f"submodule {_describe_file(file, flags)}"
    words = _words(sub_flags, _SUBMODULE_WORDS)
    return f"submodule {file}: {', '.join(words)}" if words else f"submodule {_describe_file(file, flags)}"
