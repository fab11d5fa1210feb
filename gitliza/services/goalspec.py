"""What `init` checks in the repository around the board, as liza-init.sh does: the goal's spec
file (recorded as `goal.spec_ref`; the prompts point agents at it) and the branch HEAD is on (the
integration branch starts from it, so a HEAD away from main/master is worth a warning)."""
from __future__ import annotations

import stat
from pathlib import Path

import pygit2

from gitliza.core.ids import check_spec_ref, spec_path
from gitliza.core.agents.prompts import DEFAULT_SPEC
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


def head_name(repo: pygit2.Repository) -> str:
    """The branch HEAD is on, for a message (`main`, or `HEAD` when detached)."""
    try:
        target = repo.references["HEAD"].target
    except (KeyError, pygit2.GitError):
        return "HEAD"
    return target.removeprefix("refs/heads/") if isinstance(target, str) else "HEAD"


def integration_catchup(repo: pygit2.Repository, branch: str,
                        human: bool) -> tuple[str | None, str | None]:
    """A next goal's spec is committed on `main` (HEAD), but worktrees start from the integration
    branch and the web board reads specs there. Returns (the commit to fast-forward the
    integration branch to, a one-line notice): a fast-forward when the branch is an ancestor of
    HEAD and the human runs `init` (moving the branch's base is the human's: the new commits are
    the human's own, never an agent's unreviewed work); otherwise what to type, or nothing when
    the branch already holds HEAD."""
    ref = repo.references.get(f"refs/heads/{branch}")
    if ref is None or repo.head_is_unborn:
        return None, None
    integ = ref.peel(pygit2.Commit).id
    head = repo.head.peel(pygit2.Commit).id
    if head == integ or repo.descendant_of(integ, head):
        return None, None
    name = head_name(repo)
    ahead, behind = repo.ahead_behind(head, integ)
    fix = (f"`git branch -f {branch} {name}` and, as the human, "
           f"`git liza config integration_base $(git rev-parse {name})`")
    if behind == 0:
        if human:
            return str(head), (f"{branch} fast-forwarded to {name} ({ahead} new commit(s), the "
                               f"next goal's spec among them): agents start from it")
        return None, (f"{branch} lacks {name}'s {ahead} new commit(s) (the next goal's spec?): "
                      f"{fix}")
    return None, (f"{branch} lacks {name}'s {ahead} new commit(s) and cannot fast-forward "
                  f"({branch} has {behind} {name} lacks): `git merge {branch}` on {name}, "
                  f"then {fix}")


def fast_forward(repo: pygit2.Repository, branch: str, new: str) -> bool:
    """Move `branch` to `new` if that is still a fast-forward (it may have moved meanwhile)."""
    ref = repo.references.get(f"refs/heads/{branch}")
    target = pygit2.Oid(hex=new)
    if ref is None:
        return False
    tip = ref.peel(pygit2.Commit).id
    if tip != target and not repo.descendant_of(target, tip):
        return False
    repo.references.create(f"refs/heads/{branch}", target, force=True)
    return True
