"""`forge_merge on` (docs/forge.md): the forge merges an approved task (the pull request's merge,
GitHub's PUT .../merge of exactly the approved commit), and the board records the forge's merge
commit through its own `merge` op, once it is checked. The board stays the truth: the forge's
commit is recorded only if it is what the board's own merge would have been,

- a merge commit whose parents are the integration tip the board knows and the approved commit,
  and whose tree is the clean merge of the two (the board's own merge: git/merge.py), or
- (a squash or rebase merge, made on the forge by hand) a single-parent commit on that tip with
  that same tree;

anything else (the forge's base moved on, a merge resolved differently) is exit 4 as
ForgeMergeMismatch: nothing is recorded, the local branch does not move, the bridge logs an
anomaly and the FORGE alarm says the human must look. The integration branch then follows the
forge's commit: locally by a fast-forward (a clean checkout of it follows), on the board's own
remote by the merge's auto-sync (which pushes it with the MERGED record).

A crash between the forge's merge and the record is caught up: the pull request says merged,
with its merge commit, and the next pass checks and records that one instead of merging again."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import pygit2
from pygit2 import Oid

from gitliza.core import forgerules as rules
from gitliza.errors import GitFailure, InconsistentState, LizaError
from gitliza.forge import Forge
from gitliza.git.gitcmd import run_git
from gitliza.git.repository import ref_oid, repo_path

if TYPE_CHECKING:
    from gitliza.core.model import Task
    from gitliza.services.api import Liza

FETCH_TIMEOUT = 120.0


class ForgeMergeMismatch(InconsistentState):
    """The forge's merge commit is not the board's merge of the approved commit: not recorded."""

    code = "FORGE_MERGE_MISMATCH"

    def __init__(self, message: str, commit: str) -> None:
        super().__init__(message, hint="the forge's integration branch holds a merge the board "
                                       "does not accept; the human must look (docs/forge.md)")
        self.commit = commit


class MergeWaits(LizaError):
    """The forge's merge is not asked for yet (the bridge says why, once)."""

    code = "FORGE_MERGE_WAITS"


def merge(liza: Liza, forge: Forge, t: Task, remote: str, say: Callable[[str], None]
          ) -> str | None:
    """Have the forge merge approved task `t` (or find its merge done already) and record it; the
    merge commit recorded, or None when the task moved meanwhile; MergeWaits when the forge's
    branch is not the board's tip yet, or the merge would conflict (the board's conflict check
    sends the task back)."""
    from gitliza.git.tasklocks import task_lock
    from gitliza.services.lifecycle.cleanup import drop_worktree
    from gitliza.services.lifecycle.remote import pull_first
    pull_first(liza, f"the forge's merge of {t.id}", strict=True)
    repo = liza.repo
    with task_lock(repo, t.id):
        board = liza.board()
        now = board.task(t.id)
        if now is None or not rules.merges_by_forge(board, now) or now.forge_pr is None:
            return None  # it moved meanwhile (rejected, merged, the human set forge_merge off)
        t = now
        branch = board.config.integration_branch
        tip = _tip(repo, branch)
        assert t.review_commit is not None and t.forge_pr is not None
        review = Oid(hex=t.review_commit)
        pr = forge.pull(t.forge_pr)
        if pr.merged and pr.merge_commit:  # merged on the forge, not recorded (a crash, a restart)
            got = pr.merge_commit
        elif pr.state != "open":
            return None  # closed unmerged: the human closed it on the forge; the board decides
        else:
            there = _forge_tip(liza, remote, branch)
            if there != str(tip):
                raise MergeWaits(f"{remote}'s {branch} is at {str(there)[:12]}, not at the tip "
                                 f"the board knows ({str(tip)[:12]}): the merge waits for the sync")
            if _expected_tree(repo, tip, review) is None:
                raise MergeWaits(f"{t.id} does not merge cleanly with {branch}: the conflict "
                                 "check sends it back")
            if pr.draft:  # out of draft first: the forge merges no draft
                forge.ready_for_review(pr)
            got = forge.merge_pull(pr.number, t.review_commit)
        _fetch(liza, remote, branch, got)
        merged = Oid(hex=got)
        if tip == merged:  # moved here by a pass whose record failed: from the tip it was
            tip = repo[merged].peel(pygit2.Commit).parent_ids[0]
        check(repo, merged, tip, review, t.id)
        from gitliza.core.ops.review import Merge
        from gitliza.git.drift import drift_commits
        drift = drift_commits(repo, branch, t.base_commit)
        if _tip(repo, branch) != merged:
            _advance(repo, branch, tip, merged)
        liza.apply(lambda _b, when: Merge(actor=liza.agent, time=when, task=t.id,
                                          result="merged", merge_commit=got,
                                          drift_commits=drift))
        notes = list(drop_worktree(liza, t.id))  # as after `git liza merge`
    from gitliza.services.lifecycle.conflicts import send_back_conflicts
    try:  # the integration branch moved: what waits for review or merge is checked against it
        notes += send_back_conflicts(liza)
    except LizaError as e:  # the merge is done and recorded; the next check catches up
        notes.append(f"conflict check after the merge: {e}")
    for line in notes:
        say(line)
    return got


def check(repo: pygit2.Repository, merged: Oid, tip: Oid, review: Oid, task: str) -> None:
    """ForgeMergeMismatch unless `merged` is the board's merge of `review` into `tip` (its
    parents and its tree), or a single-parent commit on `tip` with that tree."""
    commit = repo.get(merged)
    if not isinstance(commit, pygit2.Commit):
        raise ForgeMergeMismatch(f"the forge's merge of {task}, {merged}, is not a commit here",
                                 str(merged))
    want = _expected_tree(repo, tip, review)
    parents = list(commit.parent_ids)
    why = None
    if parents not in ([tip, review], [tip]):
        why = (f"its parents are {', '.join(str(p)[:12] for p in parents) or 'none'}, not the "
               f"integration tip the board knows ({str(tip)[:12]}) and the approved commit "
               f"({str(review)[:12]})")
    elif want is None or commit.tree_id != want:
        why = "its tree is not the clean merge of the integration tip and the approved commit"
    if why is not None:
        raise ForgeMergeMismatch(f"the forge merged {task} as {str(merged)[:12]}, which the board "
                                 f"does not record: {why}", str(merged))


def _expected_tree(repo: pygit2.Repository, tip: Oid, review: Oid) -> Oid | None:
    """The tree of the board's own merge of `review` into `tip` (None: it would conflict)."""
    if tip == review or repo.descendant_of(review, tip):
        return repo[review].peel(pygit2.Commit).tree_id
    index = repo.merge_commits(tip, review)
    if index.conflicts is not None:
        return None
    return index.write_tree(repo)


def _tip(repo: pygit2.Repository, branch: str) -> Oid:
    ref = repo.references.get(f"refs/heads/{branch}")
    if ref is None:
        raise GitFailure(f"no branch {branch} here: the forge's merge needs the integration tip")
    return ref_oid(ref)


def _forge_tip(liza: Liza, remote: str, branch: str) -> str | None:
    got = run_git(repo_path(liza.repo), ["ls-remote", "--heads", remote, f"refs/heads/{branch}"],
                  timeout=FETCH_TIMEOUT)
    if got.returncode != 0:
        raise GitFailure(" ".join(got.stderr.split())[:300] or "git ls-remote failed")
    first = got.stdout.split()
    return first[0] if first else None


def _fetch(liza: Liza, remote: str, branch: str, commit: str) -> None:
    """The forge's merge commit into this clone's objects (the forge's integration branch
    fetched, nothing written but the objects)."""
    if Oid(hex=commit) in liza.repo:
        return
    got = run_git(repo_path(liza.repo), ["fetch", "--quiet", "--no-tags",
                                         "--no-write-fetch-head", remote, f"refs/heads/{branch}"],
                  timeout=FETCH_TIMEOUT)
    if got.returncode != 0:
        raise GitFailure(" ".join(got.stderr.split())[:300] or "git fetch failed")


def _advance(repo: pygit2.Repository, branch: str, tip: Oid, merged: Oid) -> None:
    """The local integration branch from `tip` to the forge's commit, by compare-and-swap (a
    fast-forward: a clean checkout of it follows, as after `git liza merge`)."""
    from gitliza.git.merge import CheckoutNotUpdated, merge_commit_into
    sig = pygit2.Signature("gitliza", "gitliza@liza.invalid")
    try:
        merge_commit_into(repo, branch, merged, message="", signature=sig, expected_old=tip)
    except CheckoutNotUpdated:
        pass  # the branch moved; a checkout lags behind, as after any merge
