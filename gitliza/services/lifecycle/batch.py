"""Merge batches (config `merge_batch`, docs/locks.md): with a slow integration test, the first
approved tasks of the merge queue are merged in memory one on top of the other (git's own clean
merges, as `merge` makes them), the integration test runs once on the last of them, and on a
failure the batch is bisected for the longest prefix that passes. That prefix is then merged task
by task with `merge`, which recomputes each merge (the same inputs give the same tree) and skips
the test for a tree the batch tested; the task that broke the test is left to its own merge,
whose test records it INTEGRATION_FAILED. The tip the batch leaves is a tested tree; the tips
between its merges are not tested on their own (as in any batching merge queue)."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pygit2
from pygit2 import Oid

from gitliza.core.states import TaskState
from gitliza.git.treecheck import TreeRefused
from gitliza.services.lifecycle.common import checkout_bounds
from gitliza.services.lifecycle.integration import integration_tip
from gitliza.services.lifecycle.merge import INTEGRATION_TEST, merge
from gitliza.services.lifecycle.remote import ensure_commit, pull_first

if TYPE_CHECKING:
    from gitliza.git.merge import Runner
    from gitliza.services.api import Liza


def merge_batch(liza: Liza, tasks: list[str], *, integration_timeout: float | None = None,
                runner: Runner | None = None) -> tuple[list[str], int]:
    """Merge the longest prefix of `tasks` (APPROVED, in queue order) whose combined merge passes
    the integration test. Returns the ids merged and the number of test runs. With fewer than
    two tasks to combine (a conflict, a missing commit), or a failure at the first task, it
    merges nothing: the caller merges the head alone, with its own test."""
    from gitliza.git.merge import IntegrationTestFailed, test_commit
    repo = liza.repo
    pull_first(liza, "merge batch", strict=True)
    board = liza.board()
    cur = integration_tip(repo, board.config.integration_branch)
    sig = pygit2.Signature(liza.agent, f"{liza.agent}@gitliza.invalid")
    chain: list[tuple[str, Oid]] = []
    for tid in tasks:
        t = board.task(tid)
        if t is None or t.status != TaskState.APPROVED or not t.review_commit:
            break
        ensure_commit(liza, t.review_commit, f"{tid}'s review_commit")
        review = Oid(hex=t.review_commit)
        if cur == review or repo.descendant_of(cur, review):
            pass  # already in: the merge records it as it is
        elif repo.descendant_of(review, cur):
            cur = review
        else:
            index = repo.merge_commits(cur, review)
            if index.conflicts is not None:
                break
            cur = repo.create_commit(None, sig, sig, f"batch: {tid}", index.write_tree(repo),
                                     [cur, review])
        chain.append((tid, cur))
    if len(chain) < 2:
        return [], 0
    runs = 0
    script = Path(INTEGRATION_TEST)

    def passes(k: int) -> bool:
        nonlocal runs
        runs += 1
        try:
            test_commit(repo, chain[k - 1][1], script, integration_timeout, runner,
                        checkout_bounds(board))
        except (IntegrationTestFailed, TreeRefused):  # each merge then says why, alone
            return False
        return True

    good = len(chain)
    if not passes(good):
        lo, hi = 0, good  # the tip (prefix 0) passed when it was merged; prefix `hi` fails
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if passes(mid) else (lo, mid)
        good = lo
    if good < 1:
        return [], runs
    tested = frozenset(repo[c].peel(pygit2.Commit).tree_id for _, c in chain[:good])
    merged = []
    for tid, _ in chain[:good]:
        merge(liza, tid, integration_timeout=integration_timeout, tested_trees=tested,
              runner=runner)
        merged.append(tid)
    return merged, runs
