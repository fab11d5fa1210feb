"""The task lifecycle on disk and on the board: claim into a worktree, submit, review, merge, and
the recovery of whatever a crash leaves between the two (`doctor`).

The pure core decides every board rule (leases, iterations, review cycles, exhaustion); this module
is the shell around it. It makes the git side (worktrees, branches, the integration branch) agree
with the board, in an order that never leaves a CLAIMED task without its worktree:

    claim  = validate (dry-run the core op) -> create the worktree -> commit CLAIMED by CAS
             (on failure: remove the worktree again)
    merge  = validate -> merge review_commit into the integration branch by CAS -> commit MERGED
             (a crash in between is finished by `doctor --fix`)

Two refs cannot be moved atomically, so each gap is either undone on failure or recognised by
`doctor`. Local mutual exclusion per task (`task_lock`) keeps concurrent commands of this machine
out of each other's gaps: a second claimer of the same task, `doctor`, `merge` and the cleanup
after abandon all wait for (or skip) a task whose claim is in flight.

Library API, usable in-process (the CLI in gitliza/cli/commands/lifecycle.py is a thin layer):

    liza = Liza.open(".", agent="coder-1")
    res = claim(liza)                    # ClaimResult: task, worktree, branch, base_commit, ...
    submit(liza, res.task)               # worktree HEAD becomes review_commit
"""
from __future__ import annotations

import dataclasses
import sys
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import pygit2
from pygit2 import Oid, Repository

from gitliza.services import leftovers
from gitliza.core import clock
from gitliza.core.board import Board
from gitliza.core.ids import check_id
from gitliza.core.invariants import claimable, reviewable
from gitliza.core.model import Task
from gitliza.core.ops import (Claim, ClaimReview, Merge, Op, Release, Submit, Verdict,
                              apply as core_apply)
from gitliza.core.ops.work import worktree_path
from gitliza.core.states import TERMINAL, TaskState
from gitliza.errors import (ConcurrencyConflict, GitFailure, IllegalTransition, InconsistentState,
                            LizaError, NotFound, ValidationError)
from gitliza.git.reflocks import RefLocked, retrying
from gitliza.git.repository import common_dir
from gitliza.git.store import Committed
from gitliza.git.tasklocks import task_lock
from gitliza.git.checkouts import clean_sync_problems, worktree_head
from gitliza.git.repository import ref_oid
from gitliza.git.worktree_list import (TaskWorktreeEntry, held_here, list_task_branches,
                                       list_task_worktrees)
from gitliza.git.worktrees import (WORKTREES_DIR, add_task_worktree, contained_path,
                                   remove_task_worktree, task_branch)
from gitliza.services.leftovers import Problem

if TYPE_CHECKING:
    from gitliza.services.api import Liza
    from gitliza.git.merge import MergeOutcome

S = TaskState
INTEGRATION_TEST = "scripts/integration-test.sh"
# Observers of the two-phase claim's gap: called with the task id after its worktree exists and
# before the CLAIMED commit. Empty in the CLI; a harness (crash-recovery tests, fault injection)
# registers one in its own process to act inside the gap.
AFTER_WORKTREE: list[Callable[[str], None]] = []
MERGE_ATTEMPTS = 3  # the integration branch moved under us (another merge): merge again
NO_SHA = "0" * 40  # placeholder commit for dry-runs whose real commit is not known yet
REASON_MAX = 1000


def warn(text: str) -> None:
    """Warnings that the caller gets no other way (kept worktrees, lagging checkouts)."""
    sys.stderr.write(f"gitliza: warning: {text}\n")


# -- locations ------------------------------------------------------------------------------------
def main_root(repo: Repository) -> Path:
    """The main worktree, even when `repo` was opened inside a task worktree."""
    main = Repository(str(common_dir(repo)))
    if main.is_bare or main.workdir is None:
        raise ValidationError(f"{main.path} is a bare repository: task worktrees need a main "
                              "worktree")
    return Path(main.workdir).resolve()


def task_dir(repo: Repository, task: str) -> Path:
    """`<main>/.worktrees/<task>`, checked to stay inside the repository (ids, `..`, symlinks)."""
    check_id(task, "task id")
    root = main_root(repo)
    path = contained_path(root, worktree_path(task))
    if path != root / WORKTREES_DIR / task:  # a symlink that stays inside is still refused
        raise ValidationError(f"{root / WORKTREES_DIR / task} is a symlink; refusing to use it")
    return path


def integration_tip(repo: Repository, branch: str) -> Oid:
    ref = repo.references.get(f"refs/heads/{branch}")
    if ref is None:
        raise ValidationError(f"integration branch {branch} does not exist",
                              hint=f"create it: `git branch {branch} <start>`")
    return ref_oid(ref)


def ensure_integration_branch(liza: Liza, branch: str) -> str | None:
    """Create `branch` at the current HEAD if it is missing (called after `init`). Returns its
    tip, or None when HEAD has no commit yet (claim will say how to create the branch)."""
    repo: Repository = liza.repo
    ref = repo.references.get(f"refs/heads/{branch}")
    if ref is not None:
        return str(ref_oid(ref))
    if repo.head_is_unborn:
        warn(f"integration branch {branch} not created: HEAD has no commit yet")
        return None
    head = repo.head.peel(pygit2.Commit).id
    with suppress(pygit2.AlreadyExistsError):  # created concurrently: theirs is as good
        repo.references.create(f"refs/heads/{branch}", head, force=False)
    return str(ref_oid(repo.references[f"refs/heads/{branch}"]))


# -- sharing with the team remote (docs/multi-machine.md) ------------------------------------------
def sync_remote(liza: Liza) -> str | None:
    """The remote this command shares with: `git config liza.remote` (or `sync.remote`) when
    auto-sync is on for it (not `--no-sync`); None for a machine that works alone."""
    if not getattr(liza, "sync", True):
        return None
    from gitliza.services.sync import configured_remote
    return configured_remote(liza.repo)


def pull_first(liza: Liza, why: str, *, strict: bool = False, board: bool = True) -> None:
    """Bring the board, the integration branch and the task branches up to date from the team
    remote before a command that reads them (review needs the submitted task and the coder's
    commit, merge builds on the integration tip). `board=False` (claim) leaves the local board
    alone and brings only the branches: the claim branches from the team's integration tip, and
    its op is reconciled by the auto-sync after it is committed, like every op. `strict` (merge):
    a failed pull fails the command; otherwise a warning, and the command works on the local view
    (offline)."""
    remote = sync_remote(liza)
    if remote is None:
        return
    from gitliza.services import sync as engine
    try:
        rep = (engine.sync(liza.store, remote, mode="pull") if board
               else engine.pull_branches(liza.store, remote))
    except (ConcurrencyConflict, GitFailure) as e:
        if not strict:
            warn(f"could not pull from {remote} before {why}: {e}; using the local board")
            return
        cls = ConcurrencyConflict if isinstance(e, ConcurrencyConflict) else GitFailure
        raise cls(f"{why}: could not bring the board and the integration branch up to date from "
                  f"{remote}: {e}", hint="retry; `--no-sync` works on the local view") from e
    for d in rep.dropped:
        warn(d.describe())
    for n in rep.notices:
        warn(n)


def ensure_commit(liza: Liza, oid: str, what: str) -> None:
    """Make sure commit `oid` is in this clone: when it is not (it was made on another machine),
    fetch the team remote's task branches, which carry every submitted review commit."""
    repo: Repository = liza.repo
    if _has_commit(repo, oid):
        return
    remote = sync_remote(liza)
    if remote is not None:
        from gitliza.git import transport
        from gitliza.services.sync import repo_path
        transport.fetch_board(repo_path(repo), remote, task_branches=True)
        if _has_commit(repo, oid):
            return
    where = f"nor on {remote}" if remote else "and no team remote is configured (liza.remote)"
    raise ValidationError(f"{what} {oid[:12]} is not in this clone, {where}",
                          hint="the coder's machine shares it with `git liza sync`")


def _has_commit(repo: Repository, oid: str) -> bool:
    try:
        return isinstance(repo.get(Oid(hex=oid)), pygit2.Commit)
    except ValueError:
        return False


# -- claim ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ClaimResult:
    committed: Committed
    task: str
    status: TaskState  # CLAIMED, or BLOCKED when the claim exhausted the task
    worktree: Path | None  # absolute; None when not claimed
    branch: str | None
    base_commit: str | None
    reused: bool  # the coder's existing worktree was kept (re-claim after REJECTED, ...)
    notices: tuple[str, ...] = ()


class _Replan(Exception):
    """The board changed between the dry-run and the commit so that the claim would now end
    differently (CLAIMED vs BLOCKED): start the claim over instead of committing a surprise."""


def claim(liza: Liza, task: str | None = None) -> ClaimResult:
    """Claim `task`, or the best claimable task for this coder (priority, then age).

    Without `task`, a candidate whose claim fails because the task moved on (IllegalTransition,
    another process holding its lock) is skipped for the next one; errors about the coder itself
    (wrong role, busy on another task) are raised at once. A claim that exhausts a task (BLOCKED)
    is recorded, and the next candidate is tried.

    With a team remote, the integration branch is brought up to date first: a claim branches from
    the integration tip the team sees, not from a stale local one. The board is pulled too when
    the local one refuses the claim (the task may have come back from review on another machine);
    a claim the local board allows is committed and reconciled by auto-sync, like every op.
    """
    pull_first(liza, "claim", board=False)
    try:
        return _claim(liza, task)
    except ValidationError as e:  # illegal transition, busy coder, no candidate...
        if sync_remote(liza) is None or e.code == "OP_DROPPED":
            raise  # no remote to ask, or the remote's board is what refused it
        pull_first(liza, "claim", board=True)
        return _claim(liza, task)


def _claim(liza: Liza, task: str | None) -> ClaimResult:
    if task is not None:
        with task_lock(liza.repo, task) as _:
            return _claim_locked(liza, task)
    notices: list[str] = []
    tried: set[str] = set()
    last: LizaError | None = None
    while True:
        board, now = liza.board(), liza.now()
        candidates = [t.id for t in _claim_candidates(board, now, liza.agent) if t.id not in tried]
        if not candidates:
            if last is not None:
                raise last
            raise NotFound(f"no claimable task for {liza.agent}",
                           hint="`git liza ready` lists claimable tasks")
        result = _claim_first_free(liza, candidates, tried)
        if isinstance(result, LizaError):
            last = result
            continue
        if result is None:
            continue
        notices += result.notices
        if result.status == S.CLAIMED:
            return dataclasses.replace(result, notices=tuple(notices))
        tried.add(result.task)


def _claim_candidates(board: Board, now: str, coder: str) -> list[Task]:
    """Claimable tasks for `coder`, best first; its own task back from review comes first."""
    found = claimable(board, now, coder)
    me = board.agent(coder)
    mine = [t for t in found if me is not None and t.id == me.current_task]
    return mine + [t for t in found if t not in mine]


def _claim_first_free(liza: Liza, candidates: list[str], tried: set[str]
                      ) -> ClaimResult | LizaError | None:
    """Claim the first candidate whose lock is free, so that concurrent claimers spread over the
    tasks instead of queueing on the same best one; when every lock is held, wait for the best."""
    for tid in candidates:
        with task_lock(liza.repo, tid, timeout=0) as got:
            if got:
                return _claim_or_skip(liza, tid, tried)
    with task_lock(liza.repo, candidates[0]):
        return _claim_or_skip(liza, candidates[0], tried)


def _claim_or_skip(liza: Liza, tid: str, tried: set[str]) -> ClaimResult | LizaError:
    try:
        return _claim_locked(liza, tid)
    except (IllegalTransition, NotFound) as e:  # the task moved on: the caller tries the next
        tried.add(tid)
        return e
    except RefLocked as e:  # its branch's lock is held (a crashed git): the next task, and why
        warn(f"skipped {tid}: {e}")
        tried.add(tid)
        return e


def _claim_locked(liza: Liza, task: str) -> ClaimResult:
    for _ in range(3):
        try:
            return _claim_attempt(liza, task)
        except _Replan:
            continue
    raise ConcurrencyConflict(f"{task} kept changing during the claim; nothing was changed",
                              hint="retry")


def _claim_attempt(liza: Liza, task: str) -> ClaimResult:
    repo: Repository = liza.repo
    board, now = liza.board(), liza.now()
    rel = worktree_path(task)
    t = board.task(task)
    # The same coder keeps its checkout; so does anyone taking over an INTEGRATION_FAILED task
    # (liza-claim-task.sh preserves that worktree: the failed work is what the fix starts from).
    reuse = (t is not None and t.base_commit is not None
             and (t.status == S.INTEGRATION_FAILED
                  or (t.assigned_to == liza.agent
                      and t.status in (S.REJECTED, S.INTEGRATION_FAILED, S.CLAIMED))))
    if reuse:
        assert t is not None and t.base_commit is not None
        base = t.base_commit
    else:
        base = str(integration_tip(repo, board.config.integration_branch))
    # Phase 1: the core decides on the current board, nothing is touched if it refuses.
    probe = Claim(actor=liza.agent, time=now, task=task, worktree=rel, base_commit=base)
    claims = _claim_outcome(board, probe, task)

    def make_op(fresh: Board, at: str) -> Op:
        op: Op = Claim(actor=liza.agent, time=at, task=task, worktree=rel, base_commit=base)
        if _claim_outcome(fresh, op, task) != claims:
            raise _Replan()
        return op

    if not claims:  # exhaustion: record BLOCKED, no worktree is made
        done = liza.apply(make_op)
        return ClaimResult(done, task, S.BLOCKED, None, None, None, False,
                           done.outcome.notices)
    # Phase 2: the worktree. Phase 3: CLAIMED by CAS, make_op re-validating on every retry.
    path, created = _prepare_worktree(repo, task, Oid(hex=base), reuse)
    for observe in AFTER_WORKTREE:
        observe(task)
    try:
        done = liza.apply(make_op)
    except BaseException:
        if created:  # never remove a worktree this claim did not make (the coder's own work)
            with suppress(LizaError):
                remove_task_worktree(repo, task)
        raise
    return ClaimResult(done, task, S.CLAIMED, path, task_branch(task), base, not created,
                       done.outcome.notices)


ATTIC = "refs/liza-attic"


def _keep_leftovers(repo: Repository, task: str, path: Path, base: Oid) -> None:
    """Nothing is lost when a claim starts afresh over an earlier coder's leftovers (a takeover
    after a crash, a task unblocked with its dirty worktree kept): commits of `liza/<task>` that
    the new base lacks, and uncommitted changes (snapshotted as a commit on top of the leftover
    HEAD, untracked files included), are kept under refs/liza-attic/<task>/<oid> before the
    worktree and branch are replaced. The attic is outside refs/liza/, which sync and the server
    hook own; `git log refs/liza-attic/<task>/<oid>` shows what was kept."""
    keep: list[Oid] = []
    if path.is_dir() and not (path / ".git").exists() and any(path.iterdir()):
        # Not a worktree gitliza made: someone's files. Refuse rather than delete them.
        raise ValidationError(f"{worktree_path(task)} holds files that are not a gitliza "
                              "worktree; a fresh claim would delete them",
                              hint=f"move them out of {path}, then claim again")
    if path.is_dir() and (path / ".git").exists() and not leftovers.cut_short(path) \
            and clean_sync_problems(path):
        wt = pygit2.Repository(str(path))
        index = wt.index
        index.add_all()  # respects .gitignore: ignored files are not work
        tree = index.write_tree()
        parents = [] if wt.head_is_unborn else [wt.head.target]
        sig = pygit2.Signature("gitliza", "gitliza@liza.invalid")
        keep.append(wt.create_commit(None, sig, sig, f"gitliza: uncommitted work left in "
                                     f"{worktree_path(task)}, kept before a fresh claim",
                                     tree, parents))
    keep += _unmerged_branch_tip(repo, task, base)
    for oid in keep:
        _to_attic(repo, task, oid)


def _unmerged_branch_tip(repo: Repository, task: str, contained_in: Oid | None) -> list[Oid]:
    """The tip of `liza/<task>` if it has commits that `contained_in` lacks, else nothing."""
    branch = repo.references.get(f"refs/heads/{task_branch(task)}")
    if branch is None:
        return []
    tip = ref_oid(branch)
    if contained_in is not None and (tip == contained_in or repo.descendant_of(contained_in, tip)):
        return []
    return [tip]


def _to_attic(repo: Repository, task: str, oid: Oid) -> None:
    name = f"{ATTIC}/{task}/{oid}"
    if repo.references.get(name) is None:
        retrying(lambda: repo.references.create(name, oid), f"cannot keep {name}")


def _claim_outcome(board: Board, op: Op, task: str) -> bool:
    """True if `op` claims the task, False if it moves it to BLOCKED; raises if it is refused."""
    out = core_apply(board, op)
    t = out.board.task(task)
    return t is not None and t.status == S.CLAIMED


def _prepare_worktree(repo: Repository, task: str, base: Oid, reuse: bool) -> tuple[Path, bool]:
    """The worktree for a claim, and whether this claim created it from scratch.

    Re-claim by the same coder keeps its checkout (and its commits on `liza/<task>`); when the
    directory is gone it is recreated at the branch tip, or at base if the branch is gone too.
    Any other claim starts fresh from the integration tip: leftovers belong to nobody (the board
    says so, and the task lock keeps concurrent claimers of this task out) or to a coder whose
    lease was taken over.
    """
    path = task_dir(repo, task)
    if not reuse:
        _keep_leftovers(repo, task, path, base)
        return add_task_worktree(repo, task, base, fresh=True).path, True
    branch = repo.references.get(f"refs/heads/{task_branch(task)}")
    if path.is_dir() and branch is not None and _on_branch(path, task):
        return path, False
    start = ref_oid(branch) if branch is not None else base
    add_task_worktree(repo, task, start)
    return path, False


def _on_branch(path: Path, task: str) -> bool:
    try:
        head = Repository(str(path), pygit2.enums.RepositoryOpenFlag.NO_SEARCH).head
    except (pygit2.GitError, KeyError):
        return False
    return bool(head.name == f"refs/heads/{task_branch(task)}")


# -- release, submit, review ----------------------------------------------------------------------
@dataclass(frozen=True)
class Done:
    """A committed transition plus what the shell did or could not do on disk."""

    committed: Committed
    worktree: Path | None = None
    notices: tuple[str, ...] = field(default=())


def release(liza: Liza, task: str) -> Done:
    """Give a claimed task back: UNCLAIMED, then its worktree and branch go (work is discarded;
    a dirty worktree is kept with a warning)."""
    with task_lock(liza.repo, task):
        done = liza.do(Release, task=task)
        notes = _drop_worktree(liza, task)
    return Done(done, None, done.outcome.notices + notes)


def _dry_run(liza: Liza, op: Op, board: Board | None = None) -> Board:
    """Run the core on the current board first, so that a stood-down agent hears "stand down"
    (LeaseLost) rather than an error about a worktree that now belongs to someone else."""
    b = liza.board() if board is None else board
    core_apply(b, op)
    return b


def _require_task(board: Board, task: str) -> Task:
    t = board.task(task)
    if t is None:
        raise NotFound(f"no task {task!r}", hint="`git liza status` lists the tasks")
    return t


def _existing_task_dir(repo: Repository, t: Task) -> Path:
    path = task_dir(repo, t.id)
    if not (path / ".git").exists():
        raise ValidationError(f"{t.id}'s worktree {path} is missing",
                              hint="`git liza doctor --fix` recreates it from the task branch")
    return path


def resolve_commit(repo: Repository, rev: str) -> str:
    try:
        return str(repo.revparse_single(rev).peel(pygit2.Commit).id)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        raise ValidationError(f"{rev!r} is not a commit in this repository") from None


def submit(liza: Liza, task: str, commit: str | None = None) -> Done:
    """Clean-sync check of the task worktree, then READY_FOR_REVIEW with review_commit = its HEAD
    (`commit`, if given, must name that same commit). Nothing changes when the check fails."""
    repo: Repository = liza.repo
    board = _dry_run(liza, Submit(actor=liza.agent, time=liza.now(), task=task, commit=NO_SHA))
    t = _require_task(board, task)
    path = _existing_task_dir(repo, t)
    problems = clean_sync_problems(path)
    if problems:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more"
                                            if len(problems) > 5 else "")
        raise ValidationError(f"{task}: worktree {path} is not clean (Clean Sync Invariant): "
                              f"{shown}", hint="commit, or remove, every change, then submit")
    head = str(worktree_head(path))
    if commit is not None and resolve_commit(repo, commit) != head:
        raise ValidationError(f"--commit {commit} is not the worktree HEAD {head[:12]}",
                              hint="submit what is checked out in the task worktree")
    if t.base_commit is not None:
        if head == t.base_commit:
            raise ValidationError(f"{task}: nothing committed since base {head[:12]}",
                                  hint="commit your work in the task worktree first")
        if not repo.descendant_of(Oid(hex=head), Oid(hex=t.base_commit)):
            raise ValidationError(f"{task}: HEAD {head[:12]} does not descend from base_commit "
                                  f"{t.base_commit[:12]}",
                                  hint="rebase or merge onto the base instead of replacing it")
    done = liza.do(Submit, task=task, commit=head)
    return Done(done, path, done.outcome.notices)


def claim_review(liza: Liza, task: str | None = None) -> Done:
    """Take a review lease on `task`, or on the oldest waiting review this reviewer may take, and
    make sure `.worktrees/<task>` has review_commit checked out.

    On the coder's machine that is the coder's worktree, used as it is. On another machine (a
    team remote), the board and the task branches are pulled first, the review commit must be
    here before the lease is taken, and the worktree is created at review_commit on branch
    `liza/<task>` (or moved there from an earlier review round when it is clean and review_commit
    descends from it)."""
    me = liza.agent
    pull_first(liza, "claim-review")

    def pick(board: Board, now: str) -> str:
        if task is not None:
            return task
        found = [t for t in reviewable(board, now, me) if me not in t.failed_by]
        if not found:
            raise NotFound(f"nothing to review for {me}")
        return found[0].id

    def make_op(board: Board, now: str) -> Op:
        op: Op = ClaimReview(actor=me, time=now, task=pick(board, now))
        return op

    # The commit must be here before the lease is taken: a reviewer who cannot see the work must
    # not hold the review. (The task is predicted on the current board; make_op picks again.)
    board = liza.board()
    with suppress(NotFound):
        predicted = board.task(pick(board, liza.now()))
        if predicted is not None and predicted.review_commit and \
                predicted.status == S.READY_FOR_REVIEW:
            ensure_commit(liza, predicted.review_commit, f"{predicted.id}'s review_commit")
    done = liza.apply(make_op)
    tid = done.outcome.event.task
    if not tid:
        return Done(done, None, done.outcome.notices)
    t = done.outcome.board.task(tid)
    notes: tuple[str, ...] = ()
    if t is not None and t.review_commit:
        ensure_commit(liza, t.review_commit, f"{tid}'s review_commit")
        with task_lock(liza.repo, tid):
            notes = _review_checkout(liza.repo, tid, Oid(hex=t.review_commit))
    return Done(done, task_dir(liza.repo, tid), done.outcome.notices + notes)


def _review_checkout(repo: Repository, task: str, review: Oid) -> tuple[str, ...]:
    """`.worktrees/<task>` at `review` for the reviewer. An existing checkout at review_commit
    (the coder's, on the same machine) is used as it is; one that is clean and behind review_commit
    (this reviewer's, from an earlier round) is moved to it; anything else is kept untouched, and
    verdict will say that HEAD is not review_commit. Never loses work: a local branch liza/<task>
    with commits review_commit lacks is kept in the attic before the worktree is made."""
    path = task_dir(repo, task)
    if (path / ".git").exists():
        head = worktree_head(path)
        if head == review:
            return ()
        dirty = clean_sync_problems(path)
        if dirty or not repo.descendant_of(review, head):
            why = f"it has local changes ({'; '.join(dirty[:3])})" if dirty else \
                f"its HEAD {str(head)[:12]} is not an ancestor of review_commit"
            msg = f"kept {path} as it is: {why}; review exactly {review} there"
            warn(msg)
            return (msg,)
    _keep_leftovers(repo, task, path, review)
    add_task_worktree(repo, task, review, fresh=True)
    return ()


def verdict(liza: Liza, task: str, decision: str, reason: str | None = None,
            commit: str | None = None) -> Done:
    """Approve or reject. The reviewed commit (default: the worktree HEAD) must be review_commit
    (the core checks), and so must the worktree HEAD: a HEAD that moved after submit means the
    reviewer looked at something else than what would be merged."""
    repo: Repository = liza.repo
    board = liza.board()
    t = _require_task(board, task)
    reviewed = resolve_commit(repo, commit) if commit is not None else None
    _dry_run(liza, Verdict(actor=liza.agent, time=liza.now(), task=task, verdict=decision,
                           commit=reviewed or t.review_commit or NO_SHA, reason=reason), board)
    path = _existing_task_dir(repo, t)
    head = str(worktree_head(path))
    if head != t.review_commit:
        raise ValidationError(f"{task}: worktree HEAD {head[:12]} is not the submitted "
                              f"review_commit {str(t.review_commit)[:12]}",
                              hint=f"review exactly {t.review_commit}: `git -C {path} checkout "
                                   f"{t.review_commit}`, or have the coder resubmit")
    done = liza.do(Verdict, task=task, verdict=decision, commit=reviewed or head, reason=reason)
    return Done(done, path, done.outcome.notices)


# -- merge ----------------------------------------------------------------------------------------
class MergeFailed(GitFailure):
    """Conflict or failing integration test: INTEGRATION_FAILED was recorded, branch untouched."""

    code = "INTEGRATION_FAILED"

    def __init__(self, message: str, committed: Committed, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.committed = committed


@dataclass(frozen=True)
class MergeResult:
    committed: Committed
    merge: MergeOutcome
    branch: str
    notices: tuple[str, ...] = ()


class _MergeLost(Exception):
    """Another machine merged into the integration branch first; our merge was undone locally."""


def merge(liza: Liza, task: str, *, integration_timeout: float | None = None) -> MergeResult:
    """Merge exactly the approved review_commit into the integration branch, then record MERGED
    and remove the task's worktree and branch. A conflict or a failing integration test records
    INTEGRATION_FAILED and raises MergeFailed (exit 3), the integration branch untouched.

    With a team remote: the board and the integration branch are pulled first (a failed pull
    fails the merge: merging on a stale tip would fork the branch), review_commit is fetched if
    this machine lacks it, and auto-sync pushes MERGED and the integration branch in one atomic
    push. If another machine's merge reached the remote in between, this merge is undone locally
    (never shared) and done again on the new tip."""
    notes: list[str] = []
    for attempt in range(1, MERGE_ATTEMPTS + 1):
        pull_first(liza, f"merge {task}", strict=True)
        try:
            res = _merge_once(liza, task, integration_timeout)
        except _MergeLost as e:
            if attempt == MERGE_ATTEMPTS:
                raise ConcurrencyConflict(f"merge {task}: the integration branch kept moving on "
                                          f"the remote ({e}); nothing was shared",
                                          hint="retry `git liza merge`") from None
            notes.append(f"merged again: {e}")
            continue
        return dataclasses.replace(res, notices=res.notices + tuple(notes))
    raise AssertionError("unreachable")


def _merge_once(liza: Liza, task: str, integration_timeout: float | None) -> MergeResult:
    from gitliza.git.drift import drift_commits
    from gitliza.git.merge import (CheckoutNotUpdated, IntegrationTestFailed, MergeConflict,
                                   merge_commit_into)
    from gitliza.services.sync import IntegrationDiverged
    repo: Repository = liza.repo
    with task_lock(repo, task):
        board = liza.board()
        t = _require_task(board, task)
        _dry_run(liza, Merge(actor=liza.agent, time=liza.now(), task=task, result="merged",
                             merge_commit=t.review_commit or NO_SHA), board)
        assert t.review_commit is not None  # APPROVED implies it (the core checked the state)
        ensure_commit(liza, t.review_commit, f"{task}'s review_commit")
        branch = board.config.integration_branch
        review = Oid(hex=t.review_commit)
        drift = drift_commits(repo, branch, t.base_commit)
        notes: list[str] = []
        for attempt in range(1, MERGE_ATTEMPTS + 1):
            try:
                outcome = merge_commit_into(
                    repo, branch, review, message=_merge_message(t, branch),
                    signature=_signature(liza.agent, liza.now()),
                    integration_test=Path(INTEGRATION_TEST),
                    integration_timeout=integration_timeout)
            except ConcurrencyConflict:
                if attempt == MERGE_ATTEMPTS:
                    raise
                continue
            except (MergeConflict, IntegrationTestFailed) as e:
                reason = _one_line(str(e))
                if isinstance(e, IntegrationTestFailed):
                    from gitliza.services import testlog
                    kept = testlog.keep(repo, task, liza.now(), e.output)
                    if kept is not None:  # the whole output, as wt-merge.sh keeps it
                        reason = _one_line(f"{str(e)[:REASON_MAX - 80]} (full output: {kept})")
                failed = liza.apply(lambda _b, now: Merge(actor=liza.agent, time=now, task=task,
                                                         result="failed", reason=reason))
                raise MergeFailed(f"merge {task} failed: {reason}", failed,
                                  hint=f"{branch} was not changed; {task} is INTEGRATION_FAILED "
                                       "and can be claimed again") from e
            except CheckoutNotUpdated as e:  # the branch moved: the merge itself is done
                outcome = e.outcome
                notes.append(str(e))
            break
        merged = outcome.new
        if outcome.kind == "up-to-date":  # merged before (a crash before the board write)
            merged = _first_parent_introducing(repo, outcome.new, review)
        op = Merge(actor=liza.agent, time=liza.now(), task=task, result="merged",
                   merge_commit=str(merged), drift_commits=drift)
        try:
            done = liza.apply(lambda _b, now: dataclasses.replace(op, time=now))
        except IntegrationDiverged as e:
            # Auto-sync found another machine's merge on the remote's integration branch: ours
            # was never shared. Take it back (board op and branch, each by CAS) and merge again.
            if not _undo_merge(liza, branch, outcome, task, str(merged)):
                raise
            raise _MergeLost(str(e)) from None
        except IllegalTransition as e:
            if getattr(e, "code", "") == "OP_DROPPED":
                # Auto-sync dropped the MERGED record (the task moved on remotely): the local
                # merge commit must not stay on the integration branch, nothing records it.
                _undo_branch(repo, branch, outcome)
                raise
            raise _unrecorded(branch, task, outcome, e) from e
        except LizaError as e:
            raise _unrecorded(branch, task, outcome, e) from e
        notes += _drop_worktree(liza, task)
    return MergeResult(done, outcome, branch, done.outcome.notices + tuple(notes))


def _unrecorded(branch: str, task: str, outcome: MergeOutcome, e: LizaError) -> InconsistentState:
    # Two refs cannot move together: the branch has the work, the board says APPROVED.
    return InconsistentState(
        f"{branch} now contains {task}'s review commit (at {outcome.new}) but MERGED "
        f"could not be recorded: {e}",
        hint="`git liza doctor --fix` records it; do not merge again by hand")


def _undo_merge(liza: Liza, branch: str, outcome: MergeOutcome, task: str, merged: str) -> bool:
    """Take back a merge that was never shared: the local board's tip must be exactly this MERGED
    op (recorded here, or replayed onto the remote's board by the sync that refused to push it),
    and the integration branch must still be at the merge result. Both move back by CAS."""
    from gitliza.core import record
    store = liza.store
    tip = store.tip()
    if tip is None:
        return False
    commit = liza.repo[tip]
    try:
        op = record.parse(commit.message).op
    except LizaError:
        return False
    if not (isinstance(op, Merge) and op.task == task and op.merge_commit == merged
            and op.actor == liza.agent and commit.parent_ids):
        return False
    from gitliza.services.sync import retract_tip
    if not retract_tip(store, tip, f"liza merge: undo unshared merge of {task}"):
        return False
    return _undo_branch(liza.repo, branch, outcome)


def _undo_branch(repo: Repository, branch: str, outcome: MergeOutcome) -> bool:
    """Move the integration branch back from our merge result to where it was, by CAS; not when
    a worktree has it checked out (its files followed the merge) -- then it stays, and the next
    sync reports the divergence."""
    from gitliza.git.worktree_list import checkouts_of_branch
    ref = repo.references.get(f"refs/heads/{branch}")
    if outcome.kind == "up-to-date" or ref is None or ref_oid(ref) != outcome.new:
        return outcome.kind == "up-to-date"
    if checkouts_of_branch(repo, f"refs/heads/{branch}"):
        warn(f"{branch} keeps the unshared merge {str(outcome.new)[:12]}: it is checked out; "
             f"reset it to {str(outcome.old)[:12]} by hand")
        return False
    try:
        ref.set_target(outcome.old, "liza merge: undo unshared merge")
    except (pygit2.GitError, OSError):
        return False
    return True


def _merge_message(t: Task, branch: str) -> str:
    return (f"Merge {t.id} into {branch}\n\n{_one_line(t.description)[:200]}\n\n"
            f"Liza-Task: {t.id}\nLiza-Review-Commit: {t.review_commit}\n"
            f"Liza-Approved-By: {t.approved_by}\n")


def _signature(actor: str, now: str) -> pygit2.Signature:
    return pygit2.Signature(actor, f"{actor}@liza.invalid", clock.to_epoch(now), 0)


def _one_line(text: str) -> str:
    one = " ".join(text.split())
    return one if len(one) <= REASON_MAX else one[: REASON_MAX - 3] + "..."


# -- cleanup --------------------------------------------------------------------------------------
def _holds_worktree(t: Task | None) -> bool:
    """Whether the board says this task's worktree must exist (it names one and is live)."""
    return t is not None and t.worktree is not None and t.status not in TERMINAL


def _drop_worktree(liza: Liza, task: str) -> tuple[str, ...]:
    """Remove the task's worktree and branch unless the board (re-read: the caller holds the task
    lock) still holds them, or the checkout is dirty (kept, with a warning)."""
    repo: Repository = liza.repo
    if _holds_worktree(liza.board().task(task)) or not _has_git_side(repo, task):
        return ()
    path = task_dir(repo, task)
    if (path / ".git").exists():
        try:
            problems = clean_sync_problems(path)
        except LizaError as e:
            problems = [str(e)]
        if problems:
            msg = (f"kept {path}: it has uncommitted changes ({'; '.join(problems[:3])}); "
                   f"remove it with `git worktree remove --force {path}` and `git branch -D "
                   f"{task_branch(task)}` once you have saved what you need")
            warn(msg)
            return (msg,)
    # release, abandon, rescope, unblock and merge let the branch go; commits on it that the
    # integration branch does not contain (work given back, follow-ups made after the review)
    # are kept in the attic rather than left dangling for gc.
    try:
        merged_into: Oid | None = integration_tip(repo, liza.board().config.integration_branch)
    except LizaError:
        merged_into = None
    notes: tuple[str, ...] = ()
    for oid in _unmerged_branch_tip(repo, task, merged_into):
        _to_attic(repo, task, oid)
        notes = (f"kept the unmerged commits of {task_branch(task)} as {ATTIC}/{task}/{oid}",)
    try:
        remove_task_worktree(repo, task)
    except LizaError as e:
        # The transition is recorded: what is left on disk is doctor's to finish, not an error.
        notes += (f"{task}'s worktree or branch is left behind ({e.message}); "
                  "`git liza doctor --fix` removes it",)
    return notes


def _has_git_side(repo: Repository, task: str) -> bool:
    """Whether anything of the task exists in git (cheap; a bare repository has no worktrees)."""
    return held_here(repo, task)


def cleanup_after(liza: Liza, committed: Committed) -> list[str]:
    """After abandon/rescope/unblock (board.py calls this): a task the board no longer gives a
    worktree loses it and its branch, unless the checkout is dirty (kept, warned)."""
    tid = committed.outcome.event.task
    if tid is None or not _has_git_side(liza.repo, tid):
        return []
    with task_lock(liza.repo, tid):
        return list(_drop_worktree(liza, tid))


# -- doctor ---------------------------------------------------------------------------------------
@dataclass
class DoctorReport:
    problems: list[Problem]
    busy: list[str]  # tasks skipped because a claim/merge holds their lock right now
    # Live tasks held on another machine (git/worktree_list.py `held_here`): not judged, said so.
    elsewhere: list[str] = field(default_factory=list)

    @property
    def remaining(self) -> list[Problem]:
        return [p for p in self.problems if not p.fixed]


def doctor(liza: Liza, fix: bool = False) -> DoctorReport:
    """Compare the board with the disk; with `fix`, repair what is safe:
    - stale ref lock files (a crashed git) and the files a crashed pack writer left are removed
      (gitliza/services/leftovers.py);
    - worktrees and `liza/*` branches the board does not explain are removed when they hold no
      work (clean, and the branch tip is already in the integration branch);
    - a worktree the board needs but that is missing is recreated from the task branch;
    - an APPROVED task whose review_commit is already in the integration branch (a merge whose
      board write failed) is recorded MERGED.
    Every task is examined under its lock with a fresh board, so a claim in flight is never
    mistaken for a leftover."""
    repo: Repository = liza.repo
    report = DoctorReport([], [])
    report.problems += leftovers.stale_locks(liza, fix) + leftovers.pack_leftovers(liza, fix)
    board = liza.board()
    # Listed once (listing reads every admin entry); each task is then judged under its lock
    # against a fresh board, which is what matters: a claim that finished since the listing has
    # committed CLAIMED, and paths are re-checked on disk.
    entries: dict[str, list[TaskWorktreeEntry]] = {}
    for e in list_task_worktrees(repo):
        entries.setdefault(e.task_id, []).append(e)
    branches = list_task_branches(repo)
    ids = set(entries) | set(branches)
    ids |= {t.id for t in board.tasks() if _holds_worktree(t) or t.status == S.APPROVED}
    for tid in sorted(ids):
        if not _lockable_id(tid):
            report.problems.append(Problem("stray-worktree", tid, "not a valid task id: remove "
                                           "it by hand", False))
            continue
        with task_lock(repo, tid, timeout=0) as got:
            if not got:
                report.busy.append(tid)
                continue
            report.problems += _examine(liza, tid, fix, entries.get(tid, []),
                                        branches.get(tid), report.elsewhere)
    return report


def _lockable_id(tid: str) -> bool:
    try:
        check_id(tid, "task id")
    except ValidationError:
        return False
    return True


def _examine(liza: Liza, tid: str, fix: bool, entries: list[TaskWorktreeEntry],
             branch_tip: Oid | None, elsewhere: list[str] | None = None) -> list[Problem]:
    repo: Repository = liza.repo
    board = liza.board()  # fresh, under the task lock
    t = board.task(tid)
    branch = board.config.integration_branch
    tip = repo.references.get(f"refs/heads/{branch}")
    integ = ref_oid(tip) if tip is not None else None
    path = task_dir(repo, tid)
    out: list[Problem] = []
    if t is not None and t.status == S.APPROVED and t.review_commit and integ is not None \
            and _contains(repo, integ, Oid(hex=t.review_commit)):
        p = Problem("approved-merged", tid, f"{branch} already contains review_commit "
                    f"{t.review_commit[:12]} but the board says APPROVED", True)
        out.append(p)
        if fix:
            _attempt(p, lambda: _record_merged(liza, tid, integ, Oid(hex=t.review_commit or "")))
        return out
    if _holds_worktree(t):
        assert t is not None
        if not entries and branch_tip is None and not held_here(repo, tid):
            # Claimed on another machine: its worktree is there (the branch, the admin entry and
            # the directory are all missing here, which a claim made here never leaves).
            (elsewhere if elsewhere is not None else []).append(f"{tid}: {t.status} by {t.assigned_to or t.reviewing_by}, "
                                    "held on another machine (no branch or worktree of it in "
                                    "this clone); its worktree is not judged here")
            return out
        if not (path / ".git").exists():
            p = Problem("missing-worktree", tid, f"{t.status} task's worktree {path} is missing",
                        True)
            out.append(p)
            if fix:
                start = branch_tip or Oid(hex=t.review_commit or t.base_commit or str(integ))
                _attempt(p, lambda: add_task_worktree(repo, tid, start))
        return out
    if entries:
        what = "a directory git does not know" if not entries[0].registered else (
            "admin data whose directory is gone" if entries[0].prunable else "a worktree")
        safe, why = _disposable(repo, path, branch_tip, integ, tid if t else "")
        p = Problem("stray-worktree", tid, f"{path}: {what} that no task holds ({why})", safe)
        out.append(p)
        if fix and safe:
            _attempt(p, lambda: _keep_and_remove(repo, tid, branch_tip, integ))
    elif branch_tip is not None:
        safe, why = _disposable(repo, None, branch_tip, integ, tid if t else "")
        p = Problem("stray-branch", tid, f"branch {task_branch(tid)} that no task holds ({why})",
                    safe)
        out.append(p)
        if fix and safe:
            _attempt(p, lambda: _keep_and_remove(repo, tid, branch_tip, integ))
    return out


def _keep_and_remove(repo: Repository, tid: str, branch_tip: Oid | None,
                     integ: Oid | None) -> None:
    """Remove a leftover `_disposable` allowed, its commits outside integration in the attic."""
    if branch_tip is not None and (integ is None or not _contains(repo, integ, branch_tip)):
        _to_attic(repo, tid, branch_tip)
    remove_task_worktree(repo, tid)


def _attempt(p: Problem, action: Callable[[], object]) -> None:
    try:
        action()
        p.fixed = True
    except LizaError as e:
        p.error = str(e)


def _contains(repo: Repository, tip: Oid, commit: Oid) -> bool:
    return bool(tip == commit or repo.descendant_of(tip, commit))


def _disposable(repo: Repository, path: Path | None, branch_tip: Oid | None,
                integ: Oid | None, task: str = "") -> tuple[bool, str]:
    """Whether removing a leftover loses nothing: clean checkout, no commit outside integration."""
    if path is not None and (path / ".git").exists() and not leftovers.cut_short(path):
        try:
            problems = clean_sync_problems(path)
        except LizaError as e:
            problems = [str(e)]
        if problems:
            shown = "; ".join(problems[:3])
            return False, f"uncommitted changes: {shown}; inspect and remove it by hand"
    if branch_tip is not None and (integ is None or not _contains(repo, integ, branch_tip)):
        if task:
            # A task of the board that no longer holds its branch (released, abandoned: a kill
            # came between the recorded transition and the clean-up): what those ops do with
            # such commits, keep them in the attic, then the branch goes.
            return True, (f"branch tip {str(branch_tip)[:12]} has commits outside the "
                          f"integration branch: kept as {ATTIC}/{task}/{branch_tip}")
        return False, (f"branch tip {str(branch_tip)[:12]} has commits outside the integration "
                       "branch; inspect and delete it by hand")
    return True, "holds no work"


def _record_merged(liza: Liza, task: str, integ: Oid, review: Oid) -> None:
    """Finish a merge whose board write failed: MERGED with the integration commit that brought
    review_commit in (the oldest first-parent ancestor of the tip that still contains it)."""
    repo: Repository = liza.repo
    merge_commit = _first_parent_introducing(repo, integ, review)
    liza.apply(lambda _b, now: Merge(actor=liza.agent, time=now, task=task, result="merged",
                                     merge_commit=str(merge_commit)))
    _drop_worktree(liza, task)


def _first_parent_introducing(repo: Repository, tip: Oid, review: Oid, limit: int = 10000) -> Oid:
    found = tip
    commit = repo[tip].peel(pygit2.Commit)
    for _ in range(limit):
        if not _contains(repo, commit.id, review):
            break
        found = commit.id
        if not commit.parents:
            break
        commit = commit.parents[0]
    return found
