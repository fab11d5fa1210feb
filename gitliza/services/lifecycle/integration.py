"""The integration branch: its tip, creating it after `init`, and which of its first-parent
commits brought a review commit in (merge after a crash, doctor's `approved-merged`)."""
from __future__ import annotations

from contextlib import suppress
from typing import TYPE_CHECKING

import pygit2
from pygit2 import Oid, Repository

from gitliza.errors import ValidationError
from gitliza.git.repository import contains, ref_oid
from gitliza.services.lifecycle.common import warn

if TYPE_CHECKING:
    from gitliza.services.api import Liza


def integration_tip(repo: Repository, branch: str) -> Oid:
    ref = repo.references.get(f"refs/heads/{branch}")
    if ref is None:
        raise ValidationError(f"integration branch {branch} does not exist",
                              hint=f"create it: `git branch {branch} <start>`")
    return ref_oid(ref)


def ensure_integration_branch(liza: Liza, branch: str) -> str | None:
    """Create `branch` at the current HEAD if it is missing (called after `init`). Returns its
    tip, or None when HEAD has no commit yet (claim will say how to create the branch)."""
    repo: Repository = liza.repo
    ref = repo.references.get(f"refs/heads/{branch}")
    if ref is not None:
        return str(ref_oid(ref))
    if repo.head_is_unborn:
        warn(f"integration branch {branch} not created: HEAD has no commit yet (after a first "
             f"commit: `git branch {branch}`, then, as the human, `git liza config "
             f"integration_base $(git rev-parse {branch})` so that the first sync shares it)")
        return None
    head = repo.head.peel(pygit2.Commit).id
    with suppress(pygit2.AlreadyExistsError):  # created concurrently: theirs is as good
        repo.references.create(f"refs/heads/{branch}", head, force=False)
    return str(ref_oid(repo.references[f"refs/heads/{branch}"]))

def first_parent_introducing(repo: Repository, tip: Oid, review: Oid, limit: int = 10000) -> Oid:
    found = tip
    commit = repo[tip].peel(pygit2.Commit)
    for _ in range(limit):
        if not contains(repo, commit.id, review):
            break
        found = commit.id
        if not commit.parents:
            break
        commit = commit.parents[0]
    return found
