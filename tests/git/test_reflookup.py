"""pygit2's reference lookup keeps the name it is given (gitliza/git/reflookup.py): a process that
looks refs up by names it builds keeps nothing more for it, and a lookup answers as pygit2's own."""
from __future__ import annotations

import gc
import sys
from pathlib import Path

import pygit2
import pytest

import gitliza.git  # noqa: F401 - installs the wrapped lookup, as any gitliza import does
from gitliza.git import reflookup
from tests.conftest import git

LOOKUPS = 20_000


def _blocks() -> int:
    gc.collect()
    return sys.getallocatedblocks()


def test_lookups_by_built_names_keep_nothing(repo: Path) -> None:
    git(repo, "branch", "task-1")
    r = pygit2.Repository(str(repo))
    branch = "task-1"
    for name, look in (("found", lambda: r.references.get(f"refs/heads/{branch}")),
                       ("missing", lambda: r.references.get(f"refs/heads/{branch}-gone")),
                       ("contains", lambda: f"refs/heads/{branch}" in r.references),
                       ("getitem", lambda: r.references[f"refs/heads/{branch}"]),
                       ("lookup", lambda: r.lookup_reference(f"refs/heads/{branch}"))):
        look()
        before = _blocks()
        for _ in range(LOOKUPS):
            look()
        # pygit2's own lookup keeps one string per call: 20,000 here.
        assert _blocks() - before < 100, name
    built = f"refs/heads/{branch}"
    held = sys.getrefcount(built)
    r.lookup_reference(built)
    with pytest.raises(KeyError):
        r.lookup_reference(built + "-gone")
    assert sys.getrefcount(built) == held


def test_a_lookup_answers_as_pygit2s_own(repo: Path) -> None:
    git(repo, "branch", "task-1")
    r = pygit2.Repository(str(repo))
    assert pygit2.repository.BaseRepository.lookup_reference is reflookup.lookup_reference
    tip = git(repo, "rev-parse", "task-1")
    assert str(r.references["refs/heads/task-1"].target) == tip
    assert r.lookup_reference("refs/heads/task-1").name == "refs/heads/task-1"
    assert r.references.get("refs/heads/none") is None
    assert "refs/heads/task-1" in r.references and "refs/heads/none" not in r.references
    for bad in ("refs/heads/..bad", "x", "HEAD~1"):
        with pytest.raises(pygit2.InvalidSpecError):
            r.lookup_reference(bad)
    with pytest.raises(TypeError):
        r.lookup_reference(None)  # type: ignore[arg-type]
    r.references.delete("refs/heads/task-1")
    assert git(repo, "branch", "--list", "task-1") == ""
