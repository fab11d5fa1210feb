"""Where each entity lives in a state commit's tree (the storage format, version FORMAT_VERSION).

    format                      "gitliza-state <version>"
    goal.toml config.toml sprint.toml circuit_breaker.toml
    tasks/<xx>/<task-id>.toml   live tasks      <xx>: 2 hex digits of sha1(key), a fan-out so that
    archive/<xx>/<task-id>.toml terminal tasks  no tree grows past a few hundred entries
    agents/<xx>/<agent-id>.toml  discovered/..  handoff/<xx>/<task-id>.toml
    anomalies/<xx>/<stamp>-<digest>.toml  spec_changes/..  human_notes/..   (journals)
"""
from __future__ import annotations

import hashlib

from gitliza.core.board import COLLECTIONS, SINGLETONS
from gitliza.core.model import FORMAT_VERSION

FORMAT_FILE = "format"
FORMAT_BLOB = f"gitliza-state {FORMAT_VERSION}\n".encode()
SUFFIX = ".toml"


def bucket(key: str) -> str:
    return hashlib.sha1(key.encode()).hexdigest()[:2]


def path_of(coll: str, key: str = "") -> str:
    if coll in SINGLETONS:
        return coll + SUFFIX
    if coll in COLLECTIONS:
        return f"{coll}/{bucket(key)}/{key}{SUFFIX}"
    raise KeyError(coll)


def parse_path(path: str) -> tuple[str, str] | None:
    """(collection, key) for a blob path of this layout, or None."""
    parts = path.split("/")
    if len(parts) == 1 and parts[0].endswith(SUFFIX) and parts[0][:-5] in SINGLETONS:
        return parts[0][:-5], ""
    if (len(parts) == 3 and parts[0] in COLLECTIONS and parts[2].endswith(SUFFIX)
            and bucket(parts[2][:-5]) == parts[1]):
        return parts[0], parts[2][:-5]
    return None
