"""A board read lazily from one state tree: `GitSource`, the `Source` the core's Board reads from.

An entity is decoded on first access, strictly (a blob may come from someone else's push: unknown
keys, wrong types and a blob holding another entity than its path names are refused), and its
newest version read is kept by the process (`_DECODED`). `Tables` carries parsed TOML tables between processes
(gitliza/git/tablecache.py). `check_format` refuses a state tree in a format this gitliza does not
read (newer than its own: core/encoding/versions.py); the format of a tree read is the board's
`format_version`. The store (store.py) and verify, which replays imports too, read boards through here.
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

import pygit2

from gitliza.core.encoding import codec, versions, layout, tomlblob
from gitliza.core.board import ENTITY_TYPES, JOURNALS
from gitliza.errors import InconsistentState
from gitliza.git import treepath
from gitliza.git.memo import Generations

# Decoded entities: per entity (collection, key), the version last decoded and its blob oid.
# Successive states share most blobs, so a long-lived process (supervisor, watcher, verify,
# benchmarks) parses each entity version once. One version per entity: the version a transition
# replaced goes as soon as the new one is read. (Keyed by blob oid, every replaced version stayed
# until 4,096 newer ones had pushed it out: a process beating every second held thousands of
# dead agent records, +2 MB of RSS between its 1,000th and 4,000th transition.) A
# process comparing two states decodes an entity that changed between them each time it
# alternates, which none does in a loop. Two generations (memo.py) bound the entities kept.
_DECODED: Generations[tuple[str, str], tuple[pygit2.Oid, Any]] = Generations(2_048)
# The collections that grow with the team's history (a record per task that ended, per agent run,
# per journal entry) have a cache of their own, small: a supervisor reads such a record once or
# twice (the task it merged, the totals its run adds to) and never again, and in the cache of the
# live board each stayed until 4,096 newer entities had come: +3.4 KB per task merged, a
# supervisor's memory growing with the team's history. A process that reads the whole
# archive again and again decodes it at each read once it is larger than this: time for a reader
# of all of history, rather than memory for every process that ever touched a record.
# Two generations of 16: of 64, a reviewer's filled over its first 128 merges (an archived task
# carries ~25 history entries), growth a soak from the 100th task still saw.
HISTORY = frozenset({"archive", "usage", "usage_totals", "discovered", "handoff", *JOURNALS})
_DECODED_HISTORY: Generations[tuple[str, str], tuple[pygit2.Oid, Any]] = Generations(16)


def _decoded(coll: str) -> Generations[tuple[str, str], tuple[pygit2.Oid, Any]]:
    return _DECODED_HISTORY if coll in HISTORY else _DECODED


class Tables(dict[bytes, dict[str, Any]]):
    """Blob id (raw) -> its TOML table, shared across processes by gitliza/git/tablecache.py so
    that a command reading a whole board (`status`) need not read and parse every blob again.
    `used` is what this process read (what is worth keeping), `missed` how many were not there."""

    def __init__(self, saved: dict[bytes, dict[str, Any]] | None = None) -> None:
        super().__init__(saved or {})
        self.used: dict[bytes, dict[str, Any]] = {}
        self.missed = 0


class GitSource:
    """Entities decoded on first access from one state tree (a `Source` for the core's Board)."""

    def __init__(self, repo: pygit2.Repository, tree: pygit2.Tree | None,
                 tables: Tables | None = None) -> None:
        self._repo = repo
        self._tree = tree
        self._tables = tables
        self._cache: dict[tuple[str, str], Any] = {}
        # Blob ids of the entities `keys` has listed: reading a whole collection (status, metrics,
        # the materializer) then finds each one without a path lookup, and a blob already decoded
        # in this process without reading it at all.
        self._ids: dict[tuple[str, str], pygit2.Oid] = {}
        self._listed: dict[str, list[str]] = {}

    def has(self, coll: str, key: str = "") -> bool:
        """Whether the entity exists, without decoding it."""
        return self._tree is not None and treepath.has(self._tree, layout.path_of(coll, key))

    def get(self, coll: str, key: str) -> Any | None:
        k = (coll, key)
        if k in self._cache:
            return self._cache[k]
        if k == versions.FORMAT_KEY:
            self._cache[k] = None if self._tree is None else format_of(self._tree)
            return self._cache[k]
        value = None
        oid = self._ids.get(k)
        if oid is None and self._tree is not None:
            try:
                oid = treepath.entry(self._tree, layout.path_of(coll, key)).id
            except KeyError:
                pass
        if oid is None:
            # Gone from this tree (a task moved to archive/, a removed entity): its decoded
            # version is dead weight in a long-lived process's cache, one per task that ended.
            _decoded(coll).discard(k)
        else:
            found = _decoded(coll).get(k)
            if found is not None and found[0] == oid:
                value = found[1]
            else:
                if self._tables is None:
                    value = decode_blob(coll, key, self._repo[oid].data,  # type: ignore[attr-defined]
                                        layout.path_of(coll, key))
                else:
                    value = self._from_tables(coll, key, oid)
                _decoded(coll)[k] = (oid, value)
        self._cache[k] = value
        return value

    def many(self, coll: str, keys: Iterable[str]) -> Iterator[Any | None]:
        """`get` of each key in turn: what reading a whole collection (`status`'s 1,000 tasks,
        the metrics) gets, with the per-entity look-ups hoisted out of the loop (~2 us of ~4 a
        task were `get`'s calls and attribute look-ups) and what it decoded given to the memo in
        one step. Lazy, as `get` is: a reader that stops early decodes no more than it read. An
        entity this source has not listed, or that it decodes from its blob (no shared tables),
        goes through `get` itself."""
        cache, ids, memo, tables = self._cache, self._ids, _decoded(coll), self._tables
        if tables is None or coll == versions.FORMAT_KEY[0]:
            for key in keys:
                yield self.get(coll, key)
            return
        used, saved, cls = tables.used, tables.get, ENTITY_TYPES[coll]
        decode, recall = codec.decode, memo.get
        fresh: dict[tuple[str, str], tuple[pygit2.Oid, Any]] = {}
        try:
            for key in keys:
                k = (coll, key)
                value = cache.get(k, _ABSENT)
                if value is _ABSENT:
                    oid = ids.get(k)
                    if oid is None:
                        value = self.get(coll, key)
                    else:
                        found = recall(k)
                        if found is not None and found[0] == oid:
                            value = found[1]
                        else:
                            raw = oid.raw
                            table = saved(raw)
                            if table is not None and coll in _BY_ID:
                                try:  # decode_table's, inline; an error sends us to the blob
                                    value = decode(cls, table, coll)
                                except InconsistentState:
                                    pass
                            if table is not None and value is not _ABSENT and value.id == key:
                                used[raw] = table
                            else:
                                value = self._from_tables(coll, key, oid)
                            fresh[k] = (oid, value)
                        cache[k] = value
                yield value
        finally:
            memo.update(fresh)

    def _from_tables(self, coll: str, key: str, oid: pygit2.Oid) -> Any:
        assert self._tables is not None
        raw = oid.raw
        table = self._tables.get(raw)
        if table is not None:
            try:  # no location for errors: any error sends us to the blob, which has one
                value = decode_table(coll, key, table, coll)
                self._tables.used[raw] = table
                return value
            except InconsistentState:  # a damaged cache entry: the blob itself decides
                pass
        path = layout.path_of(coll, key)
        self._tables.missed += 1
        table = self._tables[raw] = tomlblob.table(self._repo[oid].data, path)  # type: ignore[attr-defined]
        value = decode_table(coll, key, table, path)
        self._tables.used[raw] = table
        return value

    def keys(self, coll: str) -> list[str]:
        # Listed once per source: the tree never changes, and a command reading the whole board
        # (`status`: the task table, the metrics, the merge queue, the lock waits...) lists the
        # tasks several times; each walk visited every leaf again (~6,000 at 1,000 tasks).
        listed = self._listed.get(coll)
        if listed is None:
            listed = self._listed[coll] = self._list(coll)
        return listed

    def _list(self, coll: str) -> list[str]:
        if self._tree is None:
            return []
        listed: list[str] = []
        if coll in self._tree:
            self._leaves(coll, self._tree[coll], layout.DEPTH[coll], listed)
        # Listed whole: a decoded entity of this collection that the tree no longer holds is dead
        # weight (a task moved to archive/ that this process never asks for by its key again: a
        # coder's supervisor kept the last live record of every task the team ever had, ~300
        # objects per task, up to the cache's 4,096 entries).
        if coll not in HISTORY:  # (a comparison, not a call, per entry held: 1,000s of them)
            present = set(listed)
            for k in [k for k in _DECODED.keys() if k[0] == coll and k[1] not in present]:
                _DECODED.discard(k)
        return listed

    def _leaves(self, coll: str, tree: pygit2.Object, depth: int, out: list[str]) -> None:
        """The keys under `tree` (`depth` levels of fan-out above the entity files) into `out`,
        in tree order, and each one's blob id into `_ids`."""
        assert isinstance(tree, pygit2.Tree)
        if depth:
            for entry in tree:
                self._leaves(coll, self._repo[entry.id], depth - 1, out)
            return
        ids, suffix, cut = self._ids, layout.SUFFIX, -len(layout.SUFFIX)
        for entry in tree:
            name = entry.name or ""
            if name.endswith(suffix):
                key = name[:cut]
                ids[(coll, key)] = entry.id
                out.append(key)


_ABSENT = object()
_BY_ID = frozenset(("tasks", "archive", "agents", "discovered"))  # entities named by their `id`


def _ident(coll: str, entity: Any) -> Any:
    if coll in _BY_ID:
        return entity.id
    return entity.task if coll == "handoff" else None


def decode_blob(coll: str, key: str, data: bytes, path: str) -> Any:
    return decode_table(coll, key, tomlblob.table(data, path), path)


def decode_table(coll: str, key: str, table: dict[str, Any], path: str) -> Any:
    entity: Any = codec.decode(ENTITY_TYPES[coll], table, where=path)
    ident = _ident(coll, entity)
    if ident is None:
        ident = key
    if key and ident != key:
        raise InconsistentState(f"{path} holds {ident!r}, not {key!r}")
    return entity


def format_of(tree: pygit2.Tree) -> int | None:
    """The storage format a state tree names (None: no `format` blob, or not one we recognise)."""
    try:
        data = tree[layout.FORMAT_FILE].data  # type: ignore[union-attr]
    except KeyError:
        return None
    return versions.parse(data)


def check_format(tree: pygit2.Tree, where: str) -> int:
    """The tree's storage format, if this gitliza reads it; else a one-line InconsistentState
    (exit 4) naming the board's version and ours, before anything of the board is read."""
    try:
        data = tree[layout.FORMAT_FILE].data  # type: ignore[union-attr]
    except KeyError:
        raise InconsistentState(f"state commit {where[:12]} has no `format` blob") from None
    if data == layout.FORMAT_BLOB:
        return versions.FORMAT_VERSION
    return versions.check_readable(versions.parse(data), data, where)
