"""A reviewer's clean checkout (git/worktrees/clean.py) beside the user's own git maintenance.

Every `git gc`, `repack -a`, `prune` and `rev-list --all` takes each worktree's HEAD as a root and
dies on one that names no object ("fatal: bad object worktrees/<name>/HEAD"). `git worktree add`
shows exactly that, its null-id placeholder, while it runs: the maintenance-loop fault test failed
on it once. So, with real git on both sides: while review checkouts are made again and again, an
observer reads every worktree HEAD and a loop runs the user's maintenance; neither may meet a HEAD
that names no object. And once a review has ended (its task branch gone, its commit only in
gitliza's own store, as a sandboxed coder's is), gc, repack, prune and fsck still pass and keep
the commit the checkout is on.
"""
from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pygit2

from gitliza.git.objects import ownstore
from gitliza.git.worktrees.admin import rmtree
from gitliza.git.worktrees.clean import clean_checkout
from tests.conftest import git

CHECKOUTS = 25  # review checkouts made anew; git's window showed in most runs of 5
MAINTENANCE = (("repack", "-ad", "-q"), ("rev-list", "--all", "--quiet"),
               ("gc", "--prune=now", "--quiet"), ("prune",), ("fsck", "--no-dangling"))


def _maintain(repo: Path, cmd: tuple[str, ...]) -> str | None:
    r = subprocess.run(["git", *cmd], cwd=repo, capture_output=True, text=True)
    if r.returncode != 0 and "another git process" not in r.stderr:
        return f"git {' '.join(cmd)}: {r.returncode} {r.stderr.strip()}"
    return None


def _bad_heads(repo: Path, odb: pygit2.Repository) -> list[str]:
    """Every worktree HEAD that git would take as a root and not find: a detached HEAD (neither
    absent nor a symbolic ref) naming no object of the repository."""
    found = []
    for head in (repo / ".git" / "worktrees").glob("*/HEAD"):
        try:
            text = head.read_text().strip()
        except OSError:  # removed as it was read: git skips it too
            continue
        if text and not text.startswith("ref:"):
            try:
                there = pygit2.Oid(hex=text) in odb.odb
            except ValueError:
                there = False
            if not there:
                found.append(f"{head.parent.name}/HEAD = {text}")
    return found


def test_making_a_review_checkout_never_shows_git_a_head_without_its_object(repo: Path) -> None:
    r = pygit2.Repository(str(repo))
    commit = r.head.target
    path = repo / ".liza" / "reviews" / "reviewer-1"
    path.parent.mkdir(parents=True)
    stop = threading.Event()
    seen: list[str] = []
    failures: list[str] = []

    def observe() -> None:
        odb = pygit2.Repository(str(repo))
        while not stop.is_set():
            seen.extend(_bad_heads(repo, odb))

    def maintain() -> None:
        while not stop.is_set():
            for cmd in MAINTENANCE[:2]:
                failure = _maintain(repo, cmd)
                if failure:
                    failures.append(failure)

    threads = [threading.Thread(target=observe), threading.Thread(target=maintain)]
    for t in threads:
        t.start()
    try:
        for _ in range(CHECKOUTS):
            rmtree(path)  # gone (a first review, a user's clean-up): made anew, not reused
            clean_checkout(r, path, commit)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not seen and not failures, (sorted(set(seen)), failures)
    assert git(path, "rev-parse", "HEAD") == str(commit)
    assert git(repo, "for-each-ref", "refs/heads/liza-tmp") == ""  # no scratch branch left


def test_an_ended_review_of_a_commit_only_gitlizas_store_holds_survives_maintenance(
        repo: Path) -> None:
    """A sandboxed coder's commit lives in gitliza's own store (an alternate); its review ends
    and its task branch goes (merged, squashed): the user's gc, repack, prune and fsck pass, and
    the review checkout's HEAD still names a commit git reads, as does the next review's."""
    r = pygit2.Repository(str(repo))
    env = {**ownstore.agent_env(r), "GIT_AUTHOR_NAME": "c", "GIT_AUTHOR_EMAIL": "c@x",
           "GIT_COMMITTER_NAME": "c", "GIT_COMMITTER_EMAIL": "c@x"}
    git(repo, "switch", "-q", "-c", "liza/t1")
    (repo / "work.txt").write_text("coder's work\n")
    git(repo, "add", "work.txt")
    subprocess.run(["git", "commit", "-q", "-m", "coder's work"], cwd=repo, check=True,
                   env={**os.environ, **env})
    review = git(repo, "rev-parse", "HEAD")
    git(repo, "switch", "-q", "main")
    loose = repo / ".git" / "objects" / review[:2] / review[2:]
    assert not loose.exists(), "the commit was written into objects/, not gitliza's store"
    path = repo / ".liza" / "reviews" / "reviewer-1"
    path.parent.mkdir(parents=True)
    clean_checkout(pygit2.Repository(str(repo)), path, pygit2.Oid(hex=review))
    for cmd in MAINTENANCE:  # while the review checkout lives
        assert _maintain(repo, cmd) is None
    git(repo, "branch", "-q", "-D", "liza/t1")  # the review ended, its branch is gone
    git(repo, "reflog", "expire", "--expire=now", "--all")
    for cmd in MAINTENANCE:
        assert _maintain(repo, cmd) is None
    assert git(path, "rev-parse", "HEAD") == review
    assert git(path, "cat-file", "-t", review) == "commit"
    assert (path / "work.txt").read_text() == "coder's work\n"
    clean_checkout(pygit2.Repository(str(repo)), path, r.head.target)  # the next review
    assert _maintain(repo, ("fsck", "--no-dangling")) is None
