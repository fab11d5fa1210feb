"""A coder's own git dir (gitview.py), on real repositories: what the coder writes there stays
there until the supervisor brings its task branch in, checked; nothing else is ever taken."""
from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from gitliza.errors import GitFailure
from gitliza.sandbox import gitview
from tests.conftest import git


@pytest.fixture
def task(repo: Path) -> tuple[pygit2.Repository, Path, gitview.CoderRepo]:
    git(repo, "worktree", "add", "-q", "-b", "liza/t1", str(repo / ".worktrees" / "t1"))
    r = pygit2.Repository(str(repo))
    admin = repo / ".git" / "worktrees" / "t1"
    g, coder = gitview.build(r, repo / ".git", "coder-1", "t1", admin)
    assert g.shadow == repo / ".git" / "liza" / "sandboxes" / "coder-1" / "git"
    return r, g.shadow, coder


def shadow_git(shadow: Path, *args: str) -> str:
    return git(shadow, "--git-dir", str(shadow), *args)


def test_the_coders_commit_lands_on_its_real_branch_only_when_brought_in(
        repo: Path, task: tuple[pygit2.Repository, Path, gitview.CoderRepo]) -> None:
    r, shadow, coder = task
    before = git(repo, "rev-parse", "liza/t1")
    # The coder's view: every shared object readable (alternates), the branch at the real tip.
    assert shadow_git(shadow, "rev-parse", "refs/heads/liza/t1") == before
    assert shadow_git(shadow, "rev-parse", "main") == git(repo, "rev-parse", "main")
    tree = shadow_git(shadow, "rev-parse", "HEAD^{tree}")
    new = shadow_git(shadow, "commit-tree", tree, "-p", before, "-m", "coder work")
    shadow_git(shadow, "update-ref", "refs/heads/liza/t1", new)
    # Written in its own objects, not the repository's, and the real branch unmoved.
    assert git(repo, "cat-file", "-t", new, check=False) != "commit"
    assert git(repo, "rev-parse", "liza/t1") == before
    assert gitview.import_branch(r, coder) == new
    assert git(repo, "rev-parse", "liza/t1") == new
    assert git(repo, "cat-file", "-t", new) == "commit"
    assert gitview.import_branch(r, coder) is None  # nothing new


def test_a_garbled_or_symbolic_ref_is_ignored_and_a_non_commit_refused(
        repo: Path, task: tuple[pygit2.Repository, Path, gitview.CoderRepo]) -> None:
    r, shadow, coder = task
    before = git(repo, "rev-parse", "liza/t1")
    ref = shadow / "refs" / "heads" / "liza" / "t1"
    for text in ("ref: refs/heads/main\n", "not an id\n", ""):
        ref.write_text(text)
        assert gitview.import_branch(r, coder) is None
    ref.write_text(git(repo, "rev-parse", "main^{tree}") + "\n")
    with pytest.raises(GitFailure, match="not a commit"):
        gitview.import_branch(r, coder)
    assert git(repo, "rev-parse", "liza/t1") == before


def test_the_real_branch_moved_meanwhile_is_a_conflict_not_an_overwrite(
        repo: Path, task: tuple[pygit2.Repository, Path, gitview.CoderRepo]) -> None:
    r, shadow, coder = task
    tree = shadow_git(shadow, "rev-parse", "HEAD^{tree}")
    mine = shadow_git(shadow, "commit-tree", tree, "-p", "HEAD", "-m", "mine")
    shadow_git(shadow, "update-ref", "refs/heads/liza/t1", mine)
    theirs = git(repo, "commit-tree", tree, "-p", "liza/t1", "-m", "theirs")
    git(repo, "update-ref", "refs/heads/liza/t1", theirs)
    with pytest.raises(GitFailure, match="cannot move"):
        gitview.import_branch(r, coder)
    assert git(repo, "rev-parse", "liza/t1") == theirs
