"""What every hook handler starts from: the repository git runs the hook for (with a push's
quarantined objects), its board at a given state commit, where its refs point, and the update lines
git writes to the hook's stdin.

pygit2, the store and the core are imported inside the functions, not at the top: the dispatcher
imports this module on every hook run, and most runs end before anything needs them.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:
    import pygit2

    from gitliza.core.board import Board
    from gitliza.git.store import Store

STATE_REF = "refs/liza/state"
LIZA_REFS = "refs/liza/"
LIVE_REFS = "refs/liza/live/"  # liveness off the chain (git/liveref.py)
ZERO = "0" * 40
TASK_BRANCH = "liza/"
TASK_REF = "refs/heads/" + TASK_BRANCH


def open_repo(server: bool = False) -> pygit2.Repository:
    """The repository git runs the hook for. git runs hooks at the work tree top (or in $GIT_DIR of
    a bare repository) with GIT_DIR set. During pre-receive the pushed objects are not in the object
    store yet but in a quarantine directory (GIT_QUARANTINE_PATH, also GIT_OBJECT_DIRECTORY); libgit2
    ignores those variables, so the quarantine is added as an alternate to see them."""
    from gitliza.git.repository import open_repository
    gitdir = os.environ.get("GIT_DIR")
    repo = open_repository(gitdir or ".")
    quarantine = os.environ.get("GIT_QUARANTINE_PATH") if server else None
    if quarantine and os.path.isdir(quarantine):
        repo.odb.add_disk_alternate(quarantine)
    return repo


def store_of(repo: pygit2.Repository) -> Store:
    from gitliza.git.store import Store
    return Store(repo)


def board_at(store: Store, oid: Any) -> Board:
    from gitliza.core.board import Board
    import pygit2
    if oid is None:
        return Board()
    commit = store.repo.get(oid)
    return store.board_at(commit if isinstance(commit, pygit2.Commit) else None)


def ref_target(repo: pygit2.Repository, name: str) -> Any:
    """The oid a ref points at now (peeled symbolic refs), or None."""
    try:
        return repo.references[name].resolve().target
    except (KeyError, ValueError):
        return None


def integration_ref(board: Board) -> str | None:
    return f"refs/heads/{board.config.integration_branch}" if board.initialized else None


def stdin_lines(stdin: bytes, width: int) -> Iterator[list[str]]:
    """The hook's stdin split into lines of `width` space-separated fields (others skipped)."""
    for raw in stdin.decode("utf-8", "surrogateescape").splitlines():
        parts = raw.split(" ")
        if len(parts) == width:
            yield parts
