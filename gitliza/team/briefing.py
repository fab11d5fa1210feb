"""The prompt of one agent session: the core's texts (core/agents/prompts.py) filled in from the
board: the role's bootstrap, then the coder's task (with the human notes for it and a pending
handoff, which the prompt then carries: `carried_handoff` names it, for the session to mark it
given), the reviewer's task, or the planner's wake trigger and sprint; and a resume line for a
session that picks up held work. Building a prompt reads; it writes nothing on the board.
"""
from __future__ import annotations

from gitliza.core.agents import prompts, wake

from gitliza.core.reports import queries
from gitliza.core.board import Board
from gitliza.core.model import HumanNote
from gitliza.core.states import Role
from gitliza.services.locations import main_root
from gitliza.services.api import Liza
from gitliza.team.work import Job


def prompt(liza: Liza, role: Role, board: Board, job: Job, resume: str | None) -> str:
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
        handoff = board.get("handoff", t.id) if carried_handoff(role, board, job) else None
        text += prompts.coder_section(t, str(job.worktree), _notes(board, t.id), handoff)
        text += _wip_lines(liza, t.id) + _attic_line(liza, t.id)
    elif role == Role.CODE_REVIEWER and t is not None:
        text += prompts.reviewer_section(t, str(job.worktree), _notes(board, t.id))
    elif role == Role.PLANNER:
        text += prompts.planner_section(job.trigger, wake.sprint_state(board),
                                        notes=_notes(board, None))
    if resume or job.resume:
        text += prompts.resume_line(resume or job.task or "")
    return text


def carried_handoff(role: Role, board: Board, job: Job) -> str | None:
    """The task whose pending handoff the prompt for `job` carries (a coder's task), else None."""
    t = board.task(job.task) if job.task else None
    if role != Role.CODER or t is None or not t.handoff_pending:
        return None
    return t.id if board.get("handoff", t.id) is not None else None


def _notes(board: Board, task: str | None) -> list[HumanNote]:
    if task is not None:
        return queries.notes_for(board, task)
    return [n for n in board.values("human_notes") if n.for_task is None]


def _wip_lines(liza: Liza, task: str) -> str:
    """The work in progress another coder of this task left (a dead machine's last snapshot,
    fetched from the remote): kept in the attic now, a name that never changes and that sync
    shares, and the coder taking over is told how to start from it."""
    import pygit2

    from gitliza.errors import LizaError
    from gitliza.git.remotes.remote import tracking_ref
    from gitliza.services import wip
    try:
        remote = liza.sync_target()
        tracking = tracking_ref(remote)[: -len("state")] + "wip/" if remote else None
        kept = wip.to_entries(liza.repo, task, tracking, "a takeover of the task", but=liza.agent)
    except (LizaError, pygit2.GitError, OSError):
        return ""
    out = ""
    for agent, ref in kept:
        oid = ref.rsplit("/", 1)[1]
        c = liza.repo.get(oid)
        parent = c.parents[0] if isinstance(c, pygit2.Commit) and c.parents else None
        out += prompts.wip_section(task, agent, oid, ref,
                                   parent.message.splitlines()[0] if parent and parent.message
                                   else "")
    return out


def _attic_line(liza: Liza, task: str) -> str:
    """What an earlier coder left of this task in the attic: the next one is told."""
    from gitliza.services.attic import entries
    found = entries(liza.repo, task)
    if not found:
        return ""
    return prompts.attic_section(task, len(found), found[0].oid, found[0].ref, found[0].subject)
