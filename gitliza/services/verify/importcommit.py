"""Checking an import commit, the other genesis of a board (`git liza import`): its board is in its
tree, and the entities decoded from that tree must match the digest the op records."""
from __future__ import annotations

from typing import Any

import pygit2

from gitliza.core.encoding import layout
from gitliza.core.board import Key
from gitliza.core.ops.base import Outcome
from gitliza.core.ops.governance import Import, genesis
from gitliza.errors import InconsistentState
from gitliza.git.source import decode_blob


def replay_import(repo: pygit2.Repository, tree: pygit2.Tree, op: Import) -> Outcome:
    """What an import commit recorded, checked against its digest (for verify). The entities come
    from the tree; `verify` then checks the tree is exactly the one they make."""
    entities: dict[Key, Any] = {}
    stack: list[tuple[str, pygit2.Tree]] = [("", tree)]
    while stack:
        prefix, node = stack.pop()
        for entry in node:
            path = prefix + (entry.name or "")
            obj = repo[entry.id]
            if isinstance(obj, pygit2.Tree):
                stack.append((path + "/", obj))
                continue
            if path == layout.FORMAT_FILE:
                continue
            where = layout.parse_path(path)
            if where is None or not isinstance(obj, pygit2.Blob):
                raise InconsistentState(f"{path} is not a path of the board's layout")
            entities[where] = decode_blob(where[0], where[1], obj.data, path)
    return genesis(op, entities)
