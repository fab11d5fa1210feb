"""The integration branch rule: what the board allows onto the integration branch (a reviewed
range per approved or merged task, and the clean merges `git liza merge` makes), and which commits
of a branch update no approval covers. The server and client hooks and sync's push and
fast-forward judge the integration branch by it."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Iterable

import pygit2
from pygit2.enums import SortMode

from gitliza.core.board import Board
from gitliza.core.model import Task
from gitliza.core.states import TaskState


@dataclass(frozen=True)
class Approvals:
    """What the board allows onto the integration branch.

    A task's review covers `base_commit..review_commit`: what the reviewer was shown (the spec's
    `git diff <base_commit>..<review_commit>`). Ancestors of the base are not covered by it: they
    must already be on the integration branch, or a coder could branch from unreviewed local
    commits and carry them in under a small reviewed change. A merge commit recorded on a MERGED
    task is covered only if it is exactly the clean merge of its first parent and the task's
    review commit, tree included, as `git liza merge` makes it (a conflict there becomes
    INTEGRATION_FAILED, never a hand-resolved tree)."""

    ranges: tuple[tuple[str, str | None], ...]  # (review_commit, base_commit) per task
    merges: dict[str, str]  # merge_commit -> the review_commit it must merge
    # The integration branch's tip when the board was made (config integration_base): the
    # repository's own history before the board is the branch's base, never "unapproved".
    base: str | None = None
    # A carried approval (`carry-approval`, docs/locks.md): review commit -> the commit reviewed
    # before. Its range is the reviewed one (base..approved); the review commit itself is
    # covered only as git's clean merge of the approved commit (first parent) with its second.
    carried: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def tips(self) -> frozenset[str]:
        return frozenset(r for r, _ in self.ranges)

    @classmethod
    def of(cls, board: Board) -> Approvals:
        ranges: list[tuple[str, str | None]] = []
        merges: dict[str, str] = {}
        carried: dict[str, str] = {}
        for t in board.all_tasks():
            if t.status in (TaskState.APPROVED, TaskState.MERGED) and t.review_commit:
                before = _carried_from(t)
                if before is not None:
                    carried[t.review_commit] = before
                ranges.append((before or t.review_commit, t.base_commit))
                if t.status == TaskState.MERGED and t.merge_commit:
                    merges[t.merge_commit] = t.review_commit
        return cls(tuple(ranges), merges, board.config.integration_base, carried)


def _carried_from(t: Task) -> str | None:
    """The commit reviewed before, when `t`'s last approval was carried (else None)."""
    approvals = [h for h in t.history if h.event in ("approved", "approval_carried")]
    if len(approvals) < 2 or approvals[-1].event != "approval_carried":
        return None
    return approvals[-2].commit


def _covered(repo: pygit2.Repository, approvals: Approvals,
             hide: list[pygit2.Oid]) -> set[str]:
    """Every commit inside some task's reviewed range that `hide` does not already contain."""
    covered: set[str] = set()
    for review, base in approvals.ranges:
        r = pygit2.Oid(hex=review)
        if r not in repo:
            continue
        walker = repo.walk(r, SortMode.TOPOLOGICAL)
        for oid in hide:
            walker.hide(oid)
        if base is not None and pygit2.Oid(hex=base) in repo:
            walker.hide(pygit2.Oid(hex=base))
        covered.update(str(c.id) for c in walker)
    return covered


def _is_true_merge(repo: pygit2.Repository, commit: pygit2.Commit, review: str) -> bool:
    """`commit` is exactly the clean merge of its first parent and `review` (compared without
    writing anything: in a server hook the object store is the push's quarantine)."""
    parents = commit.parent_ids
    if len(parents) != 2 or str(parents[1]) != review:
        return False
    index = repo.merge_commits(parents[0], parents[1])
    if index.conflicts is not None:
        return False
    return len(index.diff_to_tree(commit.tree)) == 0


def unapproved(repo: pygit2.Repository, approvals: Approvals, new: pygit2.Oid,
               hide: Iterable[pygit2.Oid], *, pending_merges: bool = False) -> list[pygit2.Commit]:
    """The commits `new` brings in (not reachable from `hide`) that no approval covers (see
    Approvals). A fast-forward merge records the review commit itself, which its range covers.
    `pending_merges` (client hooks only) also lets through a merge commit not recorded yet whose
    merged parents are approved review commits: a person merging by hand records the merge
    afterwards; the server still insists on the record."""
    hidden = list(hide)
    if approvals.base is not None and (b := pygit2.Oid(hex=approvals.base)) in repo:
        hidden.append(b)
    covered = _covered(repo, approvals, hidden)
    walker = repo.walk(new, SortMode.TOPOLOGICAL)
    for oid in hidden:
        walker.hide(oid)
    tips = approvals.tips
    bad: list[pygit2.Commit] = []
    for commit in walker:
        cid = str(commit.id)
        if cid in covered:
            continue
        merged = approvals.merges.get(cid)
        if merged is not None and _is_true_merge(repo, commit, merged):
            continue
        before = approvals.carried.get(cid)
        if before is not None and len(commit.parent_ids) == 2 and \
                str(commit.parent_ids[0]) == before and \
                _is_true_merge(repo, commit, str(commit.parent_ids[1])):
            continue
        parents = [str(p) for p in commit.parent_ids]
        if pending_merges and len(parents) > 1 and all(p in tips for p in parents[1:]):
            continue
        bad.append(commit)
    return bad


def describe(commits: list[pygit2.Commit], limit: int = 3) -> str:
    shown = ", ".join(f"{str(c.id)[:12]} ({c.message.splitlines()[0][:40] if c.message else ''})"
                      for c in commits[:limit])
    more = f" and {len(commits) - limit} more" if len(commits) > limit else ""
    return f"{len(commits)} commit(s) never approved: {shown}{more}"
