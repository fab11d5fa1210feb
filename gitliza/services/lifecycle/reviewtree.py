"""Where a reviewer reviews: its own clean checkout of exactly review_commit,
`.liza/reviews/<agent>` in the main worktree (git/worktrees/clean.py), made before its agent
starts, never the coder's worktree (whose ignored files a review would otherwise test). Outside
`.worktrees/`, so it is never taken for a task's worktree; under `.liza/`, which `git status`
ignores and the sandbox shows read-only."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pygit2 import Oid

from gitliza.core.ids import check_id
from gitliza.git.repository import liza_dir
from gitliza.git.treecheck import CheckoutTooLarge
from gitliza.git.worktrees.clean import clean_checkout
from gitliza.services.lifecycle.common import checkout_bounds, record_refused_tree

if TYPE_CHECKING:
    from gitliza.services.api import Liza

REVIEWS_DIR = "reviews"


def review_checkout(liza: Liza, task: str, commit: str) -> Path:
    """This reviewer's clean checkout of `commit` (task `task`'s review_commit)."""
    check_id(liza.agent, "agent id")
    path = liza_dir(liza.repo, REVIEWS_DIR) / liza.agent
    try:
        return clean_checkout(liza.repo, path, Oid(hex=commit),
                              checkout_bounds(liza.board()), f"{task}'s review")
    except CheckoutTooLarge as e:
        record_refused_tree(liza, task, str(e))
        raise
