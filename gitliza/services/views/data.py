"""What the board says, as data: the status, one task, the audit trail, the tasks an agent can take.
The CLI's read commands print these (gitliza/cli/commands/view.py), the MCP tools and resources
return them (gitliza/access/), `git liza top` and `git liza events` show them."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Sequence

from gitliza.core import mergequeue
from gitliza.core.agents import costs
from gitliza.core.board import Board
from gitliza.core.encoding import codec
from gitliza.core.presence import hosts
from gitliza.core.reports import metrics
from gitliza.core.model import Metrics, Task
from gitliza.core.reports.queries import notes_for
from gitliza.core.states import TaskState
from gitliza.errors import LizaError, NotFound

if TYPE_CHECKING:
    from gitliza.services.api import Liza

_ORDER = {s: i for i, s in enumerate(TaskState)}

def _invariants() -> Any:
    """The invariants module, loaded by the views that judge what can be taken: `status` (text)
    prints the board as it is and never loads it (a CLI start imports what it runs)."""
    from gitliza.core import invariants
    return invariants


def tasks_in_order(board: Board) -> tuple[list[Task], list[Task], Metrics]:
    """The live tasks in status order, the archived ones, and the sprint metrics of all."""
    # The questions only the human can answer first: the team waits on them.
    live = sorted(board.tasks(), key=lambda t: (not t.awaiting_human, _ORDER[t.status],
                                                t.priority, t.id))
    archived = list(board.values("archive"))
    return live, archived, metrics.compute([*live, *archived],
                                           sprint_started=board.sprint.timeline.started)

def status_data(liza: Liza, at: str | None = None) -> dict[str, Any]:
    """`status --json` (and the MCP `status` tool and board resource)."""
    board, commit = liza.store.board(at)
    live, archived, m = tasks_in_order(board)
    waits = _invariants().lock_waits(board)
    return {
        "state": str(commit.id) if commit else None, "goal": codec.encode(board.goal),
        "sprint": {**codec.encode(board.sprint), "metrics": codec.encode(m)},
        "config": codec.encode(board.config),
        "tasks": [{**task_row(t), **({"lock_wait": waits[t.id]} if t.id in waits else {})}
                  for t in live], "archived": len(archived),
        "agents": [_agent_row(board, a, liza.now() if at is None else None)
                   for a in board.agents()],
        "claimable": [t.id for t in _invariants().claimable(board, liza.now())],
        "lock_waits": waits,
        "merge_queue": [t.id for t in mergequeue.queue(board)],
        "flow": mergequeue.figures(board, liza.now()),
        "discovered": [codec.encode(d) for d in board.values("discovered")],
        "control": codec.encode(board.control),
        "warnings": [w for w in (metrics.rubber_stamp_warning(m),) if w],
        "usage": costs.goal_totals(board).as_json(),
        # The machines behind the agents, drained ones too, and tasks no machine's labels cover
        # (core/presence/hosts.py: docs/multi-machine.md).
        "machines": [m.to_json() for m in hosts.machines(board, liza.now())],
        "label_waits": hosts.label_lines(board, liza.now()),
    }

def _agent_row(board: Board, a: Any, now: str | None) -> dict[str, Any]:
    """An agent as status shows it, with its supervisor's state (live, stopped, expired, none)
    at the tip (`now`; None for a past state, whose supervisors cannot be judged now)."""
    row = codec.encode(a)
    if now is not None:
        from gitliza.core.presence.supervision import of_agent
        sup = of_agent(board, a, now)
        row["supervisor"] = sup.state.value
        line = sup.line(now)
        if line:
            row["supervisor_note"] = line
        from gitliza.core.agents import faults
        waits = faults.wait_line(board, a, now)
        if waits:  # its supervisor waits for the model provider (status, top, the web board)
            row["status"], row["provider_note"] = faults.WAITING, waits
    return row

def task_row(t: Task) -> dict[str, Any]:
    return {"id": t.id, "status": t.status.value, "priority": t.priority,
            "assigned_to": t.assigned_to, "depends_on": list(t.depends_on),
            "lease_expires": t.lease_expires, "reviewing_by": t.reviewing_by,
            "review_lease_expires": t.review_lease_expires, "iteration": t.iteration,
            "blocked_reason": t.blocked_reason, "description": t.description,
            "lock_scope": list(t.lock_scope),
            **({"needs": list(t.needs)} if t.needs else {}),
            **({"awaiting_human": True, "blocked_questions": list(t.blocked_questions)}
               if t.awaiting_human else {}),
            **({"approvals": [v.agent for v in t.review_votes if v.commit == t.review_commit]}
               if t.review_votes else {}),
            **({"co_reviewers": [r.agent for r in t.co_reviews]} if t.co_reviews else {})}

def find_task(board: Board, task: str) -> Task:
    t = board.task(task)
    if t is None:
        raise NotFound(f"no task {task!r}", hint="`git liza status` lists the tasks")
    return t

def show_data(liza: Liza, task: str, at: str | None = None) -> dict[str, Any]:
    """`show --json`: one task with its history and the human notes for it."""
    board = liza.store.board(at)[0]
    t = find_task(board, task)
    handoff = board.get("handoff", t.id)
    from gitliza.core import quorum  # only here: the review quorum of the task
    return {**codec.encode(t), "review_quorum": quorum.required(board.config, t),
            "approvals": [v.agent for v in quorum.votes_of(t)],
            "human_notes": [codec.encode(n) for n in notes_for(board, t.id)],
            "agent_logs": [str(p) for p in agent_logs(liza, t.id)],
            "usage": [codec.encode(u) for u in costs.iter_runs(board, t.id)],
            **({"handoff": codec.encode(handoff)} if handoff is not None else {})}

def usage_data(liza: Liza, since: str | None = None, task: str | None = None,
               agent: str | None = None, at: str | None = None,
               all_goals: bool = False) -> dict[str, Any]:
    """`usage --json` (and the MCP `usage` tool): totals by agent, task, role, model and goal,
    of the current goal's runs (every goal's with `all_goals`), and the budgets."""
    board = liza.store.board(at)[0]
    flt = costs.Filter(goal=None if all_goals or not board.initialized else board.goal.id,
                       task=task, agent=agent, since=since)
    cfg = board.config
    return {**costs.report(board, flt).as_json(),
            "budgets": {"tokens_per_task": cfg.budget_tokens_per_task,
                        "tokens_per_goal": cfg.budget_tokens_per_goal,
                        "usd_per_goal": cfg.budget_usd_per_goal,
                        "goal_over": costs.goal_over_budget(board) if board.initialized else None},
            "runs": [codec.encode(u) for u in costs.entries(board, flt)]}

def agent_logs(liza: Liza, task: str) -> list[Any]:
    """The agent runs' logs for `task` kept on this machine (`.liza/agent-logs/`)."""
    from gitliza.git.repository import liza_path
    from gitliza.services import agentlog
    return agentlog.for_task(liza_path(liza.repo), task)

def log_entry(commit: Any) -> dict[str, Any]:
    """One state commit as a log entry (`log --json`, `events`, the MCP log)."""
    import json as _json  # here, not at the top: `status` never reads the trail

    from gitliza.core.encoding import record
    try:
        rec = record.parse(commit.message)
    except LizaError as bad:
        return {"state": str(commit.id), "error": str(bad)}
    tr = rec.trailers
    return {"state": str(commit.id), "time": tr["Liza-Time"], "op": tr["Liza-Op"],
            "actor": tr["Liza-Actor"], "task": tr.get("Liza-Task"),
            "from": tr.get("Liza-From"), "to": tr.get("Liza-To"),
            "args": _json.loads(tr["Liza-Args"]), "summary": rec.subject}

def log_entries(liza: Liza, n: int | None = None, task: str | None = None, by: str | None = None,
                at: str | None = None, everything: bool = True) -> list[dict[str, Any]]:
    """The audit trail, newest first, filtered (every commit, liveness included: the MCP log);
    `everything` False leaves out the bookkeeping rows (supervise, usage, liveness), as `log`
    does without --all."""
    return list(history_log(liza, n=n, task=task, by=by, at=at, liveness=True,
                            bookkeeping=everything))


def history_log(liza: Liza, *, n: int | None = None, task: str | None = None,
                by: str | None = None, at: str | None = None, ops: Sequence[str] = (),
                since: str | None = None, until: str | None = None,
                liveness: bool = False, bookkeeping: bool | None = None
                ) -> Iterator[dict[str, Any]]:
    """`git liza log`: the transitions, newest first; without `liveness`, no heartbeat and no
    supervisor renewal (record.is_liveness); without `bookkeeping` (default: as `liveness`), no
    supervise start/end and no usage row either (record.is_bookkeeping). `since`/`until` are
    timestamps (inclusive); `ops` the op names to keep (shown whatever they are). A commit whose
    message cannot be read is always shown (its error)."""
    if bookkeeping is None:
        bookkeeping = liveness
    from gitliza.core.encoding import record

    wanted = set(ops)
    shown = 0
    for commit in liza.store.history(at):
        if n is not None and shown >= n:
            return
        e = log_entry(commit)
        if "error" not in e and (
                (task is not None and e["task"] != task) or (by is not None and e["actor"] != by)
                or (wanted and e["op"] not in wanted)
                or (not liveness and not wanted and record.is_liveness(e["op"], e["args"]))
                or (not bookkeeping and not wanted
                    and record.is_bookkeeping(e["op"], e["args"]))
                or (since is not None and e["time"] < since)
                or (until is not None and e["time"] > until)):
            continue
        shown += 1
        yield e

def ready_tasks(liza: Liza, at: str | None = None) -> tuple[str, list[Task]]:
    """What the acting agent can take: ("reviewable", tasks) for a reviewer, else
    ("claimable", tasks)."""
    board, _ = liza.store.board(at)
    me = board.agent(liza.agent)
    now = liza.now()
    if me is not None and me.role.value == "code_reviewer":
        return "reviewable", list(_invariants().reviewable(board, now, me.id))
    return "claimable", list(_invariants().claimable(board, now,
                                                     me.id if me is not None else None))


def registered_role(liza: Liza, agent: str) -> str | None:
    """The role the board registers `agent` with (None: not registered, or no board yet)."""
    try:
        me = liza.board().agent(agent)
    except LizaError:
        return None
    return None if me is None else str(me.role.value)
