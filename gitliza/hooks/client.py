"""The client hooks: what plain git is refused in a clone, before the server would refuse it.

- the commit rule: in a task branch (`liza/<task-id>`), only the coder holding the claim with a
  live lease commits; nobody commits while the task is READY_FOR_REVIEW or APPROVED. The installed
  shims apply it in reference-transaction (one hook start fewer per commit); pre-commit applies it
  under the pre-commit framework and for older shims;
- pre-merge-commit: a merge into the integration branch merges approved review commits only;
- reference-transaction: every ref move, judged by the shared rules (gitliza/hooks/judge.py), and
  the commit rule for the branch checked out here;
- pre-push: the shared rules for what is about to be sent, refused early.

Client hooks are advisory (`-c core.hooksPath=/dev/null` skips them); they judge leases by the
CLI's clock (LIZA_NOW honoured). Every refusal is one line on stderr.

pygit2, the core and the clock are imported inside the functions that use them (start-up speed):
the dispatcher imports this module on every hook run, and most runs end before they are needed.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitliza.hooks.judge import judge
from gitliza.hooks.repo import (
    LIZA_REFS,
    TASK_BRANCH,
    TASK_REF,
    ZERO,
    board_at,
    integration_ref,
    open_repo,
    ref_target,
    stdin_lines,
    store_of,
)

if TYPE_CHECKING:
    import pygit2


def _refuse(hook: str, reason: str) -> int:
    print(f"gitliza: {hook}: refused: {' '.join(reason.split())}", file=sys.stderr)
    return 1


def _now() -> str:
    """Client hooks judge leases like the CLI does (LIZA_NOW honoured: they are advisory)."""
    from gitliza.services.api import now_utc
    return now_utc()


# -- the commit rule ------------------------------------------------------------------------------
def pre_commit(args: list[str], stdin: bytes) -> int:
    """A commit on the task branch checked out here (see _task_commit_refused). Not installed by
    `git liza hooks install` any more: reference-transaction applies the same rule to every move of
    that branch, commits included. Kept for the pre-commit framework and for older shims."""
    repo = open_repo()
    if repo.head_is_detached or repo.head_is_unborn:
        return 0
    why = _task_commit_refused(repo, repo.head.name)
    return _refuse("pre-commit", why) if why else 0


def _task_commit_refused(repo: pygit2.Repository, ref: str) -> str | None:
    """Why the task branch `ref` (refs/heads/liza/<task>), checked out here, may not move: only the
    claim holder, with a live lease, commits; a task under review or approved is frozen (its
    review_commit is what gets reviewed and merged). None for any other branch, or with no board."""
    if not ref.startswith(TASK_REF):
        return None
    branch, task_id = ref[len("refs/heads/"):], ref[len(TASK_REF):]
    store = store_of(repo)
    tip = store.tip()
    if tip is None:  # no board in this repository: not ours to police
        return None
    from gitliza.core.states import TaskState as S
    t = store.live_overlay(board_at(store, tip)).task(task_id)  # with the renewals
    if t is None:
        return f"branch {branch} belongs to no task on the board (no task {task_id!r})"
    if t.status in (S.READY_FOR_REVIEW, S.APPROVED):
        return (f"{task_id} is {t.status}: its review commit {str(t.review_commit)[:12]} is frozen "
                "until a rejection or the merge")
    if t.status != S.CLAIMED:
        return f"{task_id} is {t.status}, not CLAIMED: claim it first (`git liza claim {task_id}`)"
    agent = os.environ.get("LIZA_AGENT_ID")
    if not agent:
        return f"{task_id} is claimed by {t.assigned_to}; set LIZA_AGENT_ID to say who is committing"
    if t.assigned_to != agent:
        return f"{task_id} is claimed by {t.assigned_to}, not {agent}"
    now = _now()
    if not (t.lease_expires and t.lease_expires > now):
        return (f"{agent}'s lease on {task_id} expired at {t.lease_expires} (now {now}): "
                "`git liza heartbeat` or claim again")
    return None


# -- a merge made by hand -------------------------------------------------------------------------
def pre_merge_commit(args: list[str], stdin: bytes) -> int:
    """A merge commit made by hand on the integration branch merges approved review commits only."""
    repo = open_repo()
    if repo.head_is_detached or repo.head_is_unborn:
        return 0
    store = store_of(repo)
    tip = store.tip()
    if tip is None:
        return 0
    board = board_at(store, tip)
    if repo.head.name != integration_ref(board):
        return 0
    merged = _merged_commits(repo)
    from gitliza.core.states import TaskState as S
    tasks = list(board.all_tasks())
    for oid in merged:
        if any(t.status == S.APPROVED and t.review_commit == oid for t in tasks):
            continue
        return _refuse("pre-merge-commit", _why_not_approved(repo, tasks, oid))
    return 0


def _merged_commits(repo: pygit2.Repository) -> list[str]:
    """What `git merge` is merging. MERGE_HEAD is not written yet when pre-merge-commit runs, but
    git merge sets GIT_REFLOG_ACTION to "merge <the revisions it was given>". Anything else (a merge
    run by `git pull`, which sets its own action) is left to reference-transaction."""
    import pygit2
    action = os.environ.get("GIT_REFLOG_ACTION", "")
    if not action.startswith("merge "):
        merge_head = Path(repo.path) / "MERGE_HEAD"
        return merge_head.read_text().split() if merge_head.is_file() else []
    out = []
    for rev in action.split()[1:]:
        try:
            out.append(str(repo.revparse_single(rev).peel(pygit2.Commit).id))
        except (KeyError, ValueError, pygit2.GitError):
            continue
    return out


def _why_not_approved(repo: pygit2.Repository, tasks: list[Any], oid: str) -> str:
    from gitliza.core.states import TaskState as S
    for t in tasks:
        branch = ref_target(repo, f"refs/heads/{TASK_BRANCH}{t.id}")
        if t.review_commit == oid or (branch is not None and str(branch) == oid):
            if t.status != S.APPROVED:
                return f"{t.id} is {t.status}, not APPROVED: it cannot be merged"
            return (f"merging {oid[:12]}, not {t.id}'s approved review_commit "
                    f"{str(t.review_commit)[:12]}")
    return f"{oid[:12]} is not the approved review_commit of any task"


# -- ref moves and pushes -------------------------------------------------------------------------
def _relevant(ref: str) -> bool:
    return ref.startswith(LIZA_REFS) or ref.startswith("refs/heads/")


def reference_transaction(args: list[str], stdin: bytes) -> int:
    """Plain git moving refs (update-ref, fetch into refs/liza/state, merge, reset, commit): the
    state ref only to a legal continuation, the integration branch only onto approved work, and the
    task branch checked out here only by its claim holder (a commit on it, and any other move). The
    shim calls Python for the "prepared" phase only, the one that can still abort."""
    if args[:1] != ["prepared"]:
        return 0
    lines = [(n, r) for _o, n, r in stdin_lines(stdin, 3) if _relevant(r)]
    if not lines:
        return 0
    repo = open_repo()
    store = store_of(repo)
    tip = store.tip()
    if tip is not None:  # the shim's cache of the integration branch, for the next updates
        store.remember_for_hooks(tip)
    # git passes the caller's expected old value, all zeros when it did not check one; the ref is
    # locked but not moved yet, so its current value is the real starting point.
    updates = [(cur, n, r) for n, r in lines
               if (cur := ref_target(repo, r)) is None or str(cur) != n]
    # The commit rule (pre-commit's, which is not installed: one hook fewer per commit) for the
    # branch checked out here. Creating or deleting the branch is not committing on it.
    head = None if repo.head_is_detached or repo.head_is_unborn else repo.head.name
    for cur, n, r in updates:
        if r == head and cur is not None and n != ZERO:
            why = _task_commit_refused(repo, r)
            if why:
                return _refuse("reference-transaction", f"{r}: {why}")
    # Moving one's own branch back is allowed here (the server refuses a rewind on push), and a
    # merge made by hand may precede its record (`git liza merge` records it).
    refused = judge(store, updates, pending_merges=True, rewind_ok=True)
    return _refuse("reference-transaction", f"{refused[0][0]}: {refused[0][1]}") if refused else 0


def _pre_commit_push_line() -> bytes:
    """Run by the pre-commit framework (.pre-commit-hooks.yaml), which reads git's pre-push stdin
    itself and passes the ref being pushed in PRE_COMMIT_* variables: the same line, rebuilt."""
    env = os.environ
    to, remote_ref = env.get("PRE_COMMIT_TO_REF"), env.get("PRE_COMMIT_REMOTE_BRANCH")
    if not to or not remote_ref:
        return b""
    line = (f"{env.get('PRE_COMMIT_LOCAL_BRANCH') or 'HEAD'} {to} {remote_ref} "
            f"{env.get('PRE_COMMIT_FROM_REF') or ZERO}\n")
    return line.encode()


def pre_push(args: list[str], stdin: bytes) -> int:
    """Refuse early, before anything is sent, what the server's pre-receive would refuse."""
    import pygit2
    stdin = stdin or _pre_commit_push_line()
    lines = [(roid, loid, rref) for _lref, loid, rref, roid in stdin_lines(stdin, 4)
             if _relevant(rref)]
    if not lines:
        return 0
    repo = open_repo()
    remote = args[0] if args else "origin"
    updates: list[tuple[Any, str, str]] = []
    for roid, loid, rref in lines:
        old = None if roid == ZERO else pygit2.Oid(hex=roid)
        if old is not None and old not in repo:
            return _refuse("pre-push", f"{remote}'s {rref} is at {roid[:12]}, which this clone "
                           "does not have: fetch (`git liza pull`) first")
        updates.append((old, loid, rref))
    refused = judge(store_of(repo), updates, pending_merges=False, rewind_ok=False, attic=True)
    return _refuse("pre-push", f"{refused[0][0]}: {refused[0][1]}") if refused else 0
