"""After a sync dropped local ops (a healed partition: another machine did the same work first),
nothing dropped stays where the team builds.

The board no longer records the dropped ops, but the branches they moved still carry their work:
an unreviewed merge on the local integration branch, a task branch with commits nobody will
review. Left there, the next claim would branch from that work and the next merge would try to
share it. So, once the board has moved (the drops are final):

- the local integration branch and the dropped tasks' branches that hold commits the remote's
  lack return to the remote's (a task branch the remote does not have is removed);
- what they held is kept on ONE ref, `refs/liza-rescue/<time>`: a commit whose parents are the
  old tips (the integration branch, each task branch, and the local board with the dropped ops,
  in that order, named in its message). `git log refs/liza-rescue/<time>^2` shows a task
  branch's dropped commits, `git cherry-pick` brings one back. The ref is local: sync never
  pushes refs/liza-rescue/, and git's maintenance never prunes what a ref reaches.

A branch checked out in a worktree is not moved (its files would no longer match its HEAD): it is
named in a notice, still kept on the rescue ref, and `doctor` reports the diverged integration
branch until the human resets it. The rescue commit is written into gitliza's own object store
(gitliza/git/objects/ownstore.py), like every object gitliza makes.
"""
from __future__ import annotations

import time
from typing import Iterable, Sequence

import pygit2

from gitliza.core.board import Board
from gitliza.core.encoding import record
from gitliza.core.ops.base import Op
from gitliza.core.states import TaskState
from gitliza.errors import GitFailure, LizaError
from gitliza.git import refdelete
from gitliza.git.remotes import remote as remotes
from gitliza.git.repository import contains, ref_oid
from gitliza.git.store import Store
from gitliza.git.objects.trees import Batch
from gitliza.git.worktrees.listing import checkouts_of_branch
from gitliza.git.worktrees.tasktrees import task_branch
from gitliza.services.sync.report import Dropped, Replayed, SyncReport
from gitliza.services.verify.approvals import Approvals, describe, unapproved

RESCUE_PREFIX = "refs/liza-rescue/"
WORKED_ON = (TaskState.CLAIMED, TaskState.REJECTED, TaskState.INTEGRATION_FAILED)
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def rescue(store: Store, integration: str | None, tracking_prefix: str,
           dropped: list[tuple[Dropped, Op | None]], board: Board, old_board: pygit2.Oid,
           rep: SyncReport, kept_merges: Sequence[str] = ()) -> str | None:
    """Return the local integration branch and the dropped tasks' branches to the remote's
    (`tracking_prefix`: refs/remotes/<ns>/), keeping their old tips and `old_board` on one rescue
    ref; its name (None: no branch held dropped work). `board` is the rebuilt board: a task
    someone works on there keeps its branch. `kept_merges`: the merge commits of the local merges
    the sync kept (replayed): the integration branch that holds one stays, the push shares it."""
    repo = store.repo
    moves: list[tuple[str, pygit2.Oid, pygit2.Oid | None]] = []  # ref, old tip, new tip
    team = _tip(repo, f"{tracking_prefix}{integration}") if integration else None
    if integration and team is not None:
        ref = f"refs/heads/{integration}"
        mine = _tip(repo, ref)
        if mine is not None and _holds_more(repo, mine, team):
            why = _integration_stays(repo, board, mine, team, kept_merges,
                                     [getattr(op, "merge_commit", None) or ""
                                      for _d, op in dropped if op is not None])
            if why is None:
                moves.append((ref, mine, team))
            else:
                rep.notices.append(f"{integration} not returned to {rep.remote}'s: {why}")
    for task in sorted({d.task for d, _op in dropped if d.task}):
        t = board.task(task)
        if t is not None and t.status in WORKED_ON:
            continue  # someone works on it now (a local agent's kept claim): its branch is theirs
        ref = f"refs/heads/{task_branch(task)}"
        mine = _tip(repo, ref)
        if mine is None:
            continue
        theirs = _tip(repo, f"{tracking_prefix}{remotes.TASKS_NAMESPACE}/{task}")
        shared = theirs if theirs is not None else team
        if shared is not None and _holds_more(repo, mine, shared):
            moves.append((ref, mine, theirs))
    if not moves:
        return None
    name = f"{RESCUE_PREFIX}{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{str(old_board)[:8]}"
    keep = _rescue_commit(store, moves, old_board, dropped, rep.remote)
    repo.create_reference(name, keep, force=True, message="liza sync: dropped work kept")
    for ref, mine, theirs in moves:
        short = ref[len("refs/heads/"):]
        where = checkouts_of_branch(repo, ref)
        if where:
            rep.notices.append(f"{short} is checked out in {where[0]}: not returned to "
                               f"{rep.remote}'s; its dropped work is on {name}")
            continue
        try:
            cur = repo.references.get(ref)
            if cur is None or ref_oid(cur) != mine:
                continue  # moved meanwhile by a local command: its own business now
            if theirs is None:
                if not refdelete.delete(repo, ref, mine):
                    continue  # moved meanwhile, as above
                rep.branches.append(f"{short}: removed (dropped work, kept on {name})")
            else:
                cur.set_target(theirs, f"liza sync: back to {rep.remote}'s after dropped ops")
                rep.branches.append(f"{short}: returned to {rep.remote}'s {str(theirs)[:12]} "
                                    f"(dropped work kept on {name})")
        except (KeyError, pygit2.GitError, LizaError) as e:
            rep.notices.append(f"{short} not returned to {rep.remote}'s: {e}")
    return name


def _integration_stays(repo: pygit2.Repository, board: Board, mine: pygit2.Oid,
                       team: pygit2.Oid, kept_merges: Sequence[str],
                       dropped_merges: Sequence[str]) -> str | None:
    """Why the local integration branch must not return to the remote's, None when it may:
    - it holds a merge a kept op records, and none a dropped op records (a drop of another op,
      such as a takeover a renewal outran, took a merge the remote would take off the branch,
      and the push then failed IntegrationDiverged with the board recording it). Dropped work on
      it always leaves: a kept merge above it is its command's to make again;
    - the remote's brings in work no approval on the board covers (a peer's push where no server
      hook runs): a fast-forward to it is refused (adopt.check_integration), and a rescue must not
      be the way round that rule."""
    def only_here(hexsha: str) -> bool:
        try:
            m = pygit2.Oid(hex=hexsha)
        except ValueError:
            return False
        return m in repo and contains(repo, mine, m) and not contains(repo, team, m)

    if not any(only_here(h) for h in dropped_merges if h):
        for hexsha in kept_merges:
            if only_here(hexsha):
                return f"it holds the merge {hexsha[:12]} of an op still on the board"
    bad = unapproved(repo, Approvals.of(board), team, [mine])
    if bad:
        return f"the remote's brings in {describe(bad)}"
    return None


def merges_kept(repo: pygit2.Repository, replayed: Iterable[Replayed]) -> list[str]:
    """The merge commits the replayed merge ops record."""
    out: list[str] = []
    for r in replayed:
        if r.op != "merge":
            continue
        try:
            c = repo[r.commit]
            if not isinstance(c, pygit2.Commit):
                continue
            merged = getattr(record.parse(c.message).op, "merge_commit", None)
        except (KeyError, ValueError, LizaError):
            continue
        if merged:
            out.append(str(merged))
    return out


def _tip(repo: pygit2.Repository, ref: str) -> pygit2.Oid | None:
    found = repo.references.get(ref)
    if found is None:
        return None
    try:
        return ref_oid(found)
    except (GitFailure, KeyError, ValueError, pygit2.GitError):  # dangling: nothing to compare
        return None


def _holds_more(repo: pygit2.Repository, mine: pygit2.Oid, theirs: pygit2.Oid) -> bool:
    """Whether `mine` has commits `theirs` lacks (it is neither equal to nor behind it)."""
    return mine != theirs and not repo.descendant_of(theirs, mine)


def _rescue_commit(store: Store, moves: list[tuple[str, pygit2.Oid, pygit2.Oid | None]],
                   old_board: pygit2.Oid, dropped: list[tuple[Dropped, Op | None]],
                   remote: str) -> pygit2.Oid:
    """One commit keeping every old tip as a parent; its tree is the first one's (the old
    integration branch's when it moved), so `git show` of it shows the dropped work."""
    repo = store.repo
    first = repo[moves[0][1]]
    tree = str(first.peel(pygit2.Commit).tree_id) if isinstance(first, pygit2.Commit) \
        else EMPTY_TREE
    parents = [m[1] for m in moves] + [old_board]
    when = int(time.time())
    who = f"gitliza <gitliza@liza.invalid> {when} +0000"
    lines = [f"gitliza: work dropped by sync with {remote}", "",
             "The local ops below no longer applied on the remote's board (another machine",
             "did it first). Their branches returned to the remote's; their old tips are kept",
             "here as parents, in this order:", ""]
    lines += [f"  ^{i}  {ref}  {str(old)[:12]}" for i, (ref, old, _n) in enumerate(moves, 1)]
    lines += [f"  ^{len(moves) + 1}  {store.ref}  {str(old_board)[:12]} (with the dropped ops)",
              "", "Dropped:"]
    lines += [f"  {d.describe()}" for d, _op in dropped]
    body = "\n".join([f"tree {tree}", *(f"parent {p}" for p in parents), f"author {who}",
                      f"committer {who}", "", *lines]) + "\n"
    batch = Batch(repo)
    raw = batch.store(b"commit", body.encode())
    batch.flush()
    return pygit2.Oid(raw=raw)
