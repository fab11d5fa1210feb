"""The prompt of one agent session: the core's texts (gitliza/core/prompts.py) filled in from the
board: the role's bootstrap, then the coder's task (with the human notes for it and a pending
handoff, which the prompt then carries: marked given), the reviewer's task, or the planner's wake
trigger and sprint; and a resume line for a session that picks up held work.
"""
from __future__ import annotations

from typing import Callable

from gitliza.core import prompts, queries, wake
from gitliza.core.board import Board
from gitliza.core.model import HumanNote
from gitliza.core.ops.work import Heartbeat
from gitliza.core.states import Role
from gitliza.errors import LizaError
from gitliza.services.lifecycle.locations import main_root
from gitliza.services.api import Liza
from gitliza.team.work import Job


def prompt(liza: Liza, role: Role, gen: int, board: Board, job: Job, resume: str | None,
           log: Callable[[str], None]) -> str:
    """The prompt for `job`; `resume` is the task the user asked the first session to resume."""
    cfg = board.config
    boot = prompts.Bootstrap(role=role, agent=liza.agent,
                             project=str(main_root(liza.repo)),
                             goal=board.goal.description,
                             goal_spec=prompts.goal_spec(board.goal),
                             integration_branch=cfg.integration_branch)
    text = prompts.base_prompt(boot)
    t = board.task(job.task) if job.task else None
    if role == Role.CODER and t is not None:
        handoff = board.get("handoff", t.id) if t.handoff_pending else None
        text += prompts.coder_section(t, str(job.worktree), _notes(board, t.id), handoff)
        if handoff is not None:
            _handoff_given(liza, gen, t.id, log)
        text += _attic_line(liza, t.id)
    elif role == Role.CODE_REVIEWER and t is not None:
        text += prompts.reviewer_section(t, str(job.worktree), _notes(board, t.id))
    elif role == Role.PLANNER:
        text += prompts.planner_section(job.trigger, wake.sprint_state(board),
                                        notes=_notes(board, None))
    if resume or job.resume:
        text += prompts.resume_line(resume or job.task or "")
    return text


def _handoff_given(liza: Liza, gen: int, task: str, log: Callable[[str], None]) -> None:
    """The prompt carries the task's pending handoff: a heartbeat that clears the flag (the
    lease keeper's heartbeats keep it, so it outlives the agent that wrote it)."""
    try:
        liza.do(Heartbeat, task=task, gen=gen)
    except LizaError as e:
        log(f"handoff of {task} stays pending: {e}")


def _notes(board: Board, task: str | None) -> list[HumanNote]:
    if task is not None:
        return queries.notes_for(board, task)
    return [n for n in board.values("human_notes") if n.for_task is None]


def _attic_line(liza: Liza, task: str) -> str:
    """What an earlier coder left of this task in the attic (issue 38): the next one is told."""
    from gitliza.services.lifecycle.attic import entries
    found = entries(liza.repo, task)
    if not found:
        return ""
    return (f"\n\nEarlier work on {task} is kept in the attic ({len(found)} entr"
            f"{'y' if len(found) == 1 else 'ies'}, newest {found[0].oid[:12]}: "
            f"{found[0].subject}). `git liza attic {task}` lists them; `git log -p "
            f"{found[0].ref}` shows one. Use what helps; it is not on your branch.\n")
