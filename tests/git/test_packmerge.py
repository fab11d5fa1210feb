"""The streamed merge of packs: every object once (a duplicate across packs too), copied as it was,
in a pack and an index git checks; packs it must not copy (git's, with deltas) are left alone."""
from __future__ import annotations

import os
from pathlib import Path

import pygit2

from gitliza.git.objects import packfile
from gitliza.git.objects import packmerge
from tests.conftest import git


def _blobs(objdir: str, texts: list[str]) -> str:
    objs = [(packfile.object_id(b"blob", t.encode()), b"blob", t.encode()) for t in texts]
    name = packfile.write(objdir, objs)
    assert name is not None
    return os.path.join(objdir, "pack", name)


def test_merged_pack_holds_every_object_once_and_git_checks_it(repo: Path) -> None:
    objdir = str(repo / ".git" / "objects")
    a = _blobs(objdir, [f"a {i}\n" for i in range(50)] + ["shared\n"])
    b = _blobs(objdir, [f"b {i}\n" * (i + 1) for i in range(70)] + ["shared\n"])
    name, copied = packmerge.merge(objdir, [a, b])
    assert name is not None and sorted(copied) == sorted([a, b])
    idx = repo / ".git" / "objects" / "pack" / f"{name}.idx"
    out = git(repo, "verify-pack", "-v", str(idx))
    assert sum(1 for line in out.splitlines() if " blob " in line) == 121  # "shared" once
    for base in (a, b):  # the sources gone, every object is read from the merged pack
        os.unlink(base + ".idx")
        os.unlink(base + ".pack")
    handle = pygit2.Repository(str(repo))
    for text in ["shared\n", "a 49\n", "b 69\n" * 70]:
        oid = pygit2.Oid(raw=packfile.object_id(b"blob", text.encode()))
        assert handle[oid].data == text.encode()  # type: ignore[attr-defined]
    git(repo, "fsck", "--strict", "--no-dangling")


def test_packs_git_wrote_with_deltas_are_not_merged(repo: Path) -> None:
    for i in range(3):
        (repo / "big.txt").write_text("line of text that repeats\n" * 200 + f"change {i}\n")
        git(repo, "add", "big.txt")
        git(repo, "commit", "-q", "-m", f"c{i}")
    git(repo, "repack", "-a", "-d", "-q", "--depth=10")
    objdir = str(repo / ".git" / "objects")
    theirs = [str(p)[:-4] for p in (repo / ".git" / "objects" / "pack").glob("*.idx")]
    ours = _blobs(objdir, ["x\n"])
    before = sorted(os.listdir(repo / ".git" / "objects" / "pack"))
    assert packmerge.merge(objdir, theirs + [ours]) == (None, [])
    assert sorted(os.listdir(repo / ".git" / "objects" / "pack")) == before  # nothing written


def test_packs_gone_or_cut_short_are_left_out(repo: Path) -> None:
    objdir = str(repo / ".git" / "objects")
    a = _blobs(objdir, ["one\n"])
    b = _blobs(objdir, ["two\n"])
    cut = _blobs(objdir, ["three\n", "four\n"])
    with open(cut + ".pack", "r+b") as f:
        f.truncate(20)
    name, copied = packmerge.merge(objdir, [a, b, cut, a + "-gone"])
    assert name is not None and sorted(copied) == sorted([a, b])
    assert packmerge.merge(objdir, [a, cut]) == (None, [])
