"""Adding a detached worktree without ever showing git a HEAD that names no object.

`git worktree add` writes the new admin dir's HEAD as a placeholder, the null object id, and only
then runs `git update-ref HEAD <commit>` in a child process. Every `git gc`, `repack -a`, `prune`
and `rev-list --all` reads each worktree's HEAD as a root, placeholder included, and dies on it
("fatal: bad object worktrees/<name>/HEAD", exit 128): a user's maintenance run beside a team
failed whenever it met that window. libgit2 writes the admin dir without the placeholder (HEAD is
absent until it is the symbolic ref to an existing branch, and git skips a HEAD that does not
resolve), so a worktree is added here through libgit2 on a scratch branch at the commit, detached
(HEAD written whole, through a lock file), and only then is the scratch branch deleted: at every
moment git reads either no HEAD or one naming `commit`. Where the files must be git's own
(filters, attributes), `checkout_detached` drops the index libgit2 wrote and has git check the
commit out over it, so that no file is taken as checked out already.
"""
from __future__ import annotations

from pathlib import Path

import pygit2
from pygit2 import Oid, Repository

from gitliza.errors import GitFailure
from gitliza.git import refdelete
from gitliza.git.checkouts import open_checkout
from gitliza.git.gitcmd import error_line, run_git
from gitliza.git.repository import common_dir
from gitliza.git.worktrees.admin import rmtree

TEMP_BRANCH_PREFIX = "refs/heads/liza-tmp/"
# A checkout of a large project's tree takes its time; local all the same.
TIMEOUT = 600.0
NO_HOOKS = ("-c", "core.hooksPath=/dev/null")


def add_detached(main: Repository, name: str, path: Path, commit: Oid) -> Path:
    """A new worktree at `path` (which must not exist), detached at `commit`, its admin dir named
    `name` or, when that is taken, the first free `name<N>` as git would; returns the admin dir.
    The caller holds the worktree mutex."""
    name = free_name(common_dir(main), name)
    admin = common_dir(main) / "worktrees" / name
    scratch = main.references.create(f"{TEMP_BRANCH_PREFIX}{name}", commit, force=True)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)  # as `git worktree add` does
        main.add_worktree(name, str(path), scratch)
        open_checkout(path).set_head(commit)
    except (pygit2.GitError, OSError) as e:
        # libgit2 leaves the admin dir it made behind when a later step fails.
        rmtree(admin)
        raise GitFailure(f"could not add a worktree of {commit} at {path}: {e}") from e
    finally:
        refdelete.delete(main, scratch.name)
    return admin


def free_name(common: Path, name: str) -> str:
    base, n = common / "worktrees", 0
    while (base / (name if n == 0 else f"{name}{n}")).exists():
        n += 1
    return name if n == 0 else f"{name}{n}"


def checkout_detached(main: Repository, name: str, path: Path, commit: Oid) -> Path:
    """`add_detached`, its files then written by git itself (hooks off: what the repository's
    hooks directory holds is not ours to run); returns the admin dir."""
    admin = add_detached(main, name, path, commit)
    (admin / "index").unlink(missing_ok=True)
    run = run_git(path, [*NO_HOOKS, "checkout", "-q", "--force", "--detach", str(commit)],
                  timeout=TIMEOUT)
    if run.returncode != 0:
        raise GitFailure(f"could not check {commit} out at {path}: {error_line(run.stderr)}")
    return admin
