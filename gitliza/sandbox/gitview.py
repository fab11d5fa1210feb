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
- `worktrees/<task>`: the task worktree's admin dir as the coder sees it: a private copy
  (`<agent>/wt`, its index and logs), with HEAD, commondir, gitdir and config.worktree
  read-only. Private, not the real admin dir: the coder's index and HEAD reflog name objects
  that only its own store holds, and the user's `git gc`/`repack` count every worktree's index
  and reflog as reachable: they failed on "bad tree object" while a coder worked.

The supervisor brings the coder's work back (`import_branch`): before it applies a brokered
`git liza` command of the coder and when the agent exits. It fetches the task branch's tip from
that directory (git checks the objects and their connectivity) into gitliza's own object store
(git/objects/ownstore.py), which no maintenance command prunes: a `git prune` between the fetch and the
branch's move deleted the fetched commits when they landed in objects/. It then
moves the real task branch with a compare-and-swap and resets the real index to the new tip (the
worktree's files untouched), so that the index git sees outside names only objects it can read.
Before the directory is rebuilt (the next launch) and when the session ends, what the coder made
there and the repository lacks (its refs: the task branch if it could not be brought in, stashes,
other branches and tags) is fetched the same way and kept in the attic (`keep_unimported`).
"""
from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pygit2

from gitliza.errors import GitFailure
from gitliza.git.objects import ownstore
from gitliza.git.gitcmd import error_line, local_git
from gitliza.git.repository import reopened
from gitliza.git.worktrees.tasktrees import task_branch
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
    worktree: Path | None = None  # the task's worktree (outside view): its index follows imports

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
    keep_unimported(repo, common, shadow)  # what the last session left unimported: the attic
    shutil.rmtree(shadow, ignore_errors=True)
    real_admin, admin = admin, base / "wt"
    shutil.rmtree(admin, ignore_errors=True)
    admin.mkdir(parents=True, mode=0o700)
    for f in ("HEAD", "gitdir", "index"):  # the coder's copy (read-only: HEAD, gitdir)
        if (real_admin / f).is_file():
            shutil.copyfile(real_admin / f, admin / f)
    branch = f"refs/heads/{task_branch(task)}"
    for d in ("objects/info", "objects/pack", "refs/heads", "refs/tags", "refs/liza", "logs",
              "hooks", "info", f"worktrees/{real_admin.name}", str(Path(branch).parent)):
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
    dotgit.write_text(f"gitdir: {shadow / 'worktrees' / real_admin.name}\n")
    commondir.write_text(f"{shadow}\n")
    shutil.copyfile(commondir, admin / "commondir")  # a whole admin dir (the mount hides it)
    empty.write_text("")
    # The mount point of the read-only empty file (an empty config.worktree is none at all).
    (admin / "config.worktree").write_text("")
    try:
        worktree: Path | None = Path((real_admin / "gitdir").read_text().strip()).parent
    except OSError:
        worktree = None
    return (CoderGit(shadow, admin, real_admin.name, dotgit, commondir, empty),
            CoderRepo(common, shadow, branch, launched, worktree))


def _fetch_in(repo: pygit2.Repository, common: Path, shadow: Path, oids: list[str]) -> None:
    """Fetch `oids` (and what they reach) from the coder's directory into gitliza's own store:
    git checks every object it takes (hash, connectivity), and nothing of the user's maintenance
    deletes from that store (ownstore.py), so no prune can take them before a ref names them."""
    env = ownstore.agent_env(repo)
    # No automatic maintenance afterwards: with the own store as git's object directory, a
    # `gc --auto` would repack and prune that store as if it were the repository's own, and
    # delete what only other refs' writers (the live refs' renewals) had just written.
    run = local_git(common, "-c", "gc.auto=0", "-c", "maintenance.auto=false", "fetch",
                    "--quiet", "--no-tags", "--no-write-fetch-head", "--no-auto-gc",
                    "--no-auto-maintenance", str(shadow), *oids, env=env or None)
    if run.returncode != 0:
        raise GitFailure(f"cannot bring the coder's commits in: {error_line(run.stderr)}")


def _sync_index(coder: CoderRepo) -> None:
    """The real index onto the task branch's new tip, the worktree's files untouched (git reset
    --mixed): outside, `git status` shows what the coder left uncommitted, and the index names
    only objects the repository has."""
    if coder.worktree is None or not coder.worktree.is_dir():
        return
    local_git(coder.worktree, "-c", "core.hooksPath=/dev/null", "reset", "-q", "--mixed")


def keep_unimported(repo: pygit2.Repository, common: Path, shadow: Path) -> list[str]:
    """Keep in the attic (refs/liza-attic/<task>/<oid>) every ref of the coder's own directory
    whose work the repository lacks: the task branch where it could not be brought in (an agent
    killed before its submit, an import refused), a stash, another branch, a tag. Their objects
    are fetched into the own store first. The attic refs made (none when there was nothing)."""
    try:
        head = (shadow / "HEAD").read_text().strip()
    except OSError:
        return []
    task = head.removeprefix("ref: refs/heads/liza/")
    if task == head or not task:
        return []
    own_branch = f"refs/heads/{task_branch(task)}"
    wanted: list[str] = []
    for f in sorted((shadow / "refs").rglob("*")) if (shadow / "refs").is_dir() else []:
        name = f.relative_to(shadow).as_posix()
        if name.startswith("refs/liza/") or not f.is_file() or f.is_symlink():
            continue
        try:
            m = _OID.match(f.read_bytes())
        except OSError:
            continue
        if m is None:
            continue
        oid = m.group(1).decode()
        if oid not in wanted and _lacks(repo, own_branch if name == own_branch else None, oid):
            wanted.append(oid)
    if not wanted:
        return []
    from gitliza.services.attic import ATTIC, to_attic
    try:
        _fetch_in(repo, common, shadow, wanted)
    except GitFailure:
        # One unreadable ref must not cost the others: each on its own.
        got = []
        for oid in wanted:
            try:
                _fetch_in(repo, common, shadow, [oid])
                got.append(oid)
            except GitFailure:
                continue
        wanted = got
    fresh = reopened(repo)  # sees the objects just fetched
    for oid in wanted:
        to_attic(fresh, task, pygit2.Oid(hex=oid), "the coder's own git directory is rebuilt")
    return [f"{ATTIC}/{task}/{oid}" for oid in wanted]


def _lacks(repo: pygit2.Repository, branch: str | None, oid: str) -> bool:
    """Whether the repository lacks the object `oid`, or (for the task branch) its branch does
    not contain that commit."""
    try:
        if repo.get(oid) is None:
            return True
    except ValueError:
        return False
    if branch is None:
        return False
    ref = repo.references.get(branch)
    if ref is None:
        return True
    tip = ref.resolve().target
    try:
        return not (str(tip) == oid or repo.descendant_of(tip, pygit2.Oid(hex=oid)))
    except (pygit2.GitError, ValueError):
        return True


def import_branch(repo: pygit2.Repository, coder: CoderRepo) -> str | None:
    """Bring the coder's task branch onto the real one: its new tip, or None when nothing moved.
    Raises GitFailure when the tip is not a commit git can fetch, or the real branch moved."""
    tip, old = coder.tip(), coder.base
    if tip is None or tip == old:
        return None
    # Hooks are not run (the shadow's config is our copy, read-only to the agent).
    _fetch_in(repo, coder.common, coder.shadow, [tip])
    repo = reopened(repo)  # sees the objects just fetched into the own store
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
    _sync_index(coder)
    return tip


def private_tip(repo: pygit2.Repository, coder: CoderRepo) -> str | None:
    """The coder's latest commit in its own directory, fetched into gitliza's own store (the task
    branch is not moved: that is `import_branch`'s), for a work-in-progress snapshot over it
    (team/wipsnap.py); None when it has made none since the last import, or it cannot be read."""
    tip = coder.tip()
    if tip is None or tip == coder.base:
        return None
    try:
        _fetch_in(repo, coder.common, coder.shadow, [tip])
    except GitFailure:
        return None
    return tip
