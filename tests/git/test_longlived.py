"""What a long-lived process sets up once (gitliza/git/longlived.py): libgit2's pack windows
bounded, so that the pages of the packs it reads do not stay resident for the life of the pack;
libgit2's object cache bounded, so that every commit and tree it reads does not stay in memory."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from gitliza.git import longlived
from tests.conftest import git

pytestmark = [pytest.mark.slow,  # a 48 MB pack written and read twice
              pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc (Linux)")]

BLOBS = 48  # of 1 MiB each, incompressible: a pack larger than MAPPED

READER = """
import gc, os, sys
import pygit2
if sys.argv[2] == "long-lived":
    from gitliza.git.refwatch import RefWatcher
    RefWatcher(sys.argv[1])  # what every long-lived process starts with
repo = pygit2.Repository(sys.argv[1])
for oid in sys.argv[3:]:
    assert len(repo[oid].data) == 1 << 20
    gc.collect()
rss = 0
on_pack = False
with open("/proc/self/smaps") as f:
    for line in f:
        first = line.split()[0]
        if "-" in first and ":" not in first:
            on_pack = line.rstrip().endswith(".pack")
        elif first == "Rss:" and on_pack:
            rss += int(line.split()[1])
print(rss, pygit2.settings.mwindow_mapped_limit)
"""


@pytest.fixture(scope="module")
def big_pack(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    repo = tmp_path_factory.mktemp("bigpack") / "repo"
    git(repo.parent, "init", "-q", str(repo))
    r = pygit2.Repository(str(repo))
    oids = [str(r.create_blob(os.urandom(1 << 20))) for _ in range(BLOBS)]
    tree = r.TreeBuilder()
    for i, oid in enumerate(oids):
        tree.insert(f"b{i}", pygit2.Oid(hex=oid), pygit2.enums.FileMode.BLOB)
    sig = pygit2.Signature("t", "t@t.invalid")
    r.create_commit("refs/heads/main", sig, sig, "big", tree.write(), [])
    git(repo, "repack", "-adq", "--window=0")
    return repo, oids


def _resident_pack_kb(repo: Path, mode: str, oids: list[str]) -> tuple[int, int]:
    out = subprocess.run([sys.executable, "-c", READER, str(repo), mode, *oids], check=True,
                         capture_output=True, text=True, timeout=300).stdout.split()
    return int(out[0]), int(out[1])


def test_a_long_lived_reader_keeps_at_most_the_bound_of_a_pack_resident(
        big_pack: tuple[Path, list[str]]) -> None:
    repo, oids = big_pack
    kb, limit = _resident_pack_kb(repo, "long-lived", oids)
    assert limit == longlived.MAPPED
    assert kb * 1024 <= longlived.MAPPED + longlived.WINDOW, kb


def test_without_it_every_page_read_stays_resident(big_pack: tuple[Path, list[str]]) -> None:
    """The control: libgit2's defaults (what a one-shot command keeps until it exits)."""
    repo, oids = big_pack
    kb, _limit = _resident_pack_kb(repo, "one-shot", oids)
    assert kb * 1024 >= BLOBS * (1 << 20) * 0.9, kb


CACHE_READER = """
import sys
import pygit2
if sys.argv[2] == "long-lived":
    from gitliza.git.refwatch import RefWatcher
    RefWatcher(sys.argv[1])
repo = pygit2.Repository(sys.argv[1])
sig = pygit2.Signature("t", "t@t.invalid")
parent = []
for i in range(int(sys.argv[3])):  # a board's life: a commit per op, each with its trees read
    blob = repo.create_blob(b"task %d\\n" % i * 40)
    tree = repo.TreeBuilder()
    for j in range(30):
        tree.insert("t%d" % j, blob, pygit2.enums.FileMode.BLOB)
    c = repo.create_commit(None, sig, sig, "op %d" % i, tree.write(), parent)
    parent = [c]
    [e.id for e in repo[c].tree]
print(*pygit2.settings.cached_memory)
"""


@pytest.mark.parametrize("mode", ["long-lived", "one-shot"])
def test_the_object_cache_of_a_long_lived_reader_is_bounded(tmp_path: Path, mode: str) -> None:
    """Thousands of board commits read: a long-lived process keeps at most CACHE of them; the
    control (libgit2's default, fine for a command that exits) keeps them all."""
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(repo))
    out = subprocess.run([sys.executable, "-c", CACHE_READER, str(repo), mode, "10000"],
                         check=True, capture_output=True, text=True, timeout=300).stdout.split()
    cached, allowed = int(out[0]), int(out[1])
    if mode == "long-lived":
        assert allowed == longlived.CACHE and cached <= longlived.CACHE, (cached, allowed)
    else:
        assert cached > 2 * longlived.CACHE, cached  # ~11 MB, and growing: what the bound saves
