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


MAINTENANCE = (("gc", "--aggressive", "--prune=now", "--quiet"), ("repack", "-ad", "-q"),
               ("prune",), ("reflog", "expire", "--expire=now", "--all"), ("worktree", "prune"))


def as_coder(repo: Path, coder: gitview.CoderRepo, *args: str) -> str:
    """The coder's git as the sandbox sets it up (its own common dir, its private admin dir),
    without bubblewrap: the same directories, named by the environment."""
    admin = coder.shadow.parent / "wt"
    return git(repo / ".worktrees" / "t1", *args, env={
        "GIT_DIR": str(admin), "GIT_WORK_TREE": str(repo / ".worktrees" / "t1")})


def maintain(repo: Path) -> None:
    for cmd in MAINTENANCE:  # the user's, each must succeed
        git(repo, *cmd)


def test_commits_come_in_where_no_prune_reaches_them_before_the_branch_moves(
        repo: Path, task: tuple[pygit2.Repository, Path, gitview.CoderRepo]) -> None:
    """Issue 38: the fetch and the branch's move are two steps; a prune between them deleted the
    fetched commits when they landed in objects/. They land in the own store now."""
    r, shadow, coder = task
    wt = repo / ".worktrees" / "t1"
    (wt / "new.txt").write_text("the coder's work\n")
    as_coder(repo, coder, "add", "new.txt")
    as_coder(repo, coder, "commit", "-q", "-m", "coder work")
    tip = shadow_git(shadow, "rev-parse", "refs/heads/liza/t1")
    gitview._fetch_in(r, coder.common, coder.shadow, [tip])  # the first step alone
    maintain(repo)  # ... the user's maintenance in the gap
    assert git(repo, "cat-file", "-t", tip) == "commit"
    assert git(repo, "cat-file", "-t", tip, check=False,
               env={"GIT_ALTERNATE_OBJECT_DIRECTORIES": ""}) == "commit"
    assert not list((repo / ".git" / "objects").glob(f"{tip[:2]}/{tip[2:]}"))
    assert gitview.import_branch(r, coder) == tip
    maintain(repo)
    assert git(repo, "rev-parse", "liza/t1^{commit}") == tip
    assert git(repo, "show", "liza/t1:new.txt") == "the coder's work"
    git(repo, "fsck", "--no-dangling")


def test_the_coders_index_never_names_objects_the_repository_cannot_see(
        repo: Path, task: tuple[pygit2.Repository, Path, gitview.CoderRepo]) -> None:
    """Issue 38: git's gc counts every worktree's index (and its cache-tree) as reachable; a
    coder's index naming objects of its own store made the user's gc fail ("bad tree object").
    The coder's index is private; the real one follows each import."""
    r, shadow, coder = task
    wt = repo / ".worktrees" / "t1"
    (wt / "done.txt").write_text("committed\n")
    (wt / "staged.txt").write_text("staged, never committed\n")
    as_coder(repo, coder, "add", "done.txt")
    as_coder(repo, coder, "commit", "-q", "-m", "part one")
    as_coder(repo, coder, "add", "staged.txt")
    as_coder(repo, coder, "write-tree")  # a cache-tree naming a tree of its own store only
    maintain(repo)  # the coder at work: nothing of the user's fails
    tip = gitview.import_branch(r, coder)
    assert tip is not None
    maintain(repo)
    # Outside, the worktree shows what the coder left uncommitted, nothing staged backwards.
    assert git(wt, "status", "--porcelain") == "?? staged.txt"
    assert as_coder(repo, coder, "status", "--porcelain") == "A  staged.txt"
    git(repo, "fsck", "--no-dangling")


def test_what_the_coders_own_dir_holds_unimported_goes_to_the_attic_before_a_rebuild(
        repo: Path, task: tuple[pygit2.Repository, Path, gitview.CoderRepo]) -> None:
    """Issue 38: the coder's own git dir is rebuilt at each launch; its commits that never came
    in (an agent killed before its submit) and its stash are kept in the attic first."""
    r, shadow, coder = task
    wt = repo / ".worktrees" / "t1"
    (wt / "a.txt").write_text("committed, never brought in\n")
    as_coder(repo, coder, "add", "a.txt")
    as_coder(repo, coder, "commit", "-q", "-m", "lost before")
    tip = shadow_git(shadow, "rev-parse", "refs/heads/liza/t1")
    (wt / "a.txt").write_text("stashed\n")
    as_coder(repo, coder, "stash", "-q")
    stash = shadow_git(shadow, "rev-parse", "refs/stash")
    admin = repo / ".git" / "worktrees" / "t1"
    gitview.build(pygit2.Repository(str(repo)), repo / ".git", "coder-1", "t1", admin)
    maintain(repo)
    kept = git(repo, "for-each-ref", "--format=%(refname)", "refs/liza-attic/").split()
    assert sorted(kept) == sorted([f"refs/liza-attic/t1/{tip}", f"refs/liza-attic/t1/{stash}"])
    assert git(repo, "show", f"{tip}:a.txt") == "committed, never brought in"
    assert git(repo, "show", f"{stash}:a.txt") == "stashed"
    # Nothing twice, nothing for what the repository has.
    assert gitview.keep_unimported(r, repo / ".git", shadow) == []


def test_a_snapshot_holds_the_coders_private_commit_without_moving_its_branch(
        repo: Path, task: tuple[pygit2.Repository, Path, gitview.CoderRepo]) -> None:
    """Issue 48: a work-in-progress snapshot of a sandboxed coder is made over its latest commit,
    still in its own directory (fetched into the own store): a dead machine's snapshot holds the
    commit; the real branch stays where the supervisor's import left it."""
    from gitliza.services import wip
    r, shadow, coder = task
    before = git(repo, "rev-parse", "liza/t1")
    assert gitview.private_tip(r, coder) is None  # nothing of its own yet
    tree = shadow_git(shadow, "rev-parse", "HEAD^{tree}")
    new = shadow_git(shadow, "commit-tree", tree, "-p", before, "-m", "coder's private commit")
    shadow_git(shadow, "update-ref", "refs/heads/liza/t1", new)
    wt = repo / ".worktrees" / "t1"
    (wt / "draft.txt").write_text("uncommitted\n")
    tip = gitview.private_tip(r, coder)
    assert tip == new
    snap = wip.snapshot(pygit2.Repository(str(repo)), "t1", "coder-1", wt, tip)
    assert snap is not None
    assert git(repo, "rev-parse", f"{snap}^") == new
    assert git(repo, "show", f"{snap}:draft.txt") == "uncommitted"
    assert git(repo, "rev-parse", "liza/t1") == before  # the import's to move, not ours
