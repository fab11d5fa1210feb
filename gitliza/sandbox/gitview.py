"""A coder's own git directory: how its commits land on its task branch, and nowhere else.

Inside the sandbox the repository's common dir is read-only, so a coder cannot write objects or
refs there (which would let it move refs/liza/state, the integration branch or another task's
branch). Its worktree's `.git` points instead (a file mounted over it inside the sandbox only) to
a common dir of its own, `<common>/liza/sandboxes/<agent>/git`, which holds:

- `objects/`: where its new objects go; `objects/info/alternates` names the shared objects, so
  every existing object is readable without a copy;
- `refs/`: its task branch (the real tip at launch) and whatever else it makes (stashes, tags:
  private, never read back); `refs/liza/` is the real board, read-only (the commit hooks judge
  the claim by it); `packed-refs`: the repository's other refs at launch, read-only;
- `worktrees/<task>`: the task worktree's real admin dir (index, logs), with HEAD, commondir,
  gitdir and config.worktree read-only.

The supervisor brings the coder's work back (`import_branch`): before it applies a brokered
`git liza` command of the coder and when the agent exits. It fetches the task branch's tip from
that directory into the repository (git checks the objects and their connectivity) and moves
the real task branch with a compare-and-swap. Nothing else of that directory is ever read.
"""
from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pygit2

from gitliza.errors import GitFailure
from gitliza.git.gitcmd import error_line, local_git
from gitliza.git.worktrees import task_branch
from gitliza.sandbox.policy import CoderGit

SANDBOXES = "sandboxes"  # under <common>/liza/
_OID = re.compile(rb"^([0-9a-f]{40}|[0-9a-f]{64})\n?$")


def agent_dir(common: Path, agent: str) -> Path:
    """The agent's sandbox directory: in the common dir's `liza/` (never visible to an agent)."""
    return common / "liza" / SANDBOXES / agent


@dataclass
class CoderRepo:
    common: Path
    shadow: Path
    branch: str  # refs/heads/liza/<task>
    base: str | None  # the real branch's tip as the supervisor last set it (the CAS's old value)

    def tip(self) -> str | None:
        """The coder's task branch tip in its own directory (a loose ref it may have rewritten:
        only a bare object id is accepted)."""
        try:
            data = (self.shadow / self.branch).read_bytes()
        except OSError:
            return None
        m = _OID.match(data)
        return m.group(1).decode() if m else None


def build(repo: pygit2.Repository, common: Path, agent: str, task: str,
          admin: Path) -> tuple[CoderGit, CoderRepo]:
    """(Re)make the coder's own git dir for a launch on `task` (worktree admin dir `admin`)."""
    base = agent_dir(common, agent)
    shadow = base / "git"
    shutil.rmtree(shadow, ignore_errors=True)
    branch = f"refs/heads/{task_branch(task)}"
    for d in ("objects/info", "objects/pack", "refs/heads", "refs/tags", "refs/liza", "logs",
              "hooks", "info", f"worktrees/{admin.name}", str(Path(branch).parent)):
        (shadow / d).mkdir(parents=True, exist_ok=True, mode=0o700)
    (shadow / "HEAD").write_text(f"ref: {branch}\n")
    # Our copy of the config; the supervisor's fetch asks for the tip by id (the ref may move
    # between the read and the fetch).
    (shadow / "config").write_text((common / "config").read_text()
                                   + "[uploadpack]\n\tallowAnySHA1InWant = true\n")
    exclude = common / "info" / "exclude"
    if exclude.is_file():
        shutil.copyfile(exclude, shadow / "info" / "exclude")
    (shadow / "objects/info/alternates").write_text(f"{common / 'objects'}\n")
    lines = []
    for name in repo.references:
        if name.startswith("refs/liza/") or name == branch:
            continue
        ref = repo.references.get(name)
        if ref is None:
            continue
        try:
            target = ref.resolve().target
        except (KeyError, pygit2.GitError):
            continue
        lines.append(f"{target} {name}\n")
    (shadow / "packed-refs").write_text("".join(sorted(lines, key=lambda x: x.split()[1])))
    real = repo.references.get(branch)
    launched = str(real.resolve().target) if real is not None else None
    if launched is not None:
        (shadow / branch).write_text(f"{launched}\n")
    dotgit, commondir, empty = base / "dotgit", base / "commondir", base / "empty"
    dotgit.write_text(f"gitdir: {shadow / 'worktrees' / admin.name}\n")
    commondir.write_text(f"{shadow}\n")
    empty.write_text("")
    if not (admin / "config.worktree").exists():
        # The mount point of the read-only empty file (an empty config.worktree is none at all).
        (admin / "config.worktree").write_text("")
    return CoderGit(shadow, admin, admin.name, dotgit, commondir, empty), CoderRepo(common, shadow, branch, launched)


def import_branch(repo: pygit2.Repository, coder: CoderRepo) -> str | None:
    """Bring the coder's task branch onto the real one: its new tip, or None when nothing moved.
    Raises GitFailure when the tip is not a commit git can fetch, or the real branch moved."""
    tip, old = coder.tip(), coder.base
    if tip is None or tip == old:
        return None
    # git fetch checks every object it takes (hash, connectivity); hooks are not run (the
    # shadow's config is our copy, read-only to the agent).
    run = local_git(coder.common, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
                    str(coder.shadow), tip)
    if run.returncode != 0:
        raise GitFailure(f"cannot bring the coder's commits in: {error_line(run.stderr)}")
    try:
        obj = repo.get(tip)
    except ValueError:
        obj = None
    if obj is None or not isinstance(obj, pygit2.Commit):
        raise GitFailure(f"the coder's task branch names {tip}, which is not a commit")
    # Compare-and-swap from the value the branch had at launch (or the last import): anyone
    # else's move meanwhile is a conflict, never overwritten. The supervisor moves its own agent's
    # branch, past the client hooks (they judge agents, and this is the agent's own claim).
    run = local_git(coder.common, "-c", "core.hooksPath=/dev/null", "update-ref", "-m",
                    "gitliza sandbox: the coder's commits", coder.branch, tip,
                    old or "0" * len(tip))
    if run.returncode != 0:
        raise GitFailure(f"cannot move {coder.branch}: {error_line(run.stderr)}")
    coder.base = tip
    return tip
