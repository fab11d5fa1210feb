"""What `init` checks in the repository around the board, as liza-init.sh does: the goal's spec
file (recorded as `goal.spec_ref`; the prompts point agents at it) and the branch HEAD is on (the
integration branch starts from it, so a HEAD away from main/master is worth a warning)."""
from __future__ import annotations

import stat
from pathlib import Path

import pygit2

from gitliza.core.ids import check_spec_ref, spec_path
from gitliza.core.prompts import DEFAULT_SPEC
from gitliza.errors import ValidationError
from gitliza.git.repository import main_worktree


def goal_spec(repo: pygit2.Repository, spec: str | None) -> tuple[str | None, list[str]]:
    """The spec_ref to record and the notices to show. A spec given must exist in the main
    worktree (liza-init.sh refuses otherwise); without one, the default is recorded when it
    exists. gitliza does not refuse a missing default, as liza-init.sh does: a board needs no
    vision document to track tasks (docs/lifecycle.md)."""
    root = main_worktree(repo)
    if spec is not None:
        check_spec_ref(spec)
        if root is not None and not _regular_inside(root, spec_path(spec)):
            raise ValidationError(f"goal spec {spec_path(spec)} does not exist (as a regular "
                                  "file, not a link, inside the repository)",
                                  hint="create the spec document first (liza-init.sh requires "
                                       "it too), or name another with --spec")
        return spec, []
    if root is not None and _regular_inside(root, DEFAULT_SPEC):
        return DEFAULT_SPEC, []
    return None, [f"no goal spec: {DEFAULT_SPEC} does not exist (--spec PATH names another); "
                  "agents are told to read the goal instead"]


def _regular_inside(root: Path, rel: str) -> bool:
    """Whether `root/rel` is a regular file reached through directories only: no symbolic link
    on the way (a committed `specs -> /etc` or `vision.md -> /etc/passwd` would point agents at a
    file outside the repository)."""
    path = root
    parts = rel.split("/")
    for i, part in enumerate(parts):
        path = path / part
        try:
            st = path.lstat()
        except OSError:
            return False
        want = stat.S_ISREG if i == len(parts) - 1 else stat.S_ISDIR
        if not want(st.st_mode):
            return False
    return True


def branch_warning(repo: pygit2.Repository) -> str | None:
    """liza-init.sh's warning when HEAD is not on main/master (it also asks to continue; gitliza
    does not prompt, since agents and scripts run `init` too)."""
    try:
        target = repo.references["HEAD"].target
    except (KeyError, pygit2.GitError):
        return None
    if not isinstance(target, str):
        name = "a detached HEAD"
    else:
        name = target.removeprefix("refs/heads/")
        if name in ("main", "master"):
            return None
        name = repr(name)
    return (f"warning: HEAD is on {name}, not main/master; the integration branch is "
            "created from this commit")
