"""A re-review that covers the fix (docs/locks.md): an integration fix whose review commit is
exactly git's clean merge of the commit it was approved at (first parent) with a commit of the
integration branch (second parent) keeps its approval, `carry-approval`, instead of taking a
second review. Its tree is a deterministic function of inputs already reviewed (the approved
commit) or already integrated (the integration commit); the integration branch rule recomputes
the merge wherever the commit travels (services/verify/approvals.py)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pygit2
from pygit2 import Oid

from gitliza.core.ops.integration import CarryApproval, last_approved
from gitliza.core.states import TaskState
from gitliza.errors import LizaError, ValidationError
from gitliza.git import mergecheck
from gitliza.services.lifecycle.integration import integration_tip

if TYPE_CHECKING:
    from gitliza.services.api import Liza


def carry_clean_fixes(liza: Liza) -> list[str]:
    """Carry the approval of every integration fix waiting for review (no review lease) that is
    git's clean merge of its approved commit with an integration commit. One line per task."""
    board = liza.board()
    repo = liza.repo
    try:
        tip = integration_tip(repo, board.config.integration_branch)
    except ValidationError:
        return []
    out: list[str] = []
    for t in list(board.tasks()):
        if t.status != TaskState.READY_FOR_REVIEW or not t.integration_fix or t.reviewing_by \
                or not t.review_commit:
            continue
        approved = last_approved(t)
        commit = repo.get(Oid(hex=t.review_commit))
        if approved is None or not isinstance(commit, pygit2.Commit) or \
                len(commit.parent_ids) != 2 or str(commit.parent_ids[0]) != approved:
            continue
        onto = commit.parent_ids[1]
        if not (onto == tip or repo.descendant_of(tip, onto)):
            continue  # not merged with the integration branch: a change of its own
        if not mergecheck.is_clean_merge(repo, commit.id):
            continue
        try:
            liza.do(CarryApproval, task=t.id, commit=t.review_commit, approved=approved,
                    onto=str(onto))
        except LizaError as e:
            out.append(f"{t.id}: approval not carried ({e})")
            continue
        out.append(f"{t.id}: approval carried (git's clean merge of the approved "
                   f"{approved[:12]} with {str(onto)[:12]}): no second review")
    return out
