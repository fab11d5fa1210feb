"""The branches that travel with the board (docs/multi-machine.md): the local integration branch
follows the remote's (a fast-forward of approved work only), and a push carries the integration
branch when it is ahead with approved work only (a merge) and the task branches of submitted
tasks. A merge recorded on the board must reach the remote with its merge commit, else
IntegrationDiverged."""
from __future__ import annotations

from dataclasses import dataclass

import pygit2

from gitliza.core.encoding import record
from gitliza.core.states import TaskState
from gitliza.errors import ConcurrencyConflict, LizaError, ValidationError
from gitliza.git.remotes import remote as remotes
from gitliza.git.remotes import transport
from gitliza.git.merge import CheckoutDirty, CheckoutNotUpdated, merge_commit_into
from gitliza.git.store import Store
from gitliza.git.repository import ref_oid
from gitliza.git.worktrees.listing import list_task_branches
from gitliza.services.adopt import check_integration
from gitliza.services.sync.replay import commit_at, local_only
from gitliza.services.sync.report import Progress, SyncReport
from gitliza.services.verify.approvals import Approvals, describe, unapproved

# Task branches are pushed while the board says their tip is what is under review or approved.
SUBMITTED = (TaskState.READY_FOR_REVIEW, TaskState.APPROVED)


class IntegrationDiverged(ConcurrencyConflict):
    """A merge recorded on the local board is not on the remote's integration branch, and the
    local integration branch cannot be pushed (another machine merged first: the branches diverged).
    Nothing was pushed: the board must not say MERGED with a merge commit the remote lacks.
    `git liza merge` undoes its own merge and merges again on the new tip; see docs/multi-machine.md.
    """

    code = "INTEGRATION_DIVERGED"

    def __init__(self, message: str, tasks: tuple[str, ...], *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.tasks = tasks


class IntegrationUnapproved(ValidationError):
    """The board records a merge, but this clone's integration branch cannot be pushed: it holds
    commits no approval covers (and none is the integration base). Nothing was pushed."""

    code = "INTEGRATION_UNAPPROVED"


@dataclass
class Branches:
    integration: str | None  # the board's integration branch (None: no board yet)
    remote: dict[str, str]  # the remote's branches as just fetched: refs/heads/... -> oid
    state_tracking: str  # refs/remotes/<ns>/liza/state: its <ns> is the remote's namespace

    @property
    def namespace_prefix(self) -> str:
        return self.state_tracking[: -len("liza/state")]  # refs/remotes/<ns>/


def integration_branch(store: Store, tip: pygit2.Oid | None) -> str | None:
    """The integration branch the board at `tip` names (None: no board)."""
    if tip is None:
        return None
    board = store.board_at(commit_at(store.repo, tip))
    return board.config.integration_branch if board.initialized else None


def task_leases(store: Store, prefix: str) -> tuple[bool, dict[str, str]]:
    """The local task branches sync may push (a submitted task whose branch tip is its review
    commit), with what this clone knows of the remote's (its tracking ref, `prefix`liza-tasks/):
    (whether any may still need pushing, so the remote's must be fetched; ref -> known oid)."""
    repo = store.repo
    tip = store.tip()
    branches = list_task_branches(repo)
    if tip is None or not branches:
        return False, {}
    try:
        board = store.board_at(commit_at(repo, tip))
        tasks = {task_id: board.task(task_id) for task_id in branches}
    except LizaError:  # a local board poisoned before sync checked (repair's case): fetch all
        return True, {}
    known: dict[str, str] = {}
    unsure = False
    for task_id, head in branches.items():
        t = tasks[task_id]
        if t is None or t.status not in SUBMITTED or t.review_commit != str(head):
            continue
        tracked = repo.references.get(f"{prefix}{remotes.TASKS_NAMESPACE}/{task_id}")
        if tracked is None or ref_oid(tracked) != head:
            unsure = True
        else:
            known[f"{remotes.TASK_BRANCHES}{task_id}"] = str(head)
    return unsure, known


def heads(branch: str | None) -> str:
    return f"refs/heads/{branch}" if branch else ""


def follow_integration(store: Store, branch: str | None, remote_tip: str | None, rep: SyncReport,
                       say: Progress, board_tip: pygit2.Oid | None = None) -> None:
    """Create the local integration branch at the remote's tip, or fast-forward it when it is
    strictly behind; a checkout of it follows if clean (merge.py's rule), a dirty one stops the
    fast-forward. Diverged or ahead: left alone (an ahead branch is pushed, if approved).
    A fast-forward must bring in approved work only, judged against the verified board at
    `board_tip` (IntegrationRefused, exit 4, otherwise: gitliza/services/adopt.py)."""
    if branch is None or remote_tip is None:
        return
    repo = store.repo
    ref = heads(branch)
    theirs = pygit2.Oid(hex=remote_tip)
    cur = repo.references.get(ref)
    if cur is None:
        try:
            repo.references.create(ref, theirs, force=False)
        except pygit2.AlreadyExistsError:
            return  # created concurrently; the next sync compares it
        rep.branches.append(f"{branch}: created at {remote_tip[:12]} from {rep.remote}")
        return
    mine = ref_oid(cur)
    if mine == theirs or repo.descendant_of(mine, theirs):
        return
    if not repo.descendant_of(theirs, mine):
        rep.notices.append(f"{branch} has diverged from {rep.remote}'s {branch} "
                           f"({str(mine)[:12]} vs {remote_tip[:12]}): not fast-forwarded")
        return
    if board_tip is not None:
        check_integration(repo, store.board_at(commit_at(repo, board_tip)), rep.remote, branch,
                          mine, theirs)
    say(f"fast-forwarding {branch} to {remote_tip[:12]}")
    sig = pygit2.Signature("gitliza", "gitliza@liza.invalid")
    try:
        # A fast-forward (theirs descends from ours): merge_commit_into moves the ref by CAS and
        # makes a clean checkout of the branch follow; no integration test for a fast-forward
        # of work that was tested where it was merged.
        merge_commit_into(repo, branch, theirs, message="", signature=sig, expected_old=mine)
    except CheckoutDirty as e:
        rep.notices.append(f"{branch} not fast-forwarded to {rep.remote}'s: {e}")
        return
    except CheckoutNotUpdated as e:
        rep.notices.append(str(e))
    except ConcurrencyConflict as e:  # a local merge moved it meanwhile: compared next sync
        rep.notices.append(f"{branch} not fast-forwarded: {e}")
        return
    rep.branches.append(f"{branch}: fast-forwarded {str(mine)[:12]}..{remote_tip[:12]}")


def branch_updates(store: Store, tip: pygit2.Oid, r: pygit2.Oid | None, rep: SyncReport,
                   br: Branches) -> list[transport.RefUpdate]:
    """The branch updates to push with the board at `tip`:
    - the integration branch, when it is ahead of the remote's and brings in approved work only
      (what the server hook would accept; anything else is flagged and kept local);
    - each task branch liza/<task> whose tip is the review_commit of a submitted task
      (READY_FOR_REVIEW or APPROVED) and which the remote does not have there yet.
    Raises IntegrationDiverged when a merge recorded by a local-only op would reach the remote's
    board without its merge commit."""
    repo = store.repo
    board = store.board_at(commit_at(repo, tip))
    out: list[transport.RefUpdate] = []
    integ = br.integration
    will_have: pygit2.Oid | None = None  # the remote's integration tip after this push
    refused: str | None = None  # why the local integration branch stays local
    if integ is not None:
        ref = heads(integ)
        remote_hex = br.remote.get(ref)
        theirs = pygit2.Oid(hex=remote_hex) if remote_hex else None
        will_have = theirs
        cur = repo.references.get(ref)
        mine = ref_oid(cur) if cur is not None else None
        if mine is not None and mine != theirs:
            hide: list[pygit2.Oid] | None = None
            if theirs is None:  # creation: anything the remote already has is not brought in
                hide = [ref_oid(x) for name in repo.references
                        if name.startswith(br.namespace_prefix)
                        and (x := repo.references.get(name)) is not None]
            elif theirs in repo and repo.descendant_of(mine, theirs):
                hide = [theirs]
            if hide is not None:
                bad = unapproved(repo, Approvals.of(board), mine, hide)
                if bad:
                    refused = f"it has {describe(bad)}"
                    if theirs is None and board.config.integration_base is None:
                        refused += (" (this board records no integration base: the human sets "
                                    f"it with `git liza config integration_base <commit>`)")
                    rep.notices.append(f"{integ} not pushed: {refused}; only "
                                       "approved work merged by `git liza merge` is shared")
                else:
                    out.append(transport.RefUpdate(ref, str(mine), remote_hex))
                    will_have = mine
    _check_merges_reach(store, tip, r, will_have, integ, rep, refused)
    branches = list_task_branches(repo)
    for task_id, head in sorted(branches.items()):
        t = board.task(task_id)
        if t is None or t.status not in SUBMITTED or t.review_commit != str(head):
            continue
        ref = f"{remotes.TASK_BRANCHES}{task_id}"
        theirs_t = br.remote.get(ref)
        if theirs_t != str(head):
            out.append(transport.RefUpdate(ref, str(head), theirs_t, fast_forward=False))
    return out


def _check_merges_reach(store: Store, tip: pygit2.Oid, r: pygit2.Oid | None,
                        integ_after: pygit2.Oid | None, integ: str | None, rep: SyncReport,
                        refused: str | None = None) -> None:
    """Every merge recorded by an op the remote does not have yet must be on the integration branch
    the remote will have after the push; else pushing the board would make it lie. `refused`: why
    the local integration branch was kept local (then that, not a lost race, is the reason)."""
    if integ is None or tip == r:
        return
    repo = store.repo
    missing: list[tuple[str, str]] = []
    for c in local_only(store, tip, r):
        try:
            rec = record.parse(c.message)
        except ValidationError:
            continue
        merged = getattr(rec.op, "merge_commit", None)
        if rec.op.NAME != "merge" or not merged:
            continue
        m = pygit2.Oid(hex=merged)
        if integ_after is None or not (m == integ_after or (
                m in repo and integ_after in repo and repo.descendant_of(integ_after, m))):
            missing.append((str(rec.task), merged))
    if missing:
        tasks = tuple(t for t, _m in missing)
        if refused is not None:
            where = (f"{rep.remote} has no {integ} branch" if integ_after is None
                     else f"{rep.remote}'s {integ} lacks merge commit {missing[0][1][:12]}")
            raise IntegrationUnapproved(
                f"{where} and this clone's {integ} was not pushed: {refused}; nothing was "
                f"pushed (the board records {', '.join(tasks)} merged)",
                hint="only approved work merged by `git liza merge` is shared; see "
                     "docs/getting-started.md (the first sync)")
        raise IntegrationDiverged(
            f"{integ} on {rep.remote} moved on while this clone merged {', '.join(tasks)} "
            f"(merge commit {missing[0][1][:12]} is not on {rep.remote}'s {integ}); nothing "
            "was pushed", tasks,
            hint="`git liza merge` merges again on the new tip by itself; see "
                 "docs/multi-machine.md (a merge that lost the race)")
