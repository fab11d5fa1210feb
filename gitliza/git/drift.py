"""Drift (wt-merge.sh): how many commits the integration branch gained since a task's base, the
measure of how far the reviewed work is from what it is merged into."""
from __future__ import annotations

import pygit2

from gitliza.errors import LizaError


def drift_commits(repo: pygit2.Repository, branch: str, base: str | None) -> int | None:
    """`git rev-list --count BASE..BRANCH`, or None when either is unknown here."""
    if not base:
        return None
    try:
        tip = repo.references[f"refs/heads/{branch}"].resolve().target
        walker = repo.walk(tip, pygit2.enums.SortMode.NONE)
        walker.hide(pygit2.Oid(hex=base))
        return sum(1 for _ in walker)
    except (KeyError, ValueError, pygit2.GitError, LizaError):
        return None
