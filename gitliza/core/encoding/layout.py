"""Where each entity lives in a state commit's tree (the storage format, version FORMAT_VERSION).

    format                      "gitliza-state <version>"   (core/encoding/versions.py: versions, migrations)
    goal.toml config.toml sprint.toml circuit_breaker.toml control.toml (pause/abort/checkpoint)
    tasks/<a>/<b>/<task-id>.toml    live tasks     <a>, <b>: the first two hex digits of
    archive/<a>/<b>/<task-id>.toml  terminal tasks  sha1(key), a 16 x 16 fan-out
    agents/<a>/<agent-id>.toml  discovered/<a>/..  handoff/<a>/<task-id>.toml
    supervisors/<a>/<agent-id>.toml   the generation token of the agent's supervisor
    anomalies/<a>/<stamp>-<digest>.toml  spec_changes/<a>/..  human_notes/<a>/..   (journals)

Why 16 x 16 and not one level of 256 (DESIGN.md's example): a transition rewrites every tree on
the path of each blob it changes, and writing a tree costs about 75 us plus about 1 us per entry
(measured, benchmarks/). At 10,000 tasks one 256-wide level costs ~300 us per write, two 16-wide
levels ~180 us, and the cost stays nearly flat from 10 to 10,000 tasks (about 40 tasks per leaf).
Smaller collections (agents, journals) get one 16-wide level.
"""
from __future__ import annotations

from gitliza.core.encoding import versions as formats
from gitliza.core.board import COLLECTIONS, SINGLETONS
from gitliza.core.hashing import sha1
from gitliza.core.model import FORMAT_VERSION

FORMAT_FILE = formats.FORMAT_FILE
FORMAT_BLOB = formats.blob(FORMAT_VERSION)  # what this gitliza writes
SUFFIX = ".toml"


# Fan-out depth per collection (levels of one hex digit each).
DEPTH: dict[str, int] = {c: 1 for c in COLLECTIONS}
DEPTH.update(tasks=2, archive=2)


def buckets(coll: str, key: str) -> tuple[str, ...]:
    digest = sha1(key.encode()).hexdigest()
    return tuple(digest[: DEPTH[coll]])


def path_of(coll: str, key: str = "") -> str:
    if coll == FORMAT_FILE and not key:  # the `format` blob (an upgrade op's change)
        return FORMAT_FILE
    if coll in SINGLETONS:
        return coll + SUFFIX
    if coll in COLLECTIONS:
        return "/".join((coll, *buckets(coll, key), key + SUFFIX))
    raise KeyError(coll)


def parse_path(path: str) -> tuple[str, str] | None:
    """(collection, key) for a blob path of this layout, or None."""
    parts = path.split("/")
    if len(parts) == 1 and parts[0].endswith(SUFFIX) and parts[0][:-5] in SINGLETONS:
        return parts[0][:-5], ""
    coll = parts[0]
    if coll in COLLECTIONS and len(parts) == DEPTH[coll] + 2 and parts[-1].endswith(SUFFIX):
        key = parts[-1][: -len(SUFFIX)]
        if tuple(parts[1:-1]) == buckets(coll, key):
            return coll, key
    return None
