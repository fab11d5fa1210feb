"""Forged boards for the tests: what anyone with push access to a hookless remote can do with git.

A forgery here is a commit on top of a clone's state tip that records a legal op (a note) but whose
tree says something the op does not: a task edited by hand (APPROVED without any review), or a
blob that is not TOML at all (the board bricked for every reader). It is written by pygit2 (no
hook runs) and pushed with plain `git push --no-verify`, as the issue's reproduction does.
"""
from __future__ import annotations

from pathlib import Path

import pygit2

from gitliza.services.api import Liza
from gitliza.core.ops import Note
from gitliza.git.store import STATE_REF
from tests.conftest import git


def forge(clone: Path, task: str, *, garbage: bool = False, agent: str = "human") -> str:
    """Commit a forgery on `clone`'s board (its ref moves to it) and return its id. The task's
    blob says APPROVED (`garbage`: is not TOML)."""
    h = Liza.open(clone, agent)
    legit = h.do(Note, message="nothing to see").commit
    repo = pygit2.Repository(str(clone))
    c = repo[pygit2.Oid(hex=legit)]
    assert isinstance(c, pygit2.Commit)
    from gitliza.core.encoding.layout import path_of
    path = path_of("tasks", task)
    blob = c.tree[path]
    assert isinstance(blob, pygit2.Blob)
    text = blob.data.decode()
    if garbage:
        new = b"this is [not toml\n"
    else:
        import re
        new = re.sub(r'status = "[A-Z_]+"', 'status = "APPROVED"', text, count=1).encode()
        new += f'approved_by = "{agent}"\n'.encode()
    tree = _replace(repo, c.tree, path.split("/"), repo.create_blob(new))
    forged = repo.create_commit(None, c.author, c.committer, c.message, tree, c.parent_ids)
    repo.references.create(STATE_REF, forged, force=True)
    return str(forged)


def _replace(repo: pygit2.Repository, tree: pygit2.Tree, parts: list[str],
             blob: pygit2.Oid) -> pygit2.Oid:
    tb = repo.TreeBuilder(tree)
    if len(parts) == 1:
        tb.insert(parts[0], blob, pygit2.GIT_FILEMODE_BLOB)
    else:
        sub = tree[parts[0]]
        assert isinstance(sub, pygit2.Tree)
        tb.insert(parts[0], _replace(repo, sub, parts[1:], blob), pygit2.GIT_FILEMODE_TREE)
    return tb.write()


def push_forgery(clone: Path, oid: str, remote: str = "origin") -> None:
    """Plain git, no client hook: what the issue's forger ran."""
    git(clone, "push", "-q", "--no-verify", remote, f"+{oid}:{STATE_REF}")
