"""What a coder's earlier session left when its supervisor starts again (a returning machine).

A coder's id whose supervisor starts again: an earlier session may have ended without its
supervisor's own teardown (killed, crashed, a machine cut off or powered down). Before the new
supervisor resumes, relaunches or rebuilds anything, everything that session left here goes to
the attic, whether the task is still the agent's or has since left it (taken over, the goal
ended): the task worktree's uncommitted and untracked work, the branch's commits the integration
branch lacks (unless the task is still the agent's: then its branch is resumed as it is), and the last work-in-progress snapshot (services/wip.py) where the
worktree is gone. Then, with a remote, one sync shares those entries at once (the attic travels
with sync: services/sync/atticshare.py). Each line names the refs; `doctor` then names the
worktree's state as kept (services/lifecycle/doctor.py). A clean worktree on a merged tip keeps
nothing, and work already on the board (its branch and worktree as they were) is said to be
resumed.
"""
from __future__ import annotations

from typing import Callable

import pygit2

from gitliza.errors import LizaError
from gitliza.services.api import Liza
from gitliza.services import attic, wip
from gitliza.services.lifecycle.cleanup import keep_state

WHY = "the restart of its supervisor"


def tasks_of(liza: Liza, agent: str) -> list[str]:
    """The tasks an earlier session of `agent` here may have left work of: the one the board
    says it holds, and those its snapshots here name (a task since taken over, a goal ended: the
    snapshot, or the mark a sync left when it dropped it, services/sync/wiprefs.py)."""
    me = liza.board().agent(agent)
    out = [me.current_task] if me is not None and me.current_task else []
    for name in [*wip.mine(liza.repo), *wip.mine(liza.repo, wip.LEFT)]:
        p = wip.parse(name) or wip.parse(name, wip.LEFT)
        if p is not None and p[1] == agent and p[0] not in out:
            out.append(p[0])
    return out


def keep(liza: Liza, agent: str, log: Callable[[str], None]) -> None:
    """Keep what `agent`'s dead session left (if anything), say so, and share it."""
    kept = False
    for task in tasks_of(liza, agent):
        t = liza.board().task(task)
        held = t is not None and t.assigned_to == agent
        try:
            # Its branch stays where the task is still its own (resumed: the commits are not lost,
            # nor kept twice); else the commits the integration branch lacks go too.
            notes = keep_state(liza, task, WHY, branch_stays=held)
            snap = liza.repo.references.get(wip.ref_name(task, agent)) or \
                liza.repo.references.get(wip.LEFT + f"{task}/{agent}")
            if not notes and snap is not None and not held:
                c = liza.repo.get(snap.target)
                if isinstance(c, pygit2.Commit) and c.parents and c.parents[0].tree_id != c.tree_id:
                    ref = attic.to_attic(liza.repo, task, c.id, WHY + " (its last snapshot)")
                    notes = [f"{task}: {attic.kept_line([ref])}"]
            for note in notes:
                log(f"{note} (a dead session's leftovers, kept before {WHY})")
            kept |= bool(notes)
            if notes and not held:
                _clear(liza, task, agent, log)
            mark = liza.repo.references.get(wip.LEFT + f"{task}/{agent}")
            if mark is not None:  # told: a later restart has nothing more of it to keep
                mark.delete()
            if not notes and held:  # its branch and worktree stay: the work is resumed, not lost
                log(f"{task}: resumed ({t.status if t else '?'}; its branch and worktree as "
                    "they were)")
        except (LizaError, OSError, pygit2.GitError) as e:
            log(f"{task}: cannot keep the dead session's leftovers in the attic: {e}")
    if kept:
        _share(liza, log)


def _clear(liza: Liza, task: str, agent: str, log: Callable[[str], None]) -> None:
    """The task has left `agent` and what its dead session left of it is in the attic: the
    task's worktree and branch here go, so that this machine's next claim or review of the task
    starts from the board's. Left in place, the dead coder's dirty checkout stood in the way: a
    reviewer of this machine given the task's review found its HEAD, not the submitted commit,
    and gave up (issue 48's fleet scenario). Not when an agent of this machine holds the task
    now (its worktree is the same directory)."""
    from gitliza.core.presence.placement import machine_of
    from gitliza.git.worktrees import tasktrees as worktrees
    from gitliza.git.tasklocks import task_lock
    board = liza.board()
    t = board.task(task)
    me = machine_of(board, agent)
    for other in filter(None, [t.assigned_to if t else None, t.reviewing_by if t else None]):
        if other != agent and (me is None or machine_of(board, other) == me):
            return
    with task_lock(liza.repo, task, timeout=0) as got:
        if not got:
            return  # a command of this clone works on the task right now: not touched
        worktrees.remove_task_worktree(liza.repo, task)
    log(f"{task}: its worktree and branch here removed (kept whole in the attic above; the "
        f"task is no longer {agent}'s)")


def _share(liza: Liza, log: Callable[[str], None]) -> None:
    """One sync with the attic's exchange, so that what was kept is on the remote before this
    supervisor does anything else; a failure is said (the next sync tries again)."""
    from gitliza.services.sync import engine
    try:
        remote = liza.sync_target()
        if remote is None:
            return
        rep = engine.sync(liza.store, remote, attic=True)
    except LizaError as e:
        log(f"the kept work is not shared yet ({e}); the next sync shares it")
        return
    for n in rep.notices:
        if n.startswith("attic"):
            log(n)
