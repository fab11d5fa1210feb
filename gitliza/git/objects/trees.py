"""The one tree builder: a state tree plus entity changes gives the next state tree.

Two callers need the same answer for different reasons: the write path (`Store.build_tree`) must
store the new blobs and trees, while `verify` (also run by the server hook inside a push
quarantine, and by sync's dry runs) must only know the tree id, writing nothing: a forged commit
then leaves no garbage behind and the quarantine receives no objects. Keeping one implementation
with two sinks ("write" and "hash only") is what guarantees that a replay recomputes exactly the
tree a transition wrote.

The objects are built here, not by libgit2's TreeBuilder, so that both sinks share every byte:

- a blob or tree id is sha1(b"<type> <len>\\0" + body);
- a tree body is its entries sorted by name, a subtree sorting as if its name ended in "/", each
  `<octal mode> <name>\\0<20-byte id>`, the mode without leading zeros (`100644`, `40000`).

Only the trees on the changed paths are rebuilt; every other entry, subtrees included, keeps the
base tree's id. Base trees are read raw from the object database and parsed here, and parsed
entries are cached by tree id (objects never change): a long-lived process (verify, a supervisor)
reads the tree it built for one transition as the base of the next without touching the odb.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import pygit2

from gitliza.core.encoding import versions, layout, tomlblob
from gitliza.git.objects import ownstore
from gitliza.git.objects import packfile
from gitliza.git.objects import packs
from gitliza.git.memo import Generations
from gitliza.core.board import Changes, Key
from gitliza.errors import InconsistentState, hint_for

BLOB_HEAD = b"100644 "
TREE_HEAD = b"40000 "

# name -> (sort key, head, raw id), head being the entry's bytes before the id: b"<mode> <name>\0".
# The sort key (the name, plus "/" for a subtree) comes first so that sorting the values sorts the
# entries the way git does; names are unique, so the comparison never reaches the other fields.
Entry = tuple[bytes, bytes, bytes]
Entries = dict[bytes, Entry]
PARSED_ENTRIES = 4_096  # per generation of the cache below

# Parsed trees by raw id, shared by every repository in the process: the key is the hash of the
# content, so an entry is right wherever the tree is found. Trees only computed (the hash sink) are
# cached too; that is safe because a tree is looked up only as the base given by the caller or as a
# subtree of one, and the caller's base comes from the repository, so a tree reached from it exists
# there with all its subtrees. Two generations (memo.py): the trees a process keeps editing stay,
# the ones transitions replaced go. Counted in entries (~250 bytes each parsed), not trees: 2 x 1,024
# trees held 3.2 MB in a coder at the 300th task of a busy team and more as the archive's leaves
# fill; a transition edits the trees on the paths it changes, ~100 entries.
_PARSED: Generations[bytes, Entries] = Generations(PARSED_ENTRIES, weight=len)


# layout.path_of hashes the key (sha1) for its fan-out; verify asks for the same few paths on every
# commit (the tasks an op reads and writes), so they are remembered: the recent ones. Every task a
# long-lived process ever touched stayed up to 65,536 entries (~15 MB), then up to
# 4,096 (two per task: a supervisor's grew with every task for its first 2,000).
path_of = functools.lru_cache(maxsize=1 << 9)(layout.path_of)


@dataclass(frozen=True)
class Built:
    """A new state tree and the ids of the entity blobs it holds (None: the entity was removed),
    so that callers need not look them up again."""

    tree: pygit2.Oid
    blobs: dict[Key, pygit2.Oid | None]


def build(repo: pygit2.Repository, base: pygit2.Tree | pygit2.Oid | None, changes: Changes,
          *, write: bool) -> Built:
    """The tree of `base` (None: the empty board, which gets the `format` blob) with `changes`
    applied. `write=True` stores the new blobs and trees in `repo` (one pack); `write=False` only
    computes their ids and writes nothing."""
    if not write:
        return build_into(_Hasher(repo), base, changes)
    batch = Batch(repo)
    built = build_into(batch, base, changes)
    batch.flush()
    return built


def build_into(sink: _Hasher, base: pygit2.Tree | pygit2.Oid | None, changes: Changes) -> Built:
    """`build` with the sink given: a `Batch` collects the new objects for the caller to add to
    (the commit) and flush."""
    nested: dict[bytes, Any] = {}  # name -> raw blob id, None (removed) or a dict (a subtree)
    blobs: dict[Key, pygit2.Oid | None] = {}
    for (coll, key), entity in changes.items():
        *dirs, leaf = path_of(coll, key).encode().split(b"/")
        node = nested
        for d in dirs:
            node = node.setdefault(d, {})
        raw: bytes | None
        if (coll, key) == versions.FORMAT_KEY:  # an upgrade: the version, not an entity
            raw = sink.store(b"blob", versions.blob(entity))
        else:
            raw = None if entity is None else sink.store(b"blob", tomlblob.dumps(entity))
        node[leaf] = raw
        blobs[(coll, key)] = None if raw is None else pygit2.Oid(raw=raw)
    if base is None and versions.FORMAT_KEY not in changes:  # a new board: this gitliza's format
        nested[layout.FORMAT_FILE.encode()] = sink.store(b"blob", layout.FORMAT_BLOB)
    tree = sink.edit(None if base is None else _raw_id(base), nested)
    if tree is None:  # every entry removed: the empty tree (never happens with a `format` blob)
        tree = sink.tree({})
    return Built(pygit2.Oid(raw=tree), blobs)


def tree_id(repo: pygit2.Repository, base: pygit2.Tree | pygit2.Oid | None,
            changes: Changes) -> pygit2.Oid:
    """The id of the tree `build(..., write=True)` would write, without writing anything."""
    return build(repo, base, changes, write=False).tree


def _raw_id(base: pygit2.Tree | pygit2.Oid) -> bytes:
    return base.raw if isinstance(base, pygit2.Oid) else base.id.raw


class _Hasher:
    """The hash-only sink: object ids computed in memory."""

    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo = repo

    def store(self, kind: bytes, body: bytes) -> bytes:
        """The raw id of the object of type `kind` (b"blob", b"tree") with this body."""
        return packfile.object_id(kind, body)

    def tree(self, entries: Entries) -> bytes:
        body = b"".join([head + oid for _key, head, oid in sorted(entries.values())])
        raw = self.store(b"tree", body)
        _PARSED[raw] = entries
        return raw

    def entries(self, raw: bytes) -> Entries:
        found = _PARSED.get(raw)
        if found is None:
            kind, body = self.repo.odb.read(pygit2.Oid(raw=raw))
            if kind != pygit2.GIT_OBJECT_TREE:
                raise InconsistentState(f"{pygit2.Oid(raw=raw)} is not a tree")
            found = parsed(raw, body)
        return found

    def edit(self, base: bytes | None, updates: dict[bytes, Any]) -> bytes | None:
        """The raw id of tree `base` (None: empty) with `updates` applied: name -> a raw blob id,
        None (remove) or a dict (the updates of a subtree). None when the result is empty, which
        removes it from its parent: git has no empty subtrees."""
        entries = dict(self.entries(base)) if base is not None else {}
        for name, upd in updates.items():
            if type(upd) is dict:
                old = entries.get(name)
                # A base entry that is not a tree (a forged tree) is replaced, not descended into.
                sub = self.edit(old[2] if old is not None and old[1].startswith(TREE_HEAD) else None,
                                upd)
                if sub is None:
                    entries.pop(name, None)
                else:
                    entries[name] = (name + b"/", TREE_HEAD + name + b"\0", sub)
            elif upd is None:
                entries.pop(name, None)
            else:
                entries[name] = (name, BLOB_HEAD + name + b"\0", upd)
        return self.tree(entries) if entries else None


class Batch(_Hasher):
    """The write sink: the same bytes, kept until `flush` writes them all as one pack
    (gitliza/git/objects/packs.py), or, where packs cannot be written directly (a quarantined or
    redirected object directory), through libgit2's object database one by one."""

    _TYPES = {b"blob": pygit2.GIT_OBJECT_BLOB, b"tree": pygit2.GIT_OBJECT_TREE,
              b"commit": pygit2.GIT_OBJECT_COMMIT}

    def __init__(self, repo: pygit2.Repository) -> None:
        super().__init__(repo)
        self.objects: dict[bytes, tuple[bytes, bytes, bytes]] = {}

    def store(self, kind: bytes, body: bytes) -> bytes:
        raw = super().store(kind, body)
        self.objects[raw] = (raw, kind, body)
        return raw

    def entries(self, raw: bytes) -> Entries:
        """A tree built in this batch is not in the repository until `flush`: read it from here
        (the shared parse cache may have been emptied meanwhile)."""
        pending = self.objects.get(raw)
        if pending is not None and pending[1] == b"tree" and raw not in _PARSED:
            return parse(pending[2])
        return super().entries(raw)

    def flush(self) -> None:
        objs, self.objects = list(self.objects.values()), {}
        try:
            # gitliza's own store, an alternate git's maintenance never prunes (ownstore.py):
            # these objects are unreferenced until the caller moves its ref.
            target = ownstore.target(self.repo)
            if target is None:
                for _raw, kind, body in objs:
                    self.repo.odb.write(self._TYPES[kind], body)
                return
            packs.add(target, objs)
        except OSError as e:  # a full disk, a read-only object store: the ref was not moved
            from gitliza.errors import GitFailure
            raise GitFailure(f"cannot write objects to {target}: {e.strerror or e}",
                             hint=hint_for(e)) from None


def parsed(raw: bytes, body: bytes) -> Entries:
    """The entries of tree `raw` (whose body is `body`), from the shared cache when it has them,
    else parsed and cached: gitliza/git/remotes/direct.py copies trees a replay just built, or that the
    replay after a fetch reads next."""
    found = _PARSED.get(raw)
    if found is None:
        found = parse(body)
        _PARSED[raw] = found
    return found


def parse(body: bytes) -> Entries:
    """A raw tree body's entries. Leading zeros of a mode are dropped, as libgit2 and git do when
    they rewrite a tree."""
    out: Entries = {}
    pos, end = 0, len(body)
    try:
        while pos < end:
            sp = body.index(b" ", pos)
            nul = body.index(b"\0", sp)
            head = body[pos:nul + 1].lstrip(b"0")
            name = body[sp + 1:nul]
            oid = body[nul + 1:nul + 21]
            if len(oid) != 20 or not name:
                raise ValueError("truncated")
            out[name] = (name + b"/" if head.startswith(TREE_HEAD) else name, head, oid)
            pos = nul + 21
    except ValueError:
        raise InconsistentState("malformed tree object") from None
    return out
