"""The one legacy encoding verify accepts, named and not hidden: older gitliza wrote an anomaly's
details in the order they were typed. `legacy_anomaly` recognises exactly that encoding of a commit
(verify reports it), `legacy_anomalies` lists the anomalies a board still holds in it (doctor
explains them)."""
from __future__ import annotations

import dataclasses

import pygit2

from gitliza.core import layout
from gitliza.core.board import Board, Changes, journal_key
from gitliza.core.ops.journal import canonical_details
from gitliza.errors import LizaError
from gitliza.git.objects import trees
from gitliza.git.source import decode_blob

LEGACY_ANOMALY = ("anomaly details in the order they were typed (gitliza before the canonical "
                  "order, docs/lifecycle.md \"Anomaly details\")")
LEGACY_SUBJECT = ("a subject with raw control characters (gitliza before subjects were escaped, "
                  "docs/security.md \"Hostile input\")")


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
