"""One safety net on every teardown (issue 38): before a path ends or moves a coder's claim, or
removes its worktree, the worktree's state (untracked files included, ignored ones not) and the
branch's commits go to the attic, named in the line that reports it; `git liza attic` lists and
restores them; a dirty worktree is never forced away. Through the real CLI."""
from __future__ import annotations

import json
from pathlib import Path

import pygit2

from gitliza.services.api import Liza
from gitliza.team.briefing import _attic_line
from tests.conftest import git
from tests.services.test_lifecycle import board, claimed, fails, ok, run, task  # noqa: F401

ATTIC = "refs/liza-attic/"


def attic_refs(repo: Path, tid: str) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname)", f"{ATTIC}{tid}/").split()


def dirty(wt: Path) -> None:
    (wt / "README.md").write_text("an uncommitted edit\n")
    (wt / "new.txt").write_text("an untracked file\n")
    (wt / ".gitignore").write_text("build/\n")
    (wt / "build").mkdir()
    (wt / "build" / "out.bin").write_text("ignored: not work\n")


def snapshot(repo: Path, ref: str) -> pygit2.Tree:
    r = pygit2.Repository(str(repo))
    return r.revparse_single(ref).peel(pygit2.Tree)


def test_a_coders_release_keeps_a_dirty_worktree_and_its_state_in_the_attic(board: Path) -> None:
    wt = Path(claimed(board, "t1", "c1")["worktree"])
    dirty(wt)
    r = run(board, "release", "t1", agent="c1")
    assert r.returncode == 0, r.stderr
    refs = attic_refs(board, "t1")
    assert len(refs) == 1 and refs[0] in r.stdout + r.stderr  # the release's line names it
    tree = snapshot(board, refs[0])
    assert tree["README.md"].data == b"an uncommitted edit\n"  # type: ignore[attr-defined]
    assert tree["new.txt"].data == b"an untracked file\n"  # type: ignore[attr-defined]
    assert "build" not in tree  # ignored files are not work
    # Never forced away: the worktree and its files are still there.
    assert (wt / "new.txt").read_text() == "an untracked file\n"


def test_the_humans_release_names_the_attic_entry_and_the_next_coder_is_told(
        board: Path) -> None:
    wt = Path(claimed(board, "t1", "c1")["worktree"])
    dirty(wt)
    r = run(board, "release", "t1")
    assert r.returncode == 0, r.stderr
    refs = attic_refs(board, "t1")
    assert len(refs) == 1 and refs[0] in r.stdout + r.stderr
    assert (wt / "README.md").read_text() == "an uncommitted edit\n"  # left where it is
    # The next coder: its claim keeps what the worktree holds (same content, one more entry
    # at most), and its prompt and `show` say the attic has work for the task.
    c2 = claimed(board, "t1", "c2")
    assert not (Path(c2["worktree"]) / "new.txt").exists()
    line = _attic_line(Liza.open(board, "c2"), "t1")
    assert "attic" in line and "git liza attic t1" in line
    shown = run(board, "show", "t1")
    assert "attic" in shown.stdout and refs[0].rsplit("/", 1)[1][:12] in shown.stdout


def test_abandon_and_reassign_keep_the_worktree_state_first(board: Path) -> None:
    wt = Path(claimed(board, "t1", "c1")["worktree"])
    dirty(wt)
    r = run(board, "reassign", "t1", "--to", "c2")
    assert r.returncode == 0, r.stderr
    refs = attic_refs(board, "t1")
    assert len(refs) == 1 and refs[0] in r.stdout + r.stderr
    wt2 = Path(claimed(board, "t2", "c1")["worktree"])
    (wt2 / "b.txt").write_text("work on t2\n")
    r = run(board, "abandon", "t2", "--reason", "not needed")
    assert r.returncode == 0, r.stderr
    refs2 = attic_refs(board, "t2")
    assert len(refs2) == 1 and refs2[0] in r.stdout + r.stderr
    assert (wt2 / "b.txt").is_file()  # dirty: kept, not forced away
    assert snapshot(board, refs2[0])["b.txt"].data == b"work on t2\n"  # type: ignore[attr-defined]


def test_git_liza_attic_lists_and_restores_into_a_new_worktree(board: Path) -> None:
    wt = Path(claimed(board, "t1", "c1")["worktree"])
    dirty(wt)
    assert run(board, "release", "t1").returncode == 0
    ref = attic_refs(board, "t1")[0]
    oid = ref.rsplit("/", 1)[1]
    listed = json.loads(run(board, "attic", "t1", "--json").stdout)
    assert [e["ref"] for e in listed] == [ref] and listed[0]["task"] == "t1"
    assert oid[:12] in run(board, "attic").stdout
    into = board.parent / "restored"
    r = run(board, "attic", "t1", "--restore", oid[:10], "--into", str(into))
    assert r.returncode == 0, r.stderr
    assert (into / "new.txt").read_text() == "an untracked file\n"
    assert (into / "README.md").read_text() == "an uncommitted edit\n"
    # A second restore into the same place, or of an entry that is not there: refused, exit 1,
    # nothing touched.
    before = (into / "new.txt").read_text()
    assert "exists" in fails(board, 1, "attic", "t1", "--restore", oid[:10], "--into", str(into))
    assert "no attic entry" in fails(board, 1, "attic", "t1", "--restore", "0" * 12)
    assert (into / "new.txt").read_text() == before
    assert task(board, "t1").status == "UNCLAIMED"
    ok(board, "validate")
    v = run(board, "verify")  # the claims (forgive_faults) replay byte for byte
    assert v.returncode == 0, v.stderr
