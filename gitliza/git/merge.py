"""Merge one reviewed commit into an integration branch without touching any working directory.

The merge result is built in the object database only (fast-forward, or `merge_commits` + a new
merge commit), tested in a throw-away checkout, and published by compare-and-swap of the branch
ref. Only after the ref moved does a worktree that has the branch checked out follow it, and only
if it was clean, so a human's uncommitted edits are never overwritten.
"""
from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Literal

import pygit2
from pygit2 import Oid, Repository, Signature
from pygit2.enums import CheckoutStrategy, FileMode, FileStatus, RepositoryOpenFlag

from gitliza.errors import (ConcurrencyConflict, GitFailure, NotFound, ValidationError,
                            environmental)
from gitliza.git import reflocks
from gitliza.git import treecheck, treepath
from gitliza.core import treerules
from gitliza.git.remotes import direct
from gitliza.git.objects import ownstore
from gitliza.git.objects import packfile
from gitliza.git.objects import packs
from gitliza.git.repository import common_dir
from gitliza.git.checkouts import clean_sync_problems
from gitliza.git.repository import ref_oid
from gitliza.git.worktrees.listing import checkouts_of_branch
from gitliza.git.worktrees.tasktrees import contained_path, require_commit, temporary_checkout

MergeKind = Literal["fast-forward", "merge", "up-to-date"]
# How the integration test runs: (argv, the temporary checkout, timeout) -> (exit code or None on
# timeout, output). The code of the merged tree is the repository's, not gitliza's: the supervisor
# and the command line pass one that runs it in a sandbox of its own (gitliza/sandbox/treerun.py,
# a layer above this one); without one it runs as the caller (`--sandbox off`).
Runner = Callable[[list[str], Path, "float | None"], "tuple[int | None, str]"]
OUTPUT_TAIL_LINES = 20
# Variables that would point git commands in the integration test at the caller's repository
# instead of the temporary checkout it runs in.
_REPO_ENV = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_PREFIX",
)


@dataclass(frozen=True)
class MergeOutcome:
    kind: MergeKind
    old: Oid  # branch tip before
    new: Oid  # branch tip after (== old for "up-to-date")
    integration_tested: bool
    updated_checkouts: tuple[Path, ...]  # worktrees that had the branch checked out and followed it


class MergeConflict(GitFailure):
    """The reviewed commit does not merge cleanly; the branch was not moved."""

    code = "MERGE_CONFLICT"

    def __init__(self, branch: str, commit: Oid, paths: list[str]) -> None:
        super().__init__(
            f"merging {commit} into {branch} conflicts in: {', '.join(paths)}",
            hint=f"{branch} was not changed; rebase the task branch and resubmit",
        )
        self.paths = paths


class IntegrationTestFailed(GitFailure):
    """The integration test failed on the merged tree; the branch was not moved."""

    code = "INTEGRATION_FAILED"

    def __init__(self, script: str, merged: Oid, returncode: int | None, output: str) -> None:
        lines = output.rstrip("\n").splitlines()
        tail = "\n".join(lines[-OUTPUT_TAIL_LINES:])
        status = "timed out" if returncode is None else f"exited {returncode}"
        super().__init__(
            f"integration test {script} {status} on merged commit {merged}: {tail}",
            hint="the integration branch was not changed",
        )
        self.script = script
        self.merged = merged
        self.returncode = returncode
        self.output = output
        self.output_tail = tail


class CheckoutDirty(ValidationError):
    """A worktree with the integration branch checked out has local changes; nothing was changed.

    A ValidationError (a precondition, exit 1) rather than a GitFailure: git worked, the human's
    checkout is simply not in a state that may be moved under them.
    """

    code = "CHECKOUT_DIRTY"

    def __init__(self, branch: str, checkout: Path, problems: list[str]) -> None:
        super().__init__(
            f"{branch} is checked out in {checkout}, which has local changes: {'; '.join(problems[:5])}",
            hint="commit, stash or discard them (or switch that worktree to another branch), then retry",
        )
        self.checkout = checkout
        self.problems = problems


class CheckoutNotUpdated(GitFailure):
    """The branch DID move, but a worktree that has it checked out could not follow."""

    code = "CHECKOUT_NOT_UPDATED"

    def __init__(self, outcome: MergeOutcome, checkout: Path, error: Exception) -> None:
        super().__init__(
            f"merged into {outcome.new}, but the checkout at {checkout} could not be updated: {error}",
            hint=(
                f"inspect `git -C {checkout} status`; if it holds no work of yours, "
                "`git reset --hard` brings it to the new tip"
            ),
        )
        self.outcome = outcome
        self.checkout = checkout


def merge_commit_into(
    repo: Repository,
    branch: str,
    commit: Oid,
    *,
    message: str,
    signature: Signature,
    integration_test: Path | None = None,
    expected_old: Oid | None = None,
    integration_timeout: float | None = None,
    tested_trees: frozenset[Oid] = frozenset(),
    runner: Runner | None = None,
    bounds: tuple[int, int] | None = None,
) -> MergeOutcome:
    """Merge exactly `commit` into `refs/heads/<branch>` and move the branch by compare-and-swap.

    Fast-forward when the tip is an ancestor of `commit`, a merge commit (parents: tip, commit)
    otherwise, nothing when `commit` is already contained ("up-to-date"). Raises MergeConflict,
    IntegrationTestFailed or CheckoutDirty with the branch untouched; ConcurrencyConflict when the
    tip is not `expected_old` or moved meanwhile. CheckoutNotUpdated is the one error raised
    AFTER the branch moved (it carries the outcome): the merge is done, a checkout lags behind.

    `integration_test` is a path relative to the repository root (or absolute below the main
    worktree); it runs only if it exists in the merged tree, inside a temporary detached checkout
    of the merged commit, output captured.

    The merged tree is judged before anything checks it out (TreeRefused, the branch
    untouched): no top-level `.liza` entry, and no more than `bounds` (bytes, files; default
    core/treerules.py's) for the scratch checkout and the worktrees that follow the branch.
    """
    refname = _branch_refname(branch)
    ref = _lookup_branch(repo, refname)
    old = ref_oid(ref)
    if expected_old is not None and old != expected_old:
        raise ConcurrencyConflict(f"{refname} is at {old}, expected {expected_old}")
    theirs = require_commit(repo, commit)
    if old == theirs.id or repo.descendant_of(old, theirs.id):
        return MergeOutcome("up-to-date", old, old, False, ())
    kind, new = _merged_commit(repo, refname, old, theirs, message, signature)
    if kind == "merge" and not _keep(repo, new, old):  # pruned in the instant after its writing:
        kind, new = _merged_commit(repo, refname, old, theirs, message, signature)  # once more
        _keep(repo, new, old)
    bounds = bounds or treerules.checkout_bounds(None, None)
    treecheck.refuse_liza_entry(repo, new, f"the merge into {branch}")
    treecheck.refuse_large(repo, new, bounds, f"the merge into {branch}")
    changed = _changed_paths(repo, old, new)
    checkouts = checkouts_of_branch(repo, refname)
    _require_clean(refname, checkouts, changed)
    # A tree a batch already tested (the same inputs give the same tree) is not tested again.
    tested = require_commit(repo, new).tree_id in tested_trees or \
        _integration_test(repo, new, integration_test, integration_timeout,
                          runner or run_captured, bounds)
    checkouts = checkouts_of_branch(repo, refname)  # again: the test may have run for minutes
    _require_clean(refname, checkouts, changed)
    _compare_and_swap(repo, ref, old, new, f"liza: {kind} {theirs.id}")
    outcome = MergeOutcome(kind, old, new, tested, tuple(checkouts))
    failures = [(c, e) for c in checkouts if (e := _follow(c, new, changed)) is not None]
    if failures:
        raise CheckoutNotUpdated(outcome, *failures[0])
    return outcome


# --------------------------------------------------------------------------- building the merge


def _branch_refname(branch: str) -> str:
    refname = branch if branch.startswith("refs/heads/") else f"refs/heads/{branch}"
    if not pygit2.reference_is_valid_name(refname):
        raise ValidationError(f"{branch!r} is not a valid branch name")
    return refname


def _lookup_branch(repo: Repository, refname: str) -> pygit2.Reference:
    ref = repo.references.get(refname)
    if ref is None:
        raise NotFound(f"branch {refname} does not exist")
    if ref.type != pygit2.enums.ReferenceType.DIRECT:
        # Moving a symbolic ref would retarget the alias, not the branch it names.
        raise ValidationError(f"{refname} is a symbolic reference; merge into the branch it points to")
    return ref


def _merged_commit(
    repo: Repository, refname: str, old: Oid, theirs: pygit2.Commit, message: str, signature: Signature
) -> tuple[MergeKind, Oid]:
    if repo.descendant_of(theirs.id, old):
        return "fast-forward", theirs.id
    index = repo.merge_commits(old, theirs.id)
    if index.conflicts is not None:
        raise MergeConflict(refname, theirs.id, _conflict_paths(index))
    tree = index.write_tree(repo)
    return "merge", repo.create_commit(None, signature, signature, message, tree, [old, theirs.id])


def _keep(repo: Repository, new: Oid, base: Oid) -> bool:
    """Copy merge commit `new`, and the objects its tree adds to `base`'s, into gitliza's
    own store (gitliza/git/objects/ownstore.py) as one pack. libgit2 wrote them as loose objects into
    objects/, unreferenced until the branch moves, which may be minutes away (the integration
    test runs in between): a user's `git prune` would delete them. False when they are already
    gone (the caller makes the merge again)."""
    target = ownstore.target(repo)
    if target is None:  # a quarantine: objects stay where git says
        return True
    objs: dict[bytes, packfile.Obj] = {}
    try:
        commit, parent = repo[new], repo[base]
        assert isinstance(commit, pygit2.Commit) and isinstance(parent, pygit2.Commit)
        direct.tree_objects(repo, commit.tree_id.raw, parent.tree_id.raw, objs, board=False)
        objs[new.raw] = (new.raw, b"commit", repo.odb.read(new)[1])
    except (KeyError, direct.NeedsGit):
        return False
    try:
        packs.add(target, objs.values())
    except OSError as e:
        raise environmental(e) or GitFailure(f"cannot write the merge's objects: {e}") from None
    return True


def _conflict_paths(index: pygit2.Index) -> list[str]:
    paths = {
        entry.path
        for sides in (index.conflicts or ())
        for entry in sides
        if entry is not None
    }
    return sorted(paths)


def _changed_paths(repo: Repository, old: Oid, new: Oid) -> set[str]:
    diff = require_commit(repo, old).tree.diff_to_tree(require_commit(repo, new).tree)
    return {path for delta in diff.deltas for path in (delta.old_file.path, delta.new_file.path)}


# --------------------------------------------------------------------------- integration test


def _integration_test(
    repo: Repository, merged: Oid, script: Path | None, timeout: float | None, runner: Runner,
    bounds: tuple[int, int] | None = None,
) -> bool:
    if script is None:
        return False
    rel = _script_rel_path(repo, script)
    entry = _tree_entry(require_commit(repo, merged).tree, rel)
    if entry is None:
        return False
    with temporary_checkout(repo, merged, bounds) as checkout:
        argv = _script_argv(contained_path(checkout, rel), entry.filemode)
        returncode, output = runner(argv, checkout, timeout)
    if returncode != 0:
        raise IntegrationTestFailed(rel, merged, returncode, output)
    return True


def test_commit(repo: Repository, commit: Oid, script: Path, timeout: float | None,
                runner: Runner | None = None, bounds: tuple[int, int] | None = None) -> bool:
    """Run the integration test on `commit` (a merge built in memory, not on any branch): False
    when the tree has no such script, IntegrationTestFailed when it fails. `runner` is where it
    runs, as for `merge` (the supervisor's sandbox, sandbox/treerun.py)."""
    return _integration_test(repo, commit, script, timeout, runner or run_captured, bounds)


def _script_rel_path(repo: Repository, script: Path) -> str:
    if not script.is_absolute():
        if ".." in script.parts:
            raise ValidationError(f"integration test path {script} contains '..'")
        return script.as_posix()
    main = Repository(str(common_dir(repo)))
    if main.workdir is None:
        raise ValidationError(f"integration test {script} must be relative in a bare repository")
    root = Path(main.workdir).resolve()
    try:
        return script.resolve().relative_to(root).as_posix()
    except ValueError as e:
        raise ValidationError(f"integration test {script} is outside the repository {root}") from e


def _tree_entry(tree: pygit2.Tree, rel: str) -> pygit2.Object | None:
    try:
        entry = treepath.entry(tree, rel)
    except KeyError:
        return None
    return entry if isinstance(entry, pygit2.Blob) else None


def _script_argv(script: Path, filemode: int | None) -> list[str]:
    # Honour the shebang of an executable script; the spec's scripts are bash otherwise.
    if filemode == FileMode.BLOB_EXECUTABLE:
        return [str(script)]
    return ["bash", str(script)]


def run_captured(argv: list[str], cwd: Path, timeout: float | None,
                 env: dict[str, str] | None = None) -> tuple[int | None, str]:
    """Run with stdout+stderr captured (never the caller's terminal); None = timed out."""
    if env is None:
        env = {k: v for k, v in os.environ.items() if k not in _REPO_ENV}
    # Own session so a timeout can kill the whole process group, not just the shell.
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
        returncode: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        returncode = None
    return returncode, out.decode("utf-8", errors="replace")


# --------------------------------------------------------------------------- checked-out branch


def _require_clean(refname: str, checkouts: list[Path], changed: set[str]) -> None:
    for checkout in checkouts:
        problems = clean_sync_problems(checkout, untracked=False) + _untracked_in_the_way(checkout, changed)
        if problems:
            raise CheckoutDirty(refname, checkout, problems)


def _untracked_in_the_way(checkout: Path, changed: set[str]) -> list[str]:
    """Untracked files the update would overwrite (other untracked files are left alone, as git
    does for a fast-forward)."""
    status = Repository(str(checkout), RepositoryOpenFlag.NO_SEARCH).status(untracked_files="all")
    untracked = [p for p, flags in status.items() if flags & FileStatus.WT_NEW]
    return [f"{p}: untracked, would be overwritten" for p in sorted(untracked) if _collides(p, changed)]


def _collides(untracked: str, changed: set[str]) -> bool:
    return any(
        untracked == path or path.startswith(f"{untracked}/") or untracked.startswith(f"{path}/")
        for path in changed
    )


def _follow(checkout: Path, new: Oid, changed: set[str]) -> Exception | None:
    """Bring a clean checkout of the branch to `new`, like `git merge --ff-only` would.

    HEAD already resolves to `new` here, so a SAFE checkout would compare against the wrong
    baseline and keep the old files; instead FORCE exactly the paths that differ between old and
    new, which were verified unmodified just before the ref moved. Literal paths, no globbing.
    """
    if not changed:
        return None
    try:
        target = Repository(str(checkout), RepositoryOpenFlag.NO_SEARCH)
        target.checkout_tree(  # type: ignore[no-untyped-call]  # pygit2 1.21 ships it unannotated
            require_commit(target, new).tree,
            strategy=CheckoutStrategy.FORCE | CheckoutStrategy.DISABLE_PATHSPEC_MATCH,
            paths=sorted(changed),
        )
    except (pygit2.GitError, OSError) as e:
        return e  # every checkout gets its chance before the first failure is reported
    return None


# --------------------------------------------------------------------------- compare and swap


def _compare_and_swap(repo: Repository, ref: pygit2.Reference, old: Oid, new: Oid, reason: str) -> None:
    # Reference.set_target is libgit2's create_matching: it only succeeds if the ref still holds
    # the value read into `ref`, under the ref's lock file.
    try:
        # A held lock is waited out, a stale one named with its fix (reflocks.RefLocked).
        reflocks.retrying(lambda: ref.set_target(new, reason), f"cannot move {ref.name}")
    except (pygit2.GitError, OSError) as e:
        raise _cas_failure(repo, ref.name, old, e) from e


def _cas_failure(repo: Repository, refname: str, old: Oid, error: Exception) -> Exception:
    current = repo.references.get(refname)
    if current is None or ref_oid(current) != old:
        moved_to = ref_oid(current) if current is not None else "nothing (deleted)"
        return ConcurrencyConflict(
            f"{refname} moved from {old} to {moved_to} during the merge",
            hint="re-read the branch and merge again",
        )
    return environmental(error) or GitFailure(f"could not update {refname}: {error}")
