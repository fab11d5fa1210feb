"""A clean checkout of exactly one commit: what a reviewer reviews, so that what it
tests is the commit, not the bytes a coder's worktree holds beside it.

A coder's worktree passes Clean Sync with ignored files in it (a `__pycache__` built from other
code, a `.venv`, `node_modules`): tests run there can pass on what the commit does not hold. The
reviewer gets a detached worktree of its own at `review_commit` instead, reused from one review
to the next and made clean each time as `actions/checkout` does (`checkout --force --detach`,
then `clean -ffdx`: every change, untracked and ignored file, nested repository included, goes).
The coder's worktree is left as it was. Git's hooks do not run for it (`core.hooksPath` off):
what the repository's hooks directory holds is not the reviewer's to run.

It is added as git/worktrees/detached.py adds one, never by `git worktree add`, whose placeholder
HEAD made the user's `git repack -ad` beside a reviewer fail on "bad object
worktrees/<agent>/HEAD".
"""
from __future__ import annotations

from pathlib import Path

from pygit2 import Oid, Repository

from gitliza.core import treerules
from gitliza.errors import GitFailure
from gitliza.git import treecheck
from gitliza.git.gitcmd import error_line, run_git
from gitliza.git.repository import common_dir, main_repository
from gitliza.git.worktrees.admin import admin_entries, drop_admin, rmtree, worktree_mutex
from gitliza.git.worktrees.detached import NO_HOOKS, TIMEOUT, checkout_detached


def clean_checkout(repo: Repository, path: Path, commit: Oid,
                   bounds: tuple[int, int] | None = None, what: str = "the review") -> Path:
    """`path` as a clean detached checkout of exactly `commit`, made or made clean again; a tree
    past `bounds` (default core/treerules.py's) is refused before anything is written."""
    main = main_repository(repo)
    treecheck.refuse_large(main, commit, bounds or treerules.checkout_bounds(None, None), what)
    with worktree_mutex(repo):
        if _registered(repo, path):
            _git(path, *NO_HOOKS, "checkout", "-q", "--force", "--detach", str(commit))
        else:
            for entry in admin_entries(common_dir(repo)):
                if entry.checkout == path.resolve() or (entry.checkout is None
                                                         and entry.name == path.name):
                    drop_admin(entry)
            rmtree(path)
            checkout_detached(main, path.name, path, commit)
        _git(path, "clean", "-ffdxq")
        head = _git(path, "rev-parse", "HEAD").strip()
    if head != str(commit):
        raise GitFailure(f"{path}: HEAD is {head[:12]}, not {str(commit)[:12]}")
    return path


def _registered(repo: Repository, path: Path) -> bool:
    if not (path / ".git").is_file():
        return False
    real = path.resolve()
    return any(e.checkout == real for e in admin_entries(common_dir(repo)))


def _git(cwd: Path, *args: str) -> str:
    r = run_git(cwd, list(args), timeout=TIMEOUT)
    if r.returncode != 0:
        raise GitFailure(f"git {args[len(NO_HOOKS) if args[:2] == NO_HOOKS else 0]} in "
                         f"{cwd}: {error_line(r.stderr)}")
    return r.stdout
