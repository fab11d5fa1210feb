"""git/remotes/shallow.py: the state ref fetched shallow with the real git, and what libgit2 makes of it
(a boundary commit reads as parentless to a handle opened after the fetch: Store.reopen)."""
from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from gitliza.core.ops import Init, Note
from gitliza.git.remotes import shallow
from gitliza.git.store import STATE_REF, Store
from gitliza.services.api import Liza
from tests.conftest import git, remote_of


@pytest.fixture
def remote(tmp_path: Path, bare: Path) -> list[str]:
    """`bare` holds a board of 1 + 9 commits; the chain's oids, newest first."""
    src = tmp_path / "src"
    git(tmp_path, "init", "-q", "-b", "main", str(src))
    h = Liza.open(src, "human")
    h.do(Init, goal="g")
    for i in range(9):
        h.do(Note, message=f"n{i}")
    git(src, "push", "-q", str(bare), f"{STATE_REF}:{STATE_REF}")
    return [str(c.id) for c in Store.discover(src).history()]


def test_depth_longer_depth_unshallow(tmp_path: Path, bare: Path, remote: list[str]) -> None:
    dest = tmp_path / "dest"
    git(tmp_path, "init", "-q", "-b", "main", str(dest))
    git(dest, "remote", "add", "origin", str(bare))
    store = Store.discover(dest)
    assert shallow.fetch(dest, remote_of(dest, "origin"), 3, 60) == "refs/remotes/origin/liza/state"
    tracking = "refs/remotes/origin/liza/state"
    assert git(dest, "rev-parse", tracking) == remote[0]
    assert shallow.points(store.repo) == {remote[2]}
    store.reopen()  # libgit2 1.9 reads the shallow file when a handle opens
    tip = pygit2.Oid(hex=remote[0])
    walk = [str(c.id) for c in store.history(tracking)]
    assert walk == remote[:3]
    assert shallow.is_boundary(store.repo, remote[2]) and not shallow.is_boundary(store.repo, tip)
    assert shallow.boundary_below(store.repo, tip) == remote[2]
    assert remote[2][:12] in (shallow.note(store.repo, tip) or "")
    shallow.fetch(dest, remote_of(dest, "origin"), 7, 60)  # a longer depth reaches further back
    store.reopen()
    assert shallow.points(store.repo) == {remote[6]}
    assert len(list(store.history(tracking))) == 7
    shallow.unshallow(dest, remote_of(dest, "origin"), 60)
    store.reopen()
    assert shallow.points(store.repo) == frozenset()
    assert shallow.note(store.repo, tip) is None
    assert [str(c.id) for c in store.history(tracking)] == remote


def test_a_remote_without_a_board_is_nothing_to_fetch(tmp_path: Path, bare: Path) -> None:
    dest = tmp_path / "dest"
    git(tmp_path, "init", "-q", "-b", "main", str(dest))
    git(dest, "remote", "add", "origin", str(bare))
    assert shallow.fetch(dest, remote_of(dest, "origin"), 3, 60) is None
    assert shallow.points(Store.discover(dest).repo) == frozenset()
