"""The work-in-progress snapshots a sync pushes and drops (refs/liza/wip/<task>/<agent>,
services/wip.py).

- **Push**: each of this clone's wip refs whose value the remote's copy lacks, while the board the
  push leaves still gives the task to its agent, goes in the same atomic push as the board and the
  renewals, with a lease on the remote's copy and no fast-forward asked (a snapshot replaces the
  last). One the hook would refuse stays here rather than fail the whole push.
- **Drop**: once the board no longer gives the task to its agent (submitted, released, taken
  over), the snapshot has done its work: this clone's own copy is deleted here and on the remote
  (a separate push with a lease, best effort). A snapshot holding uncommitted work is kept in the
  attic first (a name that never changes): the task's branch holds the rest. Where the task's
  worktree stays here, a local mark (wip.LEFT) tells a returning supervisor of it. A remote copy this
  clone never made (a dead machine's) is deleted only once its attic entry is on the remote too.
"""
from __future__ import annotations

import pygit2

from gitliza.git import refdelete
from gitliza.git.gitcmd import run_git
from gitliza.git.remotes import transport
from gitliza.git.store import Store
from gitliza.services import attic, wip
from gitliza.services.locations import task_dir


def wip_updates(store: Store, prefix: str, tip: pygit2.Oid | None) -> list[transport.RefUpdate]:
    """The wip refs to push along with the board at `tip`; `prefix`: refs/remotes/<ns>/."""
    repo = store.repo
    out: list[transport.RefUpdate] = []
    board = None
    for name, local in wip.mine(repo).items():
        theirs = _target(repo, prefix + name[len("refs/"):])
        if local == theirs:
            continue
        if board is None:
            board = store.board_at(store.commit(tip) if tip is not None else None)
        if wip.check(repo, board, name, local, False) is None:
            out.append(transport.RefUpdate(name, local, theirs, fast_forward=False))
    return out


def drop_stale(store: Store, path: str, arg: str, prefix: str, tip: pygit2.Oid | None,
               timeout: float) -> list[str]:
    """Drop the snapshots whose task has left their agent (see the module's doc); the refs
    dropped on the remote."""
    repo = store.repo
    mirror = prefix + wip.WIP[len("refs/"):]
    tracked = {wip.WIP + n[len(mirror):]: str(repo.references[n].target)
               for n in list(repo.references) if n.startswith(mirror)}
    own = wip.mine(repo)
    if not own and not tracked:
        return []
    board = store.board_at(store.commit(tip) if tip is not None else None)
    gone: dict[str, str] = {}  # ref -> the remote's value to delete (with a lease on it)
    for name in sorted(set(own) | set(tracked)):
        parsed = wip.parse(name)
        if parsed is None or wip.holds(board, *parsed):
            continue
        oid = own.get(name) or tracked[name]
        if name in own:
            if _uncommitted(repo, oid):
                attic.to_attic(repo, parsed[0], pygit2.Oid(hex=oid), "the task left its coder")
            if (task_dir(repo, parsed[0]) / ".git").exists():  # for a returning supervisor
                repo.references.create(wip.LEFT + name[len(wip.WIP):], pygit2.Oid(hex=oid),
                                       force=True)
            refdelete.delete(repo, name, oid)
            if name in tracked:
                gone[name] = tracked[name]
        elif _entry_shared(repo, prefix, parsed[0], oid):
            gone[name] = oid
    if not gone:
        return []
    args = ["push", "--porcelain", "--no-verify",
            *(f"--force-with-lease={r}:{o}" for r, o in gone.items()),
            "--", arg, *(f":{r}" for r in gone)]
    run = run_git(path, args, timeout=timeout)
    done = []
    for line in run.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) >= 2 and parts[0] == "-" and parts[1].startswith(":"):
            ref = parts[1][1:]
            refdelete.delete(repo, prefix + ref[len("refs/"):], gone.get(ref))
            done.append(ref)
    return done


def _uncommitted(repo: pygit2.Repository, oid: str) -> bool:
    """Whether the snapshot holds work its parent commit lacks (uncommitted edits)."""
    c = repo.get(oid)
    if not isinstance(c, pygit2.Commit):
        return False
    return not c.parents or c.parents[0].tree_id != c.tree_id


def _entry_shared(repo: pygit2.Repository, prefix: str, task: str, oid: str) -> bool:
    """Whether the attic entry of `oid` is on the remote (its mirror says so)."""
    return repo.references.get(f"{prefix}liza-attic/{task}/{oid}") is not None


def _target(repo: pygit2.Repository, name: str) -> str | None:
    ref = repo.references.get(name)
    return str(ref.target) if ref is not None and isinstance(ref.target, pygit2.Oid) else None
