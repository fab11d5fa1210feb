"""Work-in-progress snapshots: `refs/liza/wip/<task>/<agent>`, one ref per task and
coder, replaced by each snapshot, so that a machine that dies loses at most one
`wip_snapshot_interval` of a coder's work.

Why not the attic: an attic entry's name fixes its content and it is kept `attic_keep` days (the
server hook refuses a deletion before); snapshots every minute would be hundreds of entries a
task. A wip ref is the opposite: one name, replaced each time (no fast-forward asked: each
snapshot is a commit of the worktree over its latest commit), dropped once the task leaves its
coder. It is turned into an attic entry (a name that never changes) where it matters: by the
takeover that starts over it (`to_entry`) and by a returning machine (team/leftovers.py).

The rules (`check`, applied by the server hook and the client hooks): the ref's commit says in
its message which task and agent it is of (`Liza-Wip: <task> <agent>`), and must match the name;
it may be made or replaced only while the board (as the same push leaves it) gives the task to
that agent; it may be deleted only once the board no longer does. Under pusher bindings only a
pusher bound to the agent moves it (gitliza/hooks/server.py), as for the renewals.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pygit2

from gitliza.core.states import TERMINAL
from gitliza.git.repository import reopened

if TYPE_CHECKING:
    from gitliza.core.board import Board

WIP = "refs/liza/wip/"
# This clone's own snapshot of a task that left its coder while the worktree stays here: a local
# mark (never fetched, pushed or judged) that tells a returning supervisor which tasks its dead
# session worked (team/leftovers.py), since the board no longer says so.
LEFT = "refs/liza-wip-left/"
TRAILER = "Liza-Wip"
_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)/([A-Za-z0-9][A-Za-z0-9._-]*)$")
_TRAILER = re.compile(rf"^{TRAILER}: (\S+) (\S+)$", re.M)


def ref_name(task: str, agent: str) -> str:
    return f"{WIP}{task}/{agent}"


def parse(ref: str, prefix: str = WIP) -> tuple[str, str] | None:
    """(task, agent) of a wip ref's name under `prefix`, or None."""
    m = _NAME.match(ref[len(prefix):]) if ref.startswith(prefix) else None
    return (m.group(1), m.group(2)) if m else None


def says(repo: pygit2.Repository, oid: str | pygit2.Oid) -> tuple[str, str] | None:
    """(task, agent) a snapshot commit says it is of, or None for anything else."""
    try:
        c = repo.get(oid)
    except ValueError:
        return None
    if not isinstance(c, pygit2.Commit):
        return None
    m = _TRAILER.search(c.message)
    return (m.group(1), m.group(2)) if m else None


def holds(board: Board | None, task: str, agent: str) -> bool:
    """Whether `board` gives `task` to `agent` now."""
    t = board.task(task) if board is not None and board.initialized else None
    return t is not None and t.assigned_to == agent and t.status not in TERMINAL


def check(repo: pygit2.Repository, board: Board | None, ref: str, new: str,
          deleting: bool) -> str | None:
    """Why moving (or deleting) the wip ref `ref` to `new` is refused, judged against `board`, the
    board as the same push leaves it; None: allowed (no fast-forward asked)."""
    parsed = parse(ref)
    if parsed is None:
        return "not a work-in-progress ref's name (refs/liza/wip/<task>/<agent>)"
    task, agent = parsed
    if deleting:
        return (f"{agent} still holds {task}: its work in progress stays until the task leaves it"
                if holds(board, task, agent) else None)
    said = says(repo, new)
    if said != parsed:
        return (f"{new[:12]} is not a snapshot of {agent} on {task}"
                + (f" (it says {said[1]} on {said[0]})" if said else ""))
    if not holds(board, task, agent):
        return f"{agent} does not hold {task}: only the coder holding a task snapshots it"
    return None


def snapshot(repo: pygit2.Repository, task: str, agent: str, path: Path,
             parent: str | None = None) -> pygit2.Oid | None:
    """Snapshot the worktree at `path` (commits and uncommitted, untracked-not-ignored files) as
    `refs/liza/wip/<task>/<agent>` over `parent` (the coder's latest commit; default the
    worktree's HEAD), with a throw-away index: the worktree and its index are untouched. None
    when nothing changed since the last snapshot (the same tree over the same commit)."""
    from gitliza.services.attic import commit_tree, worktree_tree
    tree, base = worktree_tree(repo, path, parent)
    name = ref_name(task, agent)
    ref = repo.references.get(name)
    if ref is not None:
        last = repo.get(ref.target)
        if isinstance(last, pygit2.Commit) and str(last.tree_id) == tree and \
                [str(p) for p in last.parent_ids] == ([base] if base else []):
            return None
    oid = commit_tree(repo, path, tree, base,
                      f"gitliza: work in progress of {agent} on {task}\n\n"
                      f"{TRAILER}: {task} {agent}\n")
    repo = reopened(repo)  # sees the commit just written into the own store
    repo.references.create(name, oid, force=True)
    return oid


def mine(repo: pygit2.Repository, prefix: str = WIP) -> dict[str, str]:
    """This clone's own wip refs (name -> oid): the snapshots its supervisors made (under
    `prefix`: LEFT, the marks of tasks that left them)."""
    out = {}
    for name in repo.references:
        if name.startswith(prefix):
            t = repo.references[name].target
            if isinstance(t, pygit2.Oid):
                out[name] = str(t)
    return out


def of_task(repo: pygit2.Repository, task: str, tracking: str | None) -> list[tuple[str, str]]:
    """(agent, oid) of every snapshot of `task` this clone sees: its own, and the remote's copies
    under `tracking` (refs/remotes/<ns>/liza/wip/), the remote's first where both exist."""
    seen: dict[str, str] = {}
    for prefix in ([tracking] if tracking else []) + [WIP]:
        for name in list(repo.references):
            p = parse(name, prefix)
            if p is None or p[0] != task or p[1] in seen:
                continue
            t = repo.references[name].target
            if isinstance(t, pygit2.Oid) and says(repo, t) == p:
                seen[p[1]] = str(t)
    return sorted(seen.items())


def to_entries(repo: pygit2.Repository, task: str, tracking: str | None, why: str,
               but: str | None = None) -> list[tuple[str, str]]:
    """Keep every snapshot of `task` (except `but`'s, the agent now at work) as an attic entry,
    a name that never changes and that sync shares. (agent, attic ref) of each."""
    from gitliza.services.attic import to_attic
    return [(agent, to_attic(repo, task, pygit2.Oid(hex=oid), why))
            for agent, oid in of_task(repo, task, tracking) if agent != but]
