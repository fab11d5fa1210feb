"""Which remote a clone shares its board with (`git config liza.remote`, or its alias
`sync.remote`), and where git runs for a repository: what auto-sync and every command that pulls
first ask before anything is fetched."""
from __future__ import annotations

from pathlib import Path

import pygit2

from gitliza.git import remotes

ALIAS_KEY = "sync.remote"  # the name; `liza.remote` (remotes.CONFIG_KEY) wins


def configured_remote(repo: pygit2.Repository) -> str | None:
    """`git config liza.remote`, else `git config sync.remote`, else None (no auto-sync).

    Read with pygit2 (no process): auto-sync asks this after every mutating command.
    """
    try:
        cfg = repo.config
    except pygit2.GitError:
        return None
    for key in (remotes.CONFIG_KEY, ALIAS_KEY):
        try:
            value = str(cfg[key]).strip()
        except (KeyError, pygit2.GitError):
            continue
        if value:
            return value
    return None


def repo_path(repo: pygit2.Repository) -> Path:
    """Where git runs for this repository (the work tree, or the git dir of a bare one)."""
    return Path(repo.workdir or repo.path)


def remote_board(path: Path) -> tuple[str, str] | None:
    """(remote, oid) when the clone at `path` has no board but its sync remote (`liza.remote`,
    else origin) holds one: a fresh `git clone` does not fetch refs/liza/state, and `init` there
    would start a second, unrelated board. None when there is no such remote or it cannot be
    asked (this is advice, never a failure of its own)."""
    from gitliza.errors import LizaError
    from gitliza.git import transport
    try:
        repo = pygit2.Repository(str(path))
        if repo.references.get(remotes.STATE_REF) is not None:
            return None
        name = configured_remote(repo) or remotes.DEFAULT_REMOTE
        if name == remotes.DEFAULT_REMOTE and name not in repo.remotes.names():
            return None
        oid = transport.ls_remote_state(repo_path(repo), name, timeout=20)
    except (LizaError, pygit2.GitError, OSError):
        return None
    return None if oid is None else (name, oid)
