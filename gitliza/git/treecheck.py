"""A commit's tree judged before anyone checks it out (the rules are core/treerules.py):
whether it holds a top-level `.liza` entry, and whether its checkout would write more than the
human's bounds allow.

The size is cheap by construction: only tree objects are read; a blob's size comes from the
object database's header (`odb.read_header`: a loose object's first bytes, a packed one's entry
header), never its content; a subtree that recurs (the same oid at two paths) is counted from a
memo; and the walk stops as soon as a bound is passed, so a tree of a million files costs no more
than the bound's worth of entries.
"""
from __future__ import annotations

import pygit2
from pygit2 import Oid

from gitliza.core import treerules
from gitliza.errors import ValidationError

_TREE = 0o040000
_GITLINK = 0o160000


def liza_entry(repo: pygit2.Repository, commit: str | Oid) -> str | None:
    """The `.liza` entry at the top of `commit`'s tree (None: none, or the commit is not here)."""
    try:
        tree = repo[commit if isinstance(commit, Oid) else Oid(hex=commit)].peel(pygit2.Tree)
    except (KeyError, ValueError, pygit2.GitError):
        return None
    return treerules.liza_entry(e.name for e in tree if e.name is not None)


def refuse_liza_entry(repo: pygit2.Repository, commit: str | Oid, what: str) -> None:
    """TreeRefused (one line naming the entry) when `commit`'s tree holds a `.liza` entry."""
    name = liza_entry(repo, commit)
    if name is not None:
        raise TreeRefused(treerules.liza_entry_line(what, str(commit), name),
                              hint="remove it from the task branch (`git rm -r --cached` it), "
                                   "commit, and submit again")


def tree_size(repo: pygit2.Repository, tree: Oid, bounds: tuple[int, int]) -> tuple[int, int]:
    """(bytes, files) a checkout of `tree` writes (a link counts as a file of its target's length,
    a submodule as nothing). Stops early, with counts already past a bound, once one is passed."""
    max_bytes, max_files = bounds
    memo: dict[Oid, tuple[int, int]] = {}

    def walk(oid: Oid, before: int, before_files: int) -> tuple[int, int]:
        known = memo.get(oid)
        if known is not None:
            return known
        size = files = 0
        obj = repo[oid]
        if not isinstance(obj, pygit2.Tree):
            raise ValidationError(f"{oid} is not a tree")
        for e in obj:
            mode = e.filemode
            if mode == _GITLINK:
                continue
            if mode == _TREE:
                s, f = walk(e.id, before + size, before_files + files)
            else:
                s, f = repo.odb.read_header(e.id)[1], 1
            size += s
            files += f
            if before + size > max_bytes or before_files + files > max_files:
                raise _Past(before + size, before_files + files)
        memo[oid] = (size, files)
        return size, files

    try:
        return walk(tree, 0, 0)
    except _Past as p:
        return p.size, p.files
    except (KeyError, pygit2.GitError) as e:
        raise ValidationError(f"cannot read the tree {str(tree)[:12]}: {e}") from None


def refuse_large(repo: pygit2.Repository, commit: Oid, bounds: tuple[int, int],
                 what: str) -> None:
    """CheckoutTooLarge (one line) when checking out `commit` would write past `bounds`."""
    c = repo[commit].peel(pygit2.Commit)
    size, files = tree_size(repo, c.tree_id, bounds)
    line = treerules.checkout_problem(what, str(commit), size, files, bounds)
    if line is not None:
        raise CheckoutTooLarge(line, hint="a human may raise sandbox_checkout_max_mb / "
                                          "sandbox_checkout_max_files (`git liza config`)")


class TreeRefused(ValidationError):
    """A tree no task may bring in (a `.liza` entry, or past the checkout bounds): refused
    before anything is written or recorded."""


class CheckoutTooLarge(TreeRefused):
    """A tree past the checkout bounds: nothing was written."""


class _Past(Exception):
    def __init__(self, size: int, files: int) -> None:
        super().__init__()
        self.size, self.files = size, files


def op_liza_entry(repo: pygit2.Repository, op: object) -> str | None:
    """On replay (verify, the hooks): the one line refusing an op that brings a tree with a `.liza`
    entry toward the integration branch (a submit's review commit, an approval's, a merge's
    result); the ops are imported here, not at the top: worktree code imports this module on every
    command's start. None when it brings none, or its commit is not in this clone (nothing to read)."""
    from gitliza.core.ops.review import Merge, Verdict
    from gitliza.core.ops.work import Submit
    commit: str | None = None
    if isinstance(op, Submit):
        commit = op.commit
    elif isinstance(op, Verdict) and op.verdict == "approve":
        commit = op.commit
    elif isinstance(op, Merge) and op.result == "merged":
        commit = op.merge_commit
    if not commit:
        return None
    name = liza_entry(repo, commit)
    task = str(getattr(op, "task", "?"))
    return None if name is None else treerules.liza_entry_line(task, commit, name)
