"""gitliza's own object store (gitliza/git/objects/ownstore.py): the objects gitliza writes survive git's
most destructive maintenance even before any ref names them, a local clone does not depend on its
origin's store, and an agent's git writes there too."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pygit2
import pytest

from gitliza.git.remotes import direct
from gitliza.git.objects import ownstore
from gitliza.git.objects import packs
from gitliza.git.objects.trees import Batch
from gitliza.services.api import Liza
from tests.access.mcp_client import setup_board
from tests.conftest import git
from tests.faults.harness import liza as liza_cli

PRUNING = (("gc", "--aggressive", "--prune=now", "-q"), ("repack", "-ad", "-q"), ("prune",),
           ("reflog", "expire", "--expire=now", "--all"), ("maintenance", "run"))


def _unreferenced_commit(repo: Path, text: str = "written, not yet referenced") -> pygit2.Oid:
    """A commit written the way a transition writes one, before its ref moves: referenced by
    nothing at all."""
    r = pygit2.Repository(str(repo))
    batch = Batch(r)
    blob = batch.store(b"blob", f"{text}\n".encode())
    tree = batch.store(b"tree", b"100644 f\0" + blob)
    body = (f"tree {pygit2.Oid(raw=tree)}\nauthor a <a@b> 1 +0000\ncommitter a <a@b> 1 +0000\n"
            "\nmid-transition\n").encode()
    raw = batch.store(b"commit", body)
    batch.flush()
    return pygit2.Oid(raw=raw)


def test_objects_written_but_not_yet_referenced_survive_gc_repack_prune(repo: Path) -> None:
    oid = _unreferenced_commit(repo)
    assert git(repo, "cat-file", "-t", str(oid)) == "commit"
    assert (repo / ".git" / "objects" / "info" / "alternates").read_text() == "../liza-objects\n"
    assert any((repo / ".git" / "liza-objects" / "pack").glob("pack-*.idx"))
    for cmd in PRUNING:
        git(repo, *cmd)
    # Still there for git, and for a fresh libgit2 reader: nothing referenced it.
    assert git(repo, "cat-file", "-t", str(oid)) == "commit"
    assert oid in pygit2.Repository(str(repo))
    git(repo, "fsck", "--no-dangling")


def test_the_same_object_in_objects_is_lost_to_the_same_maintenance(repo: Path) -> None:
    """The control: what the store prevents does happen to an object in objects/."""
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input="loose\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    git(repo, "prune")
    assert subprocess.run(["git", "cat-file", "-e", blob], cwd=repo).returncode != 0


def test_the_board_lives_in_the_store_and_verifies_after_maintenance(repo: Path) -> None:
    setup_board(repo, ("t1", "t2"))
    for cmd in PRUNING:
        git(repo, *cmd)
    liza = Liza.open(repo, "human")
    assert liza.board().task("t2") is not None
    tip = str(liza.store.tip())
    assert git(repo, "cat-file", "-t", tip) == "commit"
    liza_cli(repo, "verify", check=True)


def test_a_local_clone_stops_depending_on_its_origins_store(repo: Path, tmp_path: Path) -> None:
    setup_board(repo)
    tip = str(Liza.open(repo, "human").store.tip())
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    git(clone, "fetch", "-q", "origin", "refs/liza/state:refs/liza/state")
    alternates = clone / ".git" / "objects" / "info" / "alternates"
    copied = alternates.read_text()
    assert str(repo / ".git" / "liza-objects") in copied  # git's local clone wrote it absolute
    assert ownstore.target(pygit2.Repository(str(clone))) == str(clone / ".git" / "liza-objects")
    assert alternates.read_text() == "../liza-objects\n"
    shutil.rmtree(repo)  # the origin is gone: the clone keeps everything it had
    assert git(clone, "cat-file", "-t", tip) == "commit"
    git(clone, "fsck", "--no-dangling")


def test_an_agents_git_writes_into_the_store(repo: Path) -> None:
    env = ownstore.agent_env(pygit2.Repository(str(repo)))
    assert env["GIT_OBJECT_DIRECTORY"] == str(repo / ".git" / "liza-objects")
    (repo / "work.txt").write_text("an agent's work\n")
    git(repo, "add", "work.txt", env=env)
    git(repo, "commit", "-q", "-m", "agent work", env=env)
    head = git(repo, "rev-parse", "HEAD")
    loose = repo / ".git" / "liza-objects" / head[:2] / head[2:]
    assert loose.is_file() and not (repo / ".git" / "objects" / head[:2] / head[2:]).exists()
    git(repo, "prune")
    git(repo, "fsck", "--no-dangling")
    # gitliza run by the agent (same environment) writes its packs into the store too.
    assert ownstore._redirected_here(pygit2.Repository(str(repo))) is None  # not in this env
    os.environ.update(env)
    try:
        assert ownstore.target(pygit2.Repository(str(repo))) == env["GIT_OBJECT_DIRECTORY"]
    finally:
        for k in env:
            os.environ.pop(k, None)


def test_a_bare_remote_with_only_its_own_store_still_takes_direct_pushes(bare: Path,
                                                                         tmp_path: Path) -> None:
    remote = pygit2.Repository(str(bare))
    ownstore.target(remote)
    assert not direct._foreign_alternates(str(bare / "objects"))
    (bare / "objects" / "info" / "alternates").write_text("../liza-objects\n/elsewhere/objects\n")
    assert direct._foreign_alternates(str(bare / "objects"))


def _maintenance_before_every_index_rename(repo: Path, monkeypatch: pytest.MonkeyPatch,
                                           cmd: tuple[str, ...]) -> list[str]:
    """Run the real `git <cmd>` in the moment a pack's index has been written under its temporary
    name and is about to be renamed into place: the window in which a user's `git gc` beside a
    busy team deleted it (the index of a pack not there yet is garbage to gc). The renamed
    indexes, in order."""
    real = os.replace
    renamed: list[str] = []

    def replace(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        if str(dst).endswith(".idx"):
            git(repo, *cmd)
            renamed.append(os.path.basename(str(dst)))
        real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    return renamed


@pytest.mark.parametrize("cmd", PRUNING, ids=lambda c: " ".join(c))
def test_maintenance_between_writing_and_renaming_an_index_loses_no_write(
        repo: Path, monkeypatch: pytest.MonkeyPatch, cmd: tuple[str, ...]) -> None:
    """Issue 29: 1 transition in ~1,500 beside a `git gc` loop failed with "cannot write objects
    to .git/liza-objects: No such file or directory": gc had deleted the temporary index
    (`tmp_<pack>.idx`, an .idx without its .pack) between its writing and its rename."""
    store = repo / ".git" / "liza-objects"
    _unreferenced_commit(repo)  # the store exists, and holds a first pack
    renamed = _maintenance_before_every_index_rename(repo, monkeypatch, cmd)
    oid = _unreferenced_commit(repo, "the next one")  # a transition's write (packfile.write)
    assert len(renamed) == 1
    # ... and a merge of the store's packs (packmerge), the other writer of indexes.
    merged = packs.consolidate(str(store), limit=1)
    monkeypatch.undo()
    assert merged is not None and (store / "pack" / f"{merged}.idx").is_file()
    assert renamed[-1] == f"{merged}.idx"
    assert git(repo, "cat-file", "-t", str(oid)) == "commit"
    assert not [n for n in os.listdir(store / "pack") if n.startswith("tmp_")]
    git(repo, "fsck", "--no-dangling")
