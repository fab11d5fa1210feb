"""What a task's commit does relative to the integration branch, computed in memory (nothing is
written, no working directory is touched): the paths it changes (for its lock scope), and
whether it still merges (conflicts are caught before a reviewer spends a review on them)."""
from __future__ import annotations

from pygit2 import Oid, Repository

from gitliza.git.worktrees.tasktrees import require_commit


def task_paths(repo: Repository, tip: Oid, commit: Oid) -> list[str]:
    """The paths `commit` changes since it left the integration branch (`tip`): the diff from
    their merge base, so that integration commits a coder merged in are not counted as its own."""
    head = require_commit(repo, commit)
    base = repo.merge_base(tip, commit)
    if base is None:
        diff = head.tree.diff_to_tree(swap=True)  # no common history: every path is new
    else:
        diff = require_commit(repo, base).tree.diff_to_tree(head.tree)
    return sorted({p for d in diff.deltas for p in (d.old_file.path, d.new_file.path)})


def conflicts(repo: Repository, tip: Oid, commit: Oid) -> list[str]:
    """The paths in conflict when `commit` is merged into `tip` (empty: it merges cleanly, or
    is already contained, or fast-forwards)."""
    theirs = require_commit(repo, commit)
    if tip == theirs.id or repo.descendant_of(tip, theirs.id) or \
            repo.descendant_of(theirs.id, tip):
        return []
    index = repo.merge_commits(tip, theirs.id)
    if index.conflicts is None:
        return []
    return sorted({e.path for sides in index.conflicts for e in sides if e is not None})


def is_clean_merge(repo: Repository, commit: Oid) -> bool:
    """Whether `commit` is exactly git's clean merge of its two parents: the merge has no
    conflict and its tree is the commit's (compared without writing anything)."""
    c = require_commit(repo, commit)
    if len(c.parent_ids) != 2:
        return False
    index = repo.merge_commits(c.parent_ids[0], c.parent_ids[1])
    return index.conflicts is None and len(index.diff_to_tree(c.tree)) == 0
