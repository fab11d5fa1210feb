"""Deleting a ref beside the user's `git gc` (git/refdelete.py, issue 38): a deletion never puts
another ref back, whenever git's pack-refs runs.

strace delays the deleting process's creation of `packed-refs.lock` (the moment libgit2 has read
`packed-refs` and not yet locked it) while a real `git pack-refs --all --prune` packs the board's
newer value and removes its loose file: exactly what a user's gc did in the maintenance
benchmark's run that lost five commits."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pygit2
import pytest

from gitliza.git import refdelete
from gitliza.git.worktrees import tasktrees as worktrees
from tests.conftest import git

needs_strace = pytest.mark.skipif(shutil.which("strace") is None,
                                  reason="strace is needed to hold a deletion at its lock")
ROOT = str(Path(__file__).resolve().parents[2])


def _board_packed_then_moved(repo: Path) -> tuple[str, str]:
    """refs/liza/state packed at A with a packed branch `x`, then moved to B (a loose ref): the
    state in which a branch clean-up meets a user's gc."""
    git(repo, "commit", "-q", "--allow-empty", "-m", "two")
    a, b = git(repo, "rev-parse", "HEAD~1"), git(repo, "rev-parse", "HEAD")
    git(repo, "update-ref", "refs/liza/state", a)
    git(repo, "branch", "x")
    git(repo, "pack-refs", "--all", "--prune")
    git(repo, "update-ref", "refs/liza/state", b, a)
    return a, b


def _delete_held_at_the_lock(repo: Path, code: str) -> None:
    """Run `code` (deleting branch x) with its creation of packed-refs.lock held by strace, run
    git's pack-refs meanwhile, then let the deletion finish."""
    lock = str(repo / ".git" / "packed-refs.lock")
    script = textwrap.dedent(f"""
        import sys, pygit2
        sys.path.insert(0, {ROOT!r})
        repo = pygit2.Repository({str(repo)!r})
    """) + code
    proc = subprocess.Popen(
        # git names it through its git dir as "<dir>/./packed-refs.lock"; libgit2 plainly
        ["strace", "-f", "-qq", "-e", "trace=openat", "-P", lock, "-P",
         str(repo / ".git") + "/./packed-refs.lock",
         "-e", "inject=openat:delay_enter=2000000", sys.executable, "-c", script],
        stderr=subprocess.PIPE)
    assert proc.stderr is not None
    seen = b""
    while b"packed-refs.lock" not in seen:  # bounded by the process: it reaches the lock or ends
        chunk = os.read(proc.stderr.fileno(), 4096)
        assert chunk, (seen, proc.wait())
        seen += chunk
    git(repo, "pack-refs", "--all", "--prune")  # the user's gc, inside the held moment
    proc.stderr.read()
    assert proc.wait() == 0


@needs_strace
def test_a_branch_deleted_beside_git_pack_refs_takes_no_other_ref_with_it(repo: Path) -> None:
    _a, b = _board_packed_then_moved(repo)
    _delete_held_at_the_lock(repo, textwrap.dedent("""
        from gitliza.git.worktrees import tasktrees as worktrees
        worktrees._delete_branch(repo, "x")
    """))
    assert git(repo, "rev-parse", "refs/liza/state") == b  # the board keeps its newer value
    assert git(repo, "branch", "--list", "x") == ""


@needs_strace
def test_the_same_deletion_through_libgit2_puts_the_board_back(repo: Path) -> None:
    """The control: libgit2 1.9's own deletion undoes the concurrent pack-refs (should a libgit2
    release fix it, this test says refdelete.py may go)."""
    a, _b = _board_packed_then_moved(repo)
    _delete_held_at_the_lock(repo, 'repo.branches.local.get("x").delete()\n')
    assert git(repo, "rev-parse", "refs/liza/state") == a  # B, a recorded transition, is gone


def test_a_deletion_with_an_expected_value_leaves_a_moved_ref(repo: Path) -> None:
    r = pygit2.Repository(str(repo))
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "commit", "-q", "--allow-empty", "-m", "two")
    git(repo, "update-ref", "refs/liza-attic/t1/x", "HEAD")
    assert refdelete.delete(r, "refs/liza-attic/t1/x", head) is False  # moved: kept
    assert git(repo, "rev-parse", "refs/liza-attic/t1/x") == git(repo, "rev-parse", "HEAD")
    assert refdelete.delete(r, "refs/liza-attic/t1/x", git(repo, "rev-parse", "HEAD"))
    assert refdelete.delete(r, "refs/liza-attic/t1/x", head) is False  # gone: nothing to do
    assert git(repo, "for-each-ref", "refs/liza-attic") == ""


def test_a_checked_out_branch_is_not_deleted(repo: Path, tmp_path: Path) -> None:
    git(repo, "worktree", "add", "-q", "-b", "liza/t1", str(tmp_path / "wt"))
    with pytest.raises(Exception, match="checked out"):
        worktrees._delete_branch(pygit2.Repository(str(repo)), "liza/t1")
    assert git(repo, "branch", "--list", "liza/t1")
