"""A long-lived repository handle lets go of the packs that packs.py merged and removed (or that
`git repack -d` removed): libgit2 alone keeps every pack it ever loaded open and mapped, one more
deleted file per transition. Counted in /proc/self: open files, and those whose file is deleted."""
from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from gitliza.core import clock
from gitliza.core.ops import Init, Register
from gitliza.core.ops.work import Heartbeat
from gitliza.git.objects import odbfresh
from gitliza.git.objects.odbfresh import OdbRefresh
from gitliza.git.store import Store
from tests.conftest import git

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc (Linux)")


def open_files(repo: Path) -> tuple[int, int]:
    """(open file descriptors, those on a deleted pack file of `repo`) of this process (pytest's
    capture files are deleted files too, and so may be the packs of an earlier test's handle that
    the garbage collector has not freed yet: not counted)."""
    total = deleted = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # the listing's own descriptor, closed meanwhile
            continue
        total += 1
        # objects/pack/ and gitliza's own store, liza-objects/pack/ (git/objects/ownstore.py)
        deleted += target.startswith(f"{repo}/.git/") and "/pack/" in target and \
            target.endswith(" (deleted)")
    return total, deleted


def deleted_maps(repo: Path) -> int:
    """Memory mappings of deleted pack files of `repo` (libgit2 maps every index it loaded)."""
    with open("/proc/self/maps") as f:
        return sum(1 for line in f if f"{repo}/.git/" in line and "/pack/" in line
                   and line.rstrip().endswith("(deleted)"))


_SECONDS = iter(range(10**6))


def now() -> str:
    """A new second per op: every heartbeat writes new objects (a new pack)."""
    return clock.from_epoch(1_700_000_000 + next(_SECONDS))


def _board(repo: Path) -> Store:
    store = Store(pygit2.Repository(str(repo)))
    store.transact(lambda b, t: Init(actor="human", time=t, goal="g"), now)
    store.transact(lambda b, t: Register(actor="human", time=t, agent="coder-1", role="coder"),
                   now)
    return store


def beat(store: Store) -> None:
    store.transact(lambda b, t: Heartbeat(actor="coder-1", time=t), now)
    assert store.board()[0].agent("coder-1") is not None


def test_a_handle_holds_no_removed_pack_however_many_transitions(repo: Path) -> None:
    store = _board(repo)
    for _ in range(60):  # warm up: the pack directory reaches its steady size
        beat(store)
    before, _ = open_files(repo)
    for _ in range(600):
        beat(store)
    after, deleted = open_files(repo)
    # Without the refresh: one more open file (a deleted pack) per transition, 600 here.
    assert deleted == 0, f"{deleted} deleted pack files still open"
    assert deleted_maps(repo) == 0
    assert after - before <= 10, (before, after)
    assert store._odb is not None and store._odb.frees > 10  # packs were merged and removed


def test_packs_removed_by_git_repack_are_let_go(repo: Path) -> None:
    store = _board(repo)
    for _ in range(5):
        beat(store)
    # gitliza writes into its own store (git/objects/ownstore.py), which git's repack never deletes
    # from; a repack copies the board into objects/pack too (alternates' objects included), and
    # the handle then reads that pack, which the next repack replaces.
    git(repo, "repack", "-a", "-d", "-q")
    beat(store)
    _, held = open_files(repo)
    beat(store)
    git(repo, "repack", "-a", "-d", "-q")  # every pack in objects/pack replaced by one
    assert open_files(repo)[1] > held  # libgit2 still holds the removed pack open
    beat(store)  # the next read lets it go, and reads the board from the new pack
    assert open_files(repo)[1] <= held


def test_nothing_is_freed_inside_a_hooks_quarantine(repo: Path, monkeypatch: pytest.MonkeyPatch
                                                    ) -> None:
    """pre-receive gives the handle an alternate by hand (the quarantine): a free would lose it."""
    monkeypatch.setenv("GIT_QUARANTINE_PATH", str(repo / ".git" / "objects"))
    handle = pygit2.Repository(str(repo))
    watch = OdbRefresh(handle)
    watch.check()
    monkeypatch.delenv("GIT_QUARANTINE_PATH")  # for the git commands below
    git(repo, "repack", "-a", "-d", "-q")
    git(repo, "commit", "-q", "--allow-empty", "-m", "more")
    git(repo, "repack", "-a", "-d", "-q")
    assert watch.check() is False and watch.frees == 0


CHURN = """import sys
from gitliza.core import clock
from gitliza.core.ops.work import Heartbeat
from gitliza.services.api import Liza
t = iter(range(1_800_000_000, 1_900_000_000))
coder = Liza.open(sys.argv[1], "coder-1", now=lambda: clock.from_epoch(next(t)), sync=False)
for _ in range(int(sys.argv[2])):
    coder.do(Heartbeat)
"""


def test_packs_removed_from_an_alternate_are_let_go(repo: Path, tmp_path: Path) -> None:
    """A repository that reads another's gitliza store as an alternate (a `--reference` clone):
    the other repository's writers merge and remove packs there, which this handle's own marks
    directory never hears of (issue 39)."""
    _board(repo)
    subprocess.run([sys.executable, "-c", CHURN, str(repo), "40"], check=True)
    reader = tmp_path / "reader"
    git(tmp_path, "init", "-q", str(reader))
    (reader / ".git" / "objects" / "info" / "alternates").write_text(
        f"{repo / '.git' / 'liza-objects'}\n")
    handle = pygit2.Repository(str(reader))
    watch = OdbRefresh(handle)
    watch.check()

    def read_all() -> None:
        tip = pygit2.Repository(str(repo)).references["refs/liza/state"].target
        for c in handle.walk(tip):  # every commit and tree of the board: every pack opened
            assert handle[c.tree_id] is not None

    read_all()
    gc.collect()  # this process's other handles (the board's set-up): only `handle` reads now
    subprocess.run([sys.executable, "-c", CHURN, str(repo), "200"], check=True)  # merges, removes
    held = open_files(repo)[1]
    assert held > 5  # libgit2 still holds the alternate's removed packs
    assert watch.check() is True
    # Let go; what is left is another handle's (the board's set-up, in this process): one pack.
    assert open_files(repo)[1] <= 2, held
    read_all()  # and reads the board from the packs there now


def test_a_dropped_handle_lets_go_of_its_packs_when_collected(repo: Path) -> None:
    """A pygit2 handle is a reference cycle: dropped, it keeps its packs until the cycle collector
    runs, which a long-lived process does rarely (here: not at all). A supervisor's loop calls
    collect_dropped once per round."""
    store = _board(repo)
    for _ in range(20):
        beat(store)
    def read_and_drop() -> None:
        dropped = pygit2.Repository(str(repo))
        for c in dropped.walk(dropped.references["refs/liza/state"].target):
            assert dropped[c.tree_id] is not None

    gc.collect()
    gc.disable()
    try:
        read_and_drop()
        for _ in range(200):  # the packs it read are merged and removed
            beat(store)
        assert open_files(repo)[1] > 0
        odbfresh.collect_dropped()
        assert open_files(repo)[1] <= 2  # the live store's handle: what it read since its look
    finally:
        gc.enable()
