"""The commit object of one transition, as libgit2 would write it: author and committer are the
op's actor at the op's time, so the commit is a pure function of the op and its parent (replays and
re-applied ops reproduce it byte for byte). The write path (store.py) forms and signs it; verify
recomputes it.
"""
from __future__ import annotations

import pygit2

from gitliza.core.ops.base import Op


def commit_body(tree: pygit2.Oid, parents: list[pygit2.Oid], op: Op, message: str) -> bytes | None:
    """The commit object libgit2 writes for `signature(op)` (git_commit_create: tree, parents,
    author, committer, a blank line, the message as is), or None for an actor it would trim or
    refuse, which then goes through libgit2 (tests/git/test_packs.py compares the two)."""
    from gitliza.core.clock import to_epoch
    actor = op.actor
    if not actor or actor != actor.strip() or any(c in actor for c in "<>\n") or \
            actor != actor.strip(" \t\n\v\f\r.,:;\"'"):
        return None
    when = to_epoch(op.time)
    if when < 0:
        return None
    who = f"{actor} <{actor}@liza.invalid> {when} +0000"
    head = [f"tree {tree}", *(f"parent {p}" for p in parents), f"author {who}",
            f"committer {who}"]
    return ("\n".join(head) + "\n\n" + message).encode()


def signature(op: Op) -> pygit2.Signature:
    """Author and committer are the op's actor at the op's time: the commit is a pure function
    of the op and its parent, which keeps replays and re-applied ops reproducible."""
    from gitliza.core.clock import to_epoch
    return pygit2.Signature(op.actor, f"{op.actor}@liza.invalid", to_epoch(op.time), 0)
