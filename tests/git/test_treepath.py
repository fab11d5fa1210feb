"""pygit2 keeps every string it is given as a tree path (gitliza/git/treepath.py): a long-lived
process that looks up paths it builds (a task's, a run's, a merge's script) keeps nothing more for
it, and a lookup answers as pygit2's own, in a one-shot command as in a long-lived process."""
from __future__ import annotations

import gc
import sys
from pathlib import Path

import pygit2
import pytest

from gitliza.git import reflookup, treepath
from tests.conftest import git

LOOKUPS = 20_000


def _blocks() -> int:
    gc.collect()
    return sys.getallocatedblocks()


@pytest.fixture
def tree(repo: Path) -> pygit2.Tree:
    (repo / "d").mkdir()
    (repo / "d" / "t-1.toml").write_text("x\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "d")
    return pygit2.Repository(str(repo)).head.peel(pygit2.Tree)


def test_lookups_of_built_paths_keep_nothing_once_installed(tree: pygit2.Tree,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(treepath, "give_back", None)
    n = 1
    built = f"d/t-{n}.toml"
    held = sys.getrefcount(built)
    tree[built]
    # pygit2's own lookup keeps the string (if a later pygit2 stops, this test says so)
    assert sys.getrefcount(built) == held + 1
    reflookup.install()  # as every long-lived process does (a ref watcher, the MCP server)
    assert treepath.give_back is not None
    for name, look in (("entry", lambda: treepath.entry(tree, f"d/t-{n}.toml")),
                       ("missing", lambda: treepath.has(tree, f"d/t-{n}-gone.toml")),
                       ("has", lambda: treepath.has(tree, f"d/t-{n}.toml"))):
        look()
        before = _blocks()
        for _ in range(LOOKUPS):
            look()
        assert _blocks() - before < 100, name  # pygit2's own: one string per lookup, 20,000
    again = f"d/t-{n}.toml"
    held = sys.getrefcount(again)
    treepath.entry(tree, again)
    with pytest.raises(KeyError):
        treepath.entry(tree, again + "-gone")
    assert sys.getrefcount(again) == held


@pytest.mark.parametrize("installed", [False, True])
def test_a_lookup_answers_as_pygit2s_own(tree: pygit2.Tree, installed: bool,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(treepath, "give_back", None)
    if installed:
        reflookup.install()
    assert treepath.entry(tree, "d/t-1.toml").id == tree["d/t-1.toml"].id
    assert treepath.entry(tree, "d").id == tree["d"].id
    assert treepath.has(tree, "d/t-1.toml") and treepath.has(tree, "d")
    assert not treepath.has(tree, "d/none") and not treepath.has(tree, "x")
    for missing in ("d/none", "none/x", "x"):
        with pytest.raises(KeyError):
            treepath.entry(tree, missing)
