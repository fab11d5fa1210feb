"""The legacy encodings verify accepts, named and not hidden. Older gitliza wrote an anomaly's
details in the order they were typed: `legacy_anomaly` recognises exactly that encoding of a commit
(verify reports it), `legacy_anomalies` lists the anomalies a board still holds in it (doctor
explains them). Older gitliza's complete-goal counted every goal's merges in its default summary:
`legacy_goal_count`. A subject written raw is record.message's (`legacy_subject`)."""
from __future__ import annotations

import dataclasses
from typing import Any

import pygit2

from gitliza.core.encoding import layout
from gitliza.core.board import Board, Changes, journal_key
from gitliza.core.ops.goal import completed_summary
from gitliza.core.ops.journal import canonical_details
from gitliza.core.states import TaskState
from gitliza.errors import LizaError
from gitliza.git.objects import trees
from gitliza.git.source import decode_blob

LEGACY_ANOMALY = ("anomaly details in the order they were typed (gitliza before the canonical "
                  "order, docs/lifecycle.md \"Anomaly details\")")
LEGACY_SUBJECT = ("a subject with raw control characters (gitliza before subjects were escaped, "
                  "docs/security.md \"Hostile input\")")
LEGACY_GOAL_COUNT = ("a default goal summary counting every goal's merges (gitliza before it "
                     "counted the goal's own, docs/lifecycle.md \"Goals\")")
_NAMED = {"anomaly": LEGACY_ANOMALY, "complete-goal": LEGACY_GOAL_COUNT}


def legacy_name(op: str) -> str:
    """What the legacy encoding of a commit of `op` is, in words."""
    return _NAMED.get(op, LEGACY_SUBJECT)


def legacy_tree(repo: pygit2.Repository, parent: pygit2.Commit | None, commit: pygit2.Commit,
                board: Board, op: Any, changes: Changes) -> tuple[Changes, trees.Built] | None:
    """The changes and tree of the legacy encoding that `commit` (whose tree is not what `op`
    writes on `board`, its parent's) is in, if it is in one; else None."""
    if op.NAME == "anomaly":
        return legacy_anomaly(repo, parent, commit, changes)
    if op.NAME == "complete-goal" and op.summary is None:
        return legacy_goal_count(repo, parent, commit, board, changes)
    return None


def legacy_goal_count(repo: pygit2.Repository, parent: pygit2.Commit | None,
                      commit: pygit2.Commit, board: Board,
                      changes: Changes) -> tuple[Changes, trees.Built] | None:
    """complete-goal without a summary once wrote "Goal completed: N task(s) merged" with N the
    merges of every goal (the archive keeps earlier goals' tasks). Accepted when that count is the
    commit's one difference: the tree rebuilt with the goal's last entry saying it is the
    commit's tree."""
    goal = changes.get(("goal", ""))
    if parent is None or goal is None or not goal.alignment_history:
        return None
    every = sum(1 for t in board.all_tasks() if t.status == TaskState.MERGED)
    last = goal.alignment_history[-1]
    old = dataclasses.replace(goal, alignment_history=goal.alignment_history[:-1] + (
        dataclasses.replace(last, summary=completed_summary(every)),))
    if old == goal:
        return None
    older: Changes = {**changes, ("goal", ""): old}
    try:
        built = trees.build(repo, parent.tree_id, older, write=False)
    except (LizaError, pygit2.GitError, OSError, KeyError):
        return None
    return (older, built) if built.tree == commit.tree_id else None


def legacy_anomaly(repo: pygit2.Repository, parent: pygit2.Commit | None, commit: pygit2.Commit,
                    changes: Changes) -> tuple[Changes, trees.Built] | None:
    """The one known legacy encoding: older gitliza wrote an anomaly's details in the order they
    were typed, while the recorded args (sorted JSON) replay them sorted, so such a commit never
    reproduced its own tree. It is accepted when it is exactly that and nothing else: the commit
    adds one anomaly blob whose entry is the replayed one with the same details in another order,
    at the key the old code derived from those bytes, and the tree rebuilt with that entry is the
    commit's tree. The content is the same; only the order of a mapping differs."""
    journal = [(k, v) for k, v in changes.items() if k[0] == "anomalies" and v is not None]
    if parent is None or len(journal) != 1:
        return None
    (_, key), entity = journal[0]
    try:
        added = [d.new_file.path for d in parent.tree.diff_to_tree(commit.tree).deltas
                 if d.status == pygit2.enums.DeltaStatus.ADDED
                 and d.new_file.path.startswith("anomalies/")]
        if len(added) != 1:
            return None
        where = layout.parse_path(added[0])
        if where is None or where[0] != "anomalies":
            return None
        recorded = decode_blob("anomalies", where[1], commit.tree[added[0]].data,  # type: ignore[union-attr]
                               added[0])
    except (LizaError, pygit2.GitError, KeyError, ValueError):
        return None
    typed = {(k, type(v), v) for k, v in recorded.details}
    if (len(recorded.details) != len(entity.details) or typed != {(k, type(v), v) for k, v in
                                                                   entity.details}
            or dataclasses.replace(recorded, details=entity.details) != entity
            or journal_key(recorded, entity.timestamp) != where[1]):
        return None
    older: Changes = {k: v for k, v in changes.items() if k != ("anomalies", key)}
    older[("anomalies", where[1])] = recorded
    try:
        built = trees.build(repo, parent.tree_id, older, write=False)
    except (LizaError, pygit2.GitError, OSError, KeyError):
        return None
    return (older, built) if built.tree == commit.tree_id else None


def legacy_anomalies(board: Board) -> list[str]:
    """Keys of the anomalies on `board` stored in the legacy (typed) detail order: what `doctor`
    explains. Cheap: journals are small and nothing but the current tree is read."""
    out = []
    for key in board.keys("anomalies"):
        a = board.get("anomalies", key)
        if a is not None and a.details != canonical_details(a.details):
            out.append(key)
    return out
