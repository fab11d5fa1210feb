"""`doctor`'s look at the supervisors: dead ones, stale tokens, and the work they left held.

- A dead supervisor: its token is live, it was recorded on this host, and its process is gone
  (or its pid now names another process: services/procinfo.py). `--fix` frees the token (the
  human's `supervise free`).
- A stale token: past its expiry and never given back (the supervisor died, on any host, or is
  wedged and stopped renewing). `--fix` frees it.
- An orphaned worktree: a task that the agent of a dead supervisor still holds (CLAIMED, or a
  review lease). `--fix` releases it as the human (gitliza/services/lifecycle/claim.py); the
  worktree, explained by no task from then on, is doctor's like any stray one: removed only when
  clean, its commits kept in the attic.

Nothing is done for a supervisor on another host whose token is still live: from here it cannot
be told from a live one (`git liza agent ... --takeover` is the human's word for that).
"""
from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Callable

from gitliza.core.ops.control import Supervise
from gitliza.core.states import TaskState
from gitliza.errors import LizaError
from gitliza.services import procinfo
from gitliza.services.leftovers import Problem
from gitliza.services.locations import task_dir

if TYPE_CHECKING:
    from gitliza.services.api import Liza


def examine(liza: Liza, fix: bool) -> list[Problem]:
    board, now = liza.board(), liza.now()
    out: list[Problem] = []
    dead: list[str] = []
    for sup in sorted(board.values("supervisors"), key=lambda s: s.agent):
        if sup.expires is None:
            continue
        where = f"pid {sup.pid} on {sup.host}" if sup.pid is not None else "no pid recorded"
        if sup.expires > now:
            if not procinfo.dead_here(sup.host, sup.pid, sup.pid_start, liza.repo):
                continue
            p = Problem("dead-supervisor", sup.agent, f"generation {sup.generation} ({where}): "
                        f"the process is gone, its token is live until {sup.expires}", True)
            dead.append(sup.agent)
        else:
            p = Problem("stale-token", sup.agent, f"generation {sup.generation} ({where}) "
                        f"expired at {sup.expires} and was never given back", True)
            if procinfo.dead_here(sup.host, sup.pid, sup.pid_start, liza.repo):
                dead.append(sup.agent)
        out.append(p)
        if fix:
            attempt(p, partial(liza.do, Supervise, mode="free", agent=sup.agent,
                               replaces=sup.generation))
    for t in sorted(board.tasks(), key=lambda t: t.id):
        holder = t.assigned_to if t.status == TaskState.CLAIMED else \
            t.reviewing_by if t.status == TaskState.READY_FOR_REVIEW else None
        if holder is None or holder not in dead:
            continue
        what = "review lease" if t.status == TaskState.READY_FOR_REVIEW else "claim"
        p = Problem("orphaned-worktree", t.id, f"{task_dir(liza.repo, t.id)}: {holder}'s "
                    f"{what}, whose supervisor is dead; --fix releases it (the worktree stays "
                    "for the next claim)", True)
        out.append(p)
        if fix:
            attempt(p, partial(_release, liza, t.id))
    return out


def _release(liza: Liza, task: str) -> None:
    from gitliza.services.lifecycle.claim import release
    release(liza, task)


def attempt(p: Problem, action: Callable[[], object]) -> None:
    """Run a fix; the problem says whether it worked (doctor's fixes share it)."""
    try:
        action()
        p.fixed = True
    except LizaError as e:
        p.error = str(e)
