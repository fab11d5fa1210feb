"""Whether the objects the team's refs name are all there, and bringing them back from the remote
(docs/maintenance.md): what `doctor` reports and `repair` restores.

gitliza's own objects live where git's maintenance cannot prune them (gitliza/git/objects/ownstore.py),
but objects git writes itself (an agent's `git commit`, a merge) are git's to lose: a `git prune`
racing a commit, or a board written by an older gitliza beside `git gc --prune=now`. A ref on a
missing object makes every later command fail, so `doctor` looks for one:

- the board: every state commit along refs/liza/state's first parents, its tree, and the whole
  tree of the tip (what every command reads);
- the integration branch and every task branch: the tip commit and its tree.

`restore` then fetches every object of the remote's board and branches again (`git fetch
--refetch`: git would otherwise trust that this clone has what its refs name) and moves a ref
whose objects are still missing to the remote's (the local board's unshared ops on it are gone:
named in the report). The diverged integration branch (a healed partition) is reported here too.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pygit2

from gitliza.errors import GitFailure, LizaError
from gitliza.git.repository import ref_oid, repo_path
from gitliza.git.store import STATE_REF, Store
from gitliza.services.leftovers import Problem
from gitliza.git.gitcmd import error_line, run_git

if TYPE_CHECKING:
    from gitliza.git.remotes.remote import Remote

HEADS = "refs/heads/"
REFETCH_TIMEOUT = 600.0  # seconds: every object of the board and branches, as a clone


def first_missing(repo: pygit2.Repository, ref: str, *, chain: bool) -> str | None:
    """What is missing under `ref` (None: nothing): with `chain`, along its first parents, with the
    tip's whole tree; else the tip commit and its root tree."""
    got = repo.references.get(ref)
    if got is None:
        return None
    try:
        oid: pygit2.Oid | None = ref_oid(got)
    except Exception:
        return None  # a dangling symbolic ref is git's business
    odb = repo.odb
    tip = True
    while oid is not None:
        if not odb.exists(oid):
            return f"commit {str(oid)[:12]} is missing"
        commit = repo[oid]
        if not isinstance(commit, pygit2.Commit):
            return None
        if not odb.exists(commit.tree_id):
            return f"the tree of commit {str(oid)[:12]} is missing"
        if not chain:
            return None
        if tip:
            lost = _tree_missing(odb, commit.tree_id, set())
            if lost is not None:
                return f"{lost} of commit {str(oid)[:12]} is missing"
            tip = False
        oid = commit.parent_ids[0] if commit.parent_ids else None
    return None


def _tree_missing(odb: pygit2.Odb, tree: pygit2.Oid, seen: set[pygit2.Oid]) -> str | None:
    """The first object of tree `tree` that is missing, described (None: it is complete)."""
    try:
        kind, body = odb.read(tree)
    except KeyError:
        return f"tree {str(tree)[:12]}"
    pos = 0
    while pos < len(body):
        nul = body.index(b"\0", pos)
        mode = body[pos:body.index(b" ", pos)]
        oid = pygit2.Oid(raw=body[nul + 1:nul + 21])
        pos = nul + 21
        if mode == b"160000" or oid in seen:  # a submodule's commit is not ours
            continue
        seen.add(oid)
        if mode == b"40000":
            lost = _tree_missing(odb, oid, seen)
            if lost is not None:
                return lost
        elif not odb.exists(oid):
            return f"blob {str(oid)[:12]}"
    return None


def missing_objects(repo: pygit2.Repository, remote: str | None) -> list[Problem]:
    """The board and the branches that name missing objects, with how to recover."""
    how = (f"`git liza repair` restores it from {remote}" if remote else
           "no team remote holds a copy (liza.remote): restore the repository from a backup, or "
           "a clone that has it")
    out = []
    lost = first_missing(repo, STATE_REF, chain=True)
    if lost is not None:
        out.append(Problem("missing-objects", STATE_REF, f"the board: {lost}; {how}", False))
    for name in sorted(n for n in repo.references if n.startswith(HEADS)):
        lost = first_missing(repo, name, chain=False)
        if lost is not None:
            out.append(Problem("missing-objects", name[len(HEADS):], f"{lost}; {how}", False))
    return out


def diverged_integration(repo: pygit2.Repository, branch: str, remote: str | None,
                         tracking: str | None) -> list[Problem]:
    """The local integration branch when it and the remote's (`tracking`, as last fetched) have
    parted: the local one holds work the team's lacks (an offline merge, a dropped op's)."""
    if remote is None or tracking is None:
        return []
    mine_ref, theirs_ref = repo.references.get(HEADS + branch), repo.references.get(tracking)
    if mine_ref is None or theirs_ref is None:
        return []
    try:
        mine, theirs = ref_oid(mine_ref), ref_oid(theirs_ref)
        if mine == theirs or repo.descendant_of(mine, theirs) or repo.descendant_of(theirs,
                                                                                     mine):
            return []
        ahead, _behind = repo.ahead_behind(mine, theirs)
    except (KeyError, ValueError, pygit2.GitError):
        return []  # missing objects: reported as such
    return [Problem("diverged-integration", branch,
                    f"{branch} {str(mine)[:12]} has diverged from {remote}'s {str(theirs)[:12]}: "
                    f"it holds {ahead} commit(s) the team's lacks (a merge made offline, or work "
                    f"a sync dropped); claims start from {remote}'s. `git liza sync` returns it "
                    f"when its ops were dropped; else keep what you need (`git branch keep "
                    f"{branch}`) and `git branch -f {branch} {tracking}`", False)]


@dataclass
class Restored:
    remote: str
    refetched: bool = False
    restored: list[str] = field(default_factory=list)  # refs whose objects came back
    moved: list[str] = field(default_factory=list)  # refs moved to the remote's, one line each
    still: list[Problem] = field(default_factory=list)  # what nothing could bring back

    def to_json(self) -> dict[str, Any]:
        return {"remote": self.remote, "refetched": self.refetched, "restored": self.restored,
                "moved": self.moved, "still": [p.subject for p in self.still]}


def restore(store: Store, remote: Remote) -> Restored:
    """Bring back from `remote` (resolved: git/remotes `resolve`) every object the board and
    the branches name and lack; a ref whose objects the remote lacks too moves to the remote's
    (when it has that ref, complete)."""
    from gitliza.git.remotes import remote as remotes
    repo = store.repo
    path = repo_path(repo)
    rem = remote
    out = Restored(rem.arg)
    before = missing_objects(repo, rem.arg)
    if not before:
        return out
    integ = _integration(store, STATE_REF)
    _refetch(path, rem, integ)
    if integ is None:  # the local board is unreadable: the remote's names the branch
        integ = _integration(store, remotes.tracking_of(rem, STATE_REF))
        if integ is not None:
            _refetch(path, rem, integ)
    out.refetched = True
    after = {(p.subject, p.kind) for p in missing_objects(repo, rem.arg)}
    for p in before:
        if (p.subject, p.kind) not in after:
            out.restored.append(p.subject)
    for p in missing_objects(repo, rem.arg):
        ref = p.subject if p.subject.startswith("refs/") else HEADS + p.subject
        theirs = remotes.tracking_of(rem, ref)
        got = repo.references.get(theirs)
        if got is None or first_missing(repo, theirs, chain=ref == STATE_REF) is not None:
            out.still.append(p)
            continue
        new = ref_oid(got)
        repo.create_reference(ref, new, force=True,
                              message=f"liza repair: objects lost, back to {rem.arg}'s")
        out.moved.append(f"{ref}: its objects are lost here and on {rem.arg}: moved to "
                         f"{rem.arg}'s {str(new)[:12]} (what only this clone had is gone)")
    return out


def _refetch(path: Path, rem: Remote, integration: str | None) -> None:
    """Fetch again every object of the remote's board, task branches and integration branch, as a
    fresh clone would (`--refetch`, git 2.36): a plain fetch trusts that this clone has every
    object its refs name, which is exactly what is wrong here."""
    from gitliza.git.remotes.remote import (BOARD_PREFIX, TASK_BRANCHES, TASKS_NAMESPACE,
                                            check_integration_name, tracking_of)
    refspecs = [f"+{BOARD_PREFIX}*:refs/remotes/{rem.namespace}/liza/*",
                f"+{TASK_BRANCHES}*:refs/remotes/{rem.namespace}/{TASKS_NAMESPACE}/*"]
    if integration is not None:
        check_integration_name(integration)
        refspecs.append(f"+{HEADS}{integration}:{tracking_of(rem, HEADS + integration)}")
    run = run_git(path, ["fetch", "--refetch", "--no-tags", "--no-write-fetch-head", "--refmap=",
                         "--", rem.arg, *refspecs], timeout=REFETCH_TIMEOUT)
    if run.returncode != 0:
        raise GitFailure(f"git fetch --refetch from {rem.arg} failed: {error_line(run.stderr)}",
                         hint="git 2.36 or later is needed to fetch objects again")


def _integration(store: Store, ref: str) -> str | None:
    """The integration branch the board at `ref` names, if that board can be read."""
    try:
        got = store.repo.references.get(ref)
        if got is None:
            return None
        board = store.board_at(store.commit(ref_oid(got)))
        return board.config.integration_branch if board.initialized else None
    except (LizaError, KeyError, ValueError, pygit2.GitError):
        return None
