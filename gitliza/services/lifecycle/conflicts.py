"""Conflicts caught before review (docs/locks.md): whenever the integration branch may have
moved (a submit, a merge, a reviewer about to take a review), every task waiting for a review
or for its merge is merged with the tip in memory (git/mergecheck.py); one that no longer merges
goes back to its coder (`conflict` op: INTEGRATION_FAILED, an integration fix) before a
reviewer or the merge queue spends anything on it."""
from __future__ import annotations

from typing import TYPE_CHECKING

from pygit2 import Oid

from gitliza.core.ops.integration import Conflict
from gitliza.core.states import TaskState
from gitliza.errors import LizaError, ValidationError
from gitliza.git import mergecheck
from gitliza.services.lifecycle.integration import integration_tip

if TYPE_CHECKING:
    from gitliza.services.api import Liza

S = TaskState


def send_back_conflicts(liza: Liza) -> list[str]:
    """Check every task in review (with no live review lease) or approved against the
    integration tip; record a `conflict` for each that no longer merges. Returns one line per
    task sent back. A task whose commit is not on this machine is left for the merge to judge."""
    board = liza.board()
    try:
        tip = integration_tip(liza.repo, board.config.integration_branch)
    except ValidationError:
        return []
    out: list[str] = []
    for t in list(board.tasks()):
        if t.review_commit is None or t.status not in (S.READY_FOR_REVIEW, S.APPROVED):
            continue
        if t.status == S.READY_FOR_REVIEW and t.reviewing_by:
            # A reviewer holds it (found at its merge, never taken from it), or its lease
            # expired (the next reviewer's takeover comes first).
            continue
        try:
            paths = mergecheck.conflicts(liza.repo, tip, Oid(hex=t.review_commit))
        except LizaError:
            continue
        if not paths:
            continue
        reason = "conflicts in: " + ", ".join(paths[:20]) + \
            (f" and {len(paths) - 20} more" if len(paths) > 20 else "")
        try:
            liza.do(Conflict, task=t.id, reason=reason, tip=str(tip))
        except LizaError as e:  # it moved meanwhile (claimed for review, merged): nothing lost
            out.append(f"{t.id}: not sent back ({e})")
            continue
        out.append(f"{t.id} no longer merges with {board.config.integration_branch} "
                   f"({reason}): back to {t.assigned_to or 'a coder'} as an integration fix")
    return out
