"""A board on the sync remote of a clone that has none: what `init` asks before starting a second
board. Which remote a clone shares with is git/remotes/'s (`configured`, `resolve`)."""
from __future__ import annotations

from pathlib import Path

import pygit2

from gitliza.git.remotes import remote as remotes
from gitliza.errors import LizaError


def remote_board(path: Path) -> tuple[str, str] | None:
    """(remote, oid) when the clone at `path` has no board but its sync remote (`liza.remote`,
    `sync.remote`, else origin) holds one: a fresh `git clone` does not fetch refs/liza/state, and `init` there
    would start a second, unrelated board. None when there is no such remote or it cannot be
    asked (this is advice, never a failure of its own)."""
    from gitliza.git.remotes import transport
    from gitliza.git.repository import repo_path
    try:
        repo = remotes.local_repo(path)
        if repo.references.get(remotes.STATE_REF) is not None:
            return None
        name = remotes.configured(repo) or remotes.DEFAULT_REMOTE
        if name == remotes.DEFAULT_REMOTE and name not in repo.remotes.names():
            return None
        path = repo_path(repo)
        oid = transport.ls_remote_state(path, remotes.resolve(path, name), timeout=20)
    except (LizaError, pygit2.GitError, OSError):
        return None
    return None if oid is None else (name, oid)
