"""The one tree builder (gitliza/git/objects/trees.py): its hash-only and write sinks agree with each other,
with libgit2's TreeBuilder and with git itself (an index updated by `git update-index` and turned
into a tree by `git write-tree`), on random sequences of change sets."""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pygit2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitliza.core.encoding import layout, tomlblob
from gitliza.core.board import Changes
from gitliza.core.model import Agent, Config, Task
from gitliza.core.states import Role, TaskState
from gitliza.errors import InconsistentState
from gitliza.git.objects import trees

T = "2025-01-17T14:00:00Z"
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)

# Few keys, so that change sets revisit, replace and delete the same entities, and empty buckets
# (a subtree whose last entry goes must disappear, as git has no empty trees).
TASK_KEYS = [f"t-{i}" for i in range(8)]
AGENT_KEYS = ["coder-1", "coder-2", "rev-1"]


def entity(coll: str, key: str) -> st.SearchStrategy[Any]:
    if coll in ("tasks", "archive"):
        return st.builds(Task, id=st.just(key), description=TEXT,
                         status=st.sampled_from(list(TaskState)), created=st.just(T),
                         priority=st.integers(1, 5))
    if coll == "agents":
        return st.builds(Agent, id=st.just(key), role=st.sampled_from(list(Role)))
    return st.builds(Config, max_coder_iterations=st.integers(1, 20))


KEYS = ([("tasks", k) for k in TASK_KEYS] + [("archive", k) for k in TASK_KEYS[:3]]
        + [("agents", k) for k in AGENT_KEYS] + [("config", "")])


@st.composite
def change_set(draw: st.DrawFn) -> Changes:
    keys = draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=6, unique=True))
    return {(c, k): draw(st.one_of(st.none(), entity(c, k)) if c != "config" else entity(c, k))
            for c, k in keys}


def treebuilder(repo: pygit2.Repository, base: pygit2.Tree | None, changes: Changes) -> pygit2.Oid:
    """The reference: libgit2's TreeBuilder along the changed paths (the write path before
    trees.py)."""
    nested: dict[str, Any] = {}
    for (coll, key), ent in changes.items():
        *dirs, leaf = layout.path_of(coll, key).split("/")
        node = nested
        for d in dirs:
            node = node.setdefault(d, {})
        node[leaf] = None if ent is None else tomlblob.dumps(ent)
    if base is None:
        nested[layout.FORMAT_FILE] = layout.FORMAT_BLOB

    def edit(tree: pygit2.Tree | None, updates: dict[str, Any]) -> pygit2.Oid | None:
        tb = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
        for name, upd in updates.items():
            if isinstance(upd, dict):
                sub = tree[name] if tree is not None and name in tree else None
                oid = edit(sub, upd)  # type: ignore[arg-type]
                if oid is None:
                    if tb.get(name) is not None:
                        tb.remove(name)
                else:
                    tb.insert(name, oid, pygit2.GIT_FILEMODE_TREE)
            elif upd is None:
                if tb.get(name) is not None:
                    tb.remove(name)
            else:
                tb.insert(name, repo.create_blob(upd), pygit2.GIT_FILEMODE_BLOB)
        return None if len(tb) == 0 else tb.write()

    oid = edit(base, nested)
    assert oid is not None
    return oid


def git(repo: Path, *args: str, stdin: str = "", index: Path | None = None) -> str:
    env = dict(os.environ)
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    return subprocess.run(["git", *args], cwd=repo, env=env, input=stdin, capture_output=True,
                          text=True, check=True).stdout.strip()


def objects(repo: pygit2.Repository) -> set[str]:
    return {str(o) for o in repo.odb}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(change_set(), min_size=1, max_size=5))
def test_hash_write_treebuilder_and_git_agree(steps: list[Changes]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "repo"
        pygit2.init_repository(str(path), bare=True)
        repo = pygit2.Repository(str(path))
        index = Path(tmp) / "index"  # git's own view of the same board, one change set at a time
        base: pygit2.Tree | None = None
        for changes in steps:
            before = objects(repo)
            hashed = trees.build(repo, base, changes, write=False)
            assert objects(repo) == before  # the hash sink writes nothing
            written = trees.build(repo, base, changes, write=True)
            assert written == hashed
            assert treebuilder(repo, base, changes) == hashed.tree
            lines = [] if base is not None else \
                [f"100644 {repo.create_blob(layout.FORMAT_BLOB)}\t{layout.FORMAT_FILE}"]
            for (coll, key), blob in hashed.blobs.items():
                where = layout.path_of(coll, key)
                lines.append(f"0 {'0' * 40}\t{where}" if blob is None else
                             f"100644 {blob}\t{where}")
                assert (blob is None) == (changes[(coll, key)] is None)
            git(path, "update-index", "--index-info", stdin="\n".join(lines) + "\n", index=index)
            assert git(path, "write-tree", index=index) == str(hashed.tree)
            tree = repo[hashed.tree]
            assert isinstance(tree, pygit2.Tree)
            base = tree
        git(path, "fsck", "--strict", "--no-dangling")  # every object written is well formed


def test_reuses_unchanged_subtrees_and_drops_emptied_ones(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path / "repo"), bare=True)
    one = Task(id="t-1", description="d", status=TaskState.UNCLAIMED, created=T)
    two = Task(id="t-2", description="d", status=TaskState.UNCLAIMED, created=T)
    assert layout.path_of("tasks", "t-1")[:7] != layout.path_of("tasks", "t-2")[:7]  # tasks/<a>
    first = repo[trees.build(repo, None, {("tasks", "t-1"): one, ("tasks", "t-2"): two},
                             write=True).tree]
    second = repo[trees.build(repo, first, {("tasks", "t-1"): None}, write=True).tree]
    assert isinstance(first, pygit2.Tree) and isinstance(second, pygit2.Tree)
    assert layout.path_of("tasks", "t-1")[:7] not in second  # the emptied bucket is gone
    kept = layout.path_of("tasks", "t-2")[:7]
    assert second[kept].id == first[kept].id  # the untouched subtree keeps its id
    assert second["format"].id == first["format"].id
    last = trees.build(repo, second, {("tasks", "t-2"): None}, write=True).tree
    assert last == trees.build(repo, second, {("tasks", "t-2"): None}, write=False).tree
    assert str(last) == git(tmp_path / "repo", "mktree",
                            stdin=f"100644 blob {first['format'].id}\tformat\n")


def test_a_blob_where_a_directory_belongs_is_replaced(tmp_path: Path) -> None:
    """A forged base (a blob named `tasks`) is not descended into: the blob is replaced by the
    directory, as if it had not been there, and verify then sees a different tree."""
    repo = pygit2.init_repository(str(tmp_path / "repo"), bare=True)
    tb = repo.TreeBuilder()
    tb.insert("format", repo.create_blob(layout.FORMAT_BLOB), pygit2.GIT_FILEMODE_BLOB)
    # A file whose name extends the directory's: git sorts "tasks.x" before the tree "tasks"
    # (compared as "tasks/"), the one place where that rule shows.
    tb.insert("tasks.x", repo.create_blob(b"x"), pygit2.GIT_FILEMODE_BLOB)
    clean = repo[tb.write()]
    tb.insert("tasks", repo.create_blob(b"not a tree"), pygit2.GIT_FILEMODE_BLOB)
    forged = repo[tb.write()]
    assert isinstance(clean, pygit2.Tree) and isinstance(forged, pygit2.Tree)
    change = {("tasks", "t-1"): Task(id="t-1", description="d", status=TaskState.UNCLAIMED,
                                     created=T)}
    hashed = trees.build(repo, forged, change, write=False)
    assert hashed == trees.build(repo, forged, change, write=True)
    assert hashed.tree == treebuilder(repo, clean, change)


def test_parse_reads_git_trees_and_refuses_garbage(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path / "repo"), bare=True)
    blob = repo.create_blob(b"x")
    tb = repo.TreeBuilder()
    tb.insert("a", blob, pygit2.GIT_FILEMODE_BLOB)
    tb.insert("a.b", blob, pygit2.GIT_FILEMODE_BLOB_EXECUTABLE)
    sub = tb.write()
    tb.insert("dir", sub, pygit2.GIT_FILEMODE_TREE)
    tree = tb.write()
    _kind, body = repo.odb.read(tree)
    entries = trees.parse(body)
    assert {n: (h, o) for n, (_k, h, o) in entries.items()} == {
        b"a": (b"100644 a\0", blob.raw), b"a.b": (b"100755 a.b\0", blob.raw),
        b"dir": (b"40000 dir\0", sub.raw)}
    # zero-padded modes (written by old tools) read as git rewrites them
    padded = body.replace(b"40000 dir", b"040000 dir")
    assert trees.parse(padded) == entries
    with pytest.raises(InconsistentState):
        trees.parse(body[:-3])
