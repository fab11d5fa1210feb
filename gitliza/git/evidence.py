"""Acceptance evidence read from the reviewed commit (core/quorum.py): a path an
approval names must be a file of that commit, and its line a line of that file. The verdict
checks it before writing; `verify`, the client hooks and the server hook check it again on
replay (services/verify/engine.py), so a vote whose evidence points at nothing is refused
wherever the board is read."""
from __future__ import annotations

from typing import Iterable

import pygit2

from gitliza.core.model import Evidence
from gitliza.core.quorum import split_path
from gitliza.git import treepath


def evidence_gaps(repo: pygit2.Repository, commit: str,
                  evidence: Iterable[Evidence]) -> list[str] | None:
    """One line per path evidence that `commit` does not bear out (empty: all of it does);
    None when `commit` is not in this clone, so nothing could be checked (a clone may lack the
    branch of a task abandoned after its approval: `verify` counts it, it does not fail)."""
    paths = [e for e in evidence if e.kind == "path"]
    if not paths:
        return []
    try:
        tree = repo[commit].peel(pygit2.Commit).tree
    except (KeyError, ValueError, pygit2.GitError):
        return None
    gaps = []
    for e in paths:
        path, line = split_path(e.ref)
        try:
            obj = treepath.entry(tree, path)
        except KeyError:
            gaps.append(f"for criterion {e.criterion}: {path} is not in {commit[:12]}")
            continue
        if not isinstance(obj, pygit2.Blob):
            gaps.append(f"for criterion {e.criterion}: {path} is not a file in {commit[:12]}")
        elif line is not None:
            data = obj.data
            count = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
            if line > count:
                gaps.append(f"for criterion {e.criterion}: {path} has {count} lines in "
                            f"{commit[:12]}, not {line}")
    return gaps
