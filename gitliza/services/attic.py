"""The attic, `refs/liza-attic/<task>/<oid>`: where commits and uncommitted work that a branch or
worktree about to go holds, and the integration branch lacks, are kept, so that nothing is lost.

An entry's ref names an annotated tag (written into gitliza's own store) that points at the kept
commit `<oid>` and carries when it was kept and why: a kept branch tip may be a commit made
weeks earlier, and the time an entry is kept (`config.attic_keep` days) runs from its keeping, not
from its commit. Entries made before the tag (a ref naming the commit itself) count from the
commit's time. An entry is whole when its ref peels to the commit its name says (`verified`):
sync shares only such entries (services/sync/atticshare.py), and a name never changes content.
"""
from __future__ import annotations

import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pygit2
from pygit2 import Oid, Repository

from gitliza.core.ops.work import worktree_path
from gitliza.errors import GitFailure, ValidationError
from gitliza.git.objects import ownstore
from gitliza.git.gitcmd import error_line, local_git
from gitliza.git.reflocks import retrying
from gitliza.git.checkouts import clean_sync_problems
from gitliza.git.repository import main_repository, ref_oid
from gitliza.git.worktrees.tasktrees import task_branch
from gitliza.git.worktrees.admin import worktree_mutex
from gitliza.git.worktrees.detached import checkout_detached
from gitliza.services import leftovers
from gitliza.git import refdelete

ATTIC = "refs/liza-attic"


def keep_leftovers(repo: Repository, task: str, path: Path, base: Oid) -> list[str]:
    """Nothing is lost when a claim starts afresh over an earlier coder's leftovers (a takeover
    after a crash, a task unblocked with its dirty worktree kept): `save` before the worktree
    and branch are replaced. The attic refs made."""
    if path.is_dir() and not (path / ".git").exists() and any(path.iterdir()):
        # Not a worktree gitliza made: someone's files. Refuse rather than delete them.
        raise ValidationError(f"{worktree_path(task)} holds files that are not a gitliza "
                              "worktree; a fresh claim would delete them",
                              hint=f"move them out of {path}, then claim again")
    return save(repo, task, path, base, "a fresh claim")


def save(repo: Repository, task: str, path: Path, contained_in: Oid | None,
         before: str, branch_stays: bool = False) -> list[str]:
    """The safety net every teardown calls first (a takeover, a stand-down, a release, a
    reassignment, abandon/rescope/unblock, doctor --fix, a supervisor's stop, an agent's crash):
    the worktree's uncommitted changes (a snapshot commit on top of its HEAD, untracked files
    included, ignored ones not: they are not work) and the commits of `liza/<task>` that
    `contained_in` lacks go under refs/liza-attic/<task>/<oid>. Nothing of the worktree changes:
    the snapshot is made with a throw-away index. The attic is outside refs/liza/, which sync and
    the server hook own; `git liza attic` lists and restores its entries. The refs made (none
    when there was nothing to keep), for the line that reports the teardown.
    `branch_stays`: the teardown leaves `liza/<task>` where it is (a stop, a restart, a release
    that keeps the worktree), so its commits are not lost and are not kept twice:
    only uncommitted work is; the next fresh claim keeps the branch's commits before replacing it."""
    keep: list[Oid] = []
    if path.is_dir() and (path / ".git").exists() and not leftovers.cut_short(path) \
            and clean_sync_problems(path):
        keep.append(_snapshot(repo, path, f"gitliza: uncommitted work left in "
                              f"{worktree_path(task)}, kept before {before}"))
    if not branch_stays:
        keep += [oid for oid in unmerged_branch_tip(repo, task, contained_in) if oid not in keep
                 and not (keep and repo.descendant_of(keep[0], oid))]
    return [to_attic(repo, task, oid, before) for oid in keep]


def _snapshot(repo: Repository, path: Path, message: str) -> Oid:
    """A commit of the worktree as it is (untracked files included, ignored ones not) on top of
    its HEAD, made by git with a throw-away index and its objects written into gitliza's own
    store (git/objects/ownstore.py): a user's `git prune` between their writing and the attic ref cannot
    take them (in objects/ it did: an attic ref then named a commit whose tree was gone)."""
    tree, parent = worktree_tree(repo, path)
    return commit_tree(repo, path, tree, parent, message)


def _env(repo: Repository) -> dict[str, str]:
    return {**ownstore.agent_env(repo), "GIT_AUTHOR_NAME": "gitliza",
            "GIT_AUTHOR_EMAIL": "gitliza@liza.invalid", "GIT_COMMITTER_NAME": "gitliza",
            "GIT_COMMITTER_EMAIL": "gitliza@liza.invalid"}


def worktree_tree(repo: Repository, path: Path, parent: str | None = None) -> tuple[str, str]:
    """(tree, parent) of the worktree's files as they are, over `parent` (default its HEAD; ""
    when it has none), written by git through a throw-away index: the worktree's own index and
    files are never touched."""
    env = _env(repo)
    with tempfile.TemporaryDirectory(prefix="liza-attic-") as tmp:
        env["GIT_INDEX_FILE"] = str(Path(tmp) / "index")
        if parent is None:
            head = local_git(path, "rev-parse", "--verify", "-q", "HEAD^{commit}", env=env)
            parent = head.stdout.strip() if head.returncode == 0 else ""
        steps = [["read-tree", parent] if parent else ["read-tree", "--empty"],
                 ["-c", "core.hooksPath=/dev/null", "add", "-A"], ["write-tree"]]
        out = ""
        for args in steps:
            run = local_git(path, *args, env=env)
            if run.returncode != 0:
                raise GitFailure(f"cannot keep {path}'s work: {error_line(run.stderr)}")
            out = run.stdout.strip()
    return out, parent


def commit_tree(repo: Repository, path: Path, tree: str, parent: str, message: str) -> Oid:
    """A commit of `tree` over `parent` (none when ""), into gitliza's own store."""
    run = local_git(path, "commit-tree", tree, *(["-p", parent] if parent else []),
                    "-m", message, env=_env(repo))
    if run.returncode != 0:
        raise GitFailure(f"cannot keep {path}'s work: {error_line(run.stderr)}")
    return Oid(hex=run.stdout.strip())


def kept_line(refs: list[str]) -> str:
    """How a teardown's line names what it kept."""
    return f"work kept in the attic: {', '.join(refs)}" if refs else ""


def unmerged_branch_tip(repo: Repository, task: str, contained_in: Oid | None) -> list[Oid]:
    """The tip of `liza/<task>` if it has commits that `contained_in` lacks, else nothing."""
    branch = repo.references.get(f"refs/heads/{task_branch(task)}")
    if branch is None:
        return []
    tip = ref_oid(branch)
    if contained_in is not None and (tip == contained_in or repo.descendant_of(contained_in, tip)):
        return []
    return [tip]


def to_attic(repo: Repository, task: str, oid: Oid, why: str = "a teardown",
             when: int | None = None) -> str:
    """Keep commit `oid` as an entry of `task`, kept at `when` (now by default); an entry of that
    commit kept earlier stays as it is. Its ref name."""
    name = f"{ATTIC}/{task}/{oid}"
    if repo.references.get(name) is None:
        tag = _tag(repo, name, oid, why, int(time.time()) if when is None else when)
        retrying(lambda: repo.references.create(name, tag), f"cannot keep {name}")
    return name


def _tag(repo: Repository, name: str, oid: Oid, why: str, when: int) -> Oid:
    """The annotated tag of an entry, written into gitliza's own store (a user's prune between its
    writing and its ref cannot take it)."""
    from gitliza.git.objects.trees import Batch
    body = (f"object {oid}\ntype commit\ntag {name[len('refs/'):]}\n"
            f"tagger gitliza <gitliza@liza.invalid> {when} +0000\n\n"
            f"kept before {' '.join(why.split())}\n").encode()
    batch = Batch(repo)
    raw = batch.store(b"tag", body)
    batch.flush()
    return Oid(raw=raw)


_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)/([0-9a-f]{40}|[0-9a-f]{64})$")


def parse_name(name: str, prefix: str = ATTIC + "/") -> tuple[str, str] | None:
    """(task, oid) of an entry's ref name under `prefix`; None for another name (an import's old
    board, refs/liza-attic/state/..., is not an entry)."""
    m = _NAME.match(name[len(prefix):]) if name.startswith(prefix) else None
    if m is None or m.group(1) == "state":
        return None
    return m.group(1), m.group(2)


def kept_at(repo: Repository, target: Oid, oid: str) -> int | None:
    """When the entry whose ref names `target` was kept, if it is whole: `target` peels to the
    commit `oid` its name says (an annotated tag: its tagger time; the commit itself, as before the
    tag: the commit's time). None for anything else."""
    obj = repo.get(target)
    if isinstance(obj, pygit2.Tag):
        commit = repo.get(obj.target)
        if not isinstance(commit, pygit2.Commit) or str(commit.id) != oid \
                or obj.tagger is None:
            return None
        return int(obj.tagger.time)
    if isinstance(obj, pygit2.Commit) and str(obj.id) == oid:
        return int(obj.commit_time)
    return None


def expired(when: int, keep_days: int, now: float) -> bool:
    """Whether an entry kept at `when` is past `keep_days` at `now` (never a younger one)."""
    return now - when > keep_days * 86400


def prune(repo: Repository, keep_days: int, now: float) -> list[str]:
    """Drop the entries kept more than `keep_days` ago; the refs dropped. Each only while it still
    names what was judged (git's update-ref, never libgit2's: git/refdelete.py)."""
    gone = []
    for e in entries(repo):
        if expired(e.when, keep_days, now) and refdelete.delete(repo, e.ref, e.target):
            gone.append(e.ref)
    return gone


@dataclass(frozen=True)
class Entry:
    ref: str
    task: str
    oid: str
    when: int  # when it was kept (seconds since the epoch): kept_at
    subject: str
    target: str  # what the ref names: the entry's tag (or the commit, for an older entry)


def entries(repo: Repository, task: str | None = None) -> list[Entry]:
    """The attic's entries (of `task`, or all), newest first."""
    prefix = f"{ATTIC}/{task}/" if task else f"{ATTIC}/"
    out: list[Entry] = []
    for name in repo.references:
        parsed = parse_name(name) if name.startswith(prefix) else None
        if parsed is None:
            continue
        tid, oid = parsed
        try:
            target = repo.references[name].target
        except (KeyError, pygit2.GitError):
            continue
        if not isinstance(target, Oid):
            continue
        when = kept_at(repo, target, oid)
        commit = repo.get(oid)
        if when is None or not isinstance(commit, pygit2.Commit):
            continue
        out.append(Entry(name, tid, oid, when,
                         commit.message.splitlines()[0] if commit.message else "", str(target)))
    return sorted(out, key=lambda e: (-e.when, e.ref))


def merged(repo: Repository, e: Entry, into: Oid | None) -> bool:
    """Whether an entry's work has since reached the integration tip `into`: its commit is
    reachable from it, or (a snapshot of uncommitted work) its tree is the tip's. `git liza
    attic` marks such entries: nothing in them waits to be restored."""
    if into is None:
        return False
    oid = Oid(hex=e.oid)
    if oid == into or repo.descendant_of(into, oid):
        return True
    commit, tip = repo.get(oid), repo.get(into)
    return isinstance(commit, pygit2.Commit) and isinstance(tip, pygit2.Commit) \
        and commit.tree_id == tip.tree_id


def restore(repo: Repository, task: str, which: str, into: Path) -> Entry:
    """Check an attic entry out into a new worktree at `into` (detached at the kept commit:
    the snapshot's files, committed and uncommitted alike); nothing existing is touched."""
    found = [e for e in entries(repo, task) if e.oid.startswith(which) or e.ref == which]
    if len(found) != 1:
        raise ValidationError(f"{task}: {'no' if not found else 'more than one'} attic entry "
                              f"matches {which!r}", hint=f"`git liza attic {task}` lists them")
    if into.exists():
        raise ValidationError(f"{into} exists: restore into a new directory",
                              hint="name another with --into")
    try:
        with worktree_mutex(repo):
            checkout_detached(main_repository(repo), into.name, into, Oid(hex=found[0].oid))
    except GitFailure as e:
        raise GitFailure(f"cannot restore {found[0].ref}: {e}") from e
    return found[0]

