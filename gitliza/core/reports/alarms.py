"""The watcher's alarms (tooling.md "Alarm Conditions"), as pure functions.

    evaluate(board, facts)            -> the alarms active now
    next_deadline(board, facts)       -> when one could start or escalate unchanged (the sleep)
    step(previous, active, now)       -> the new alert state and what to report (fired, ...)

The watcher (gitliza/governance/watch.py) supplies the board, the clock and the facts outside
it (the last state commit's time, a `.liza/PAUSE` or `.liza/CHECKPOINT` file). Thresholds are
board config (`alarm_*` keys, THRESHOLDS); unset: the seed's (liza-watch.sh, sprint-governance.md).

An alarm is identified by its key (kind, subject); its text may change while it stays active (a
duration grows) without being reported again. Staged alarms (checkpoint and pause age) escalate.

Not split: every condition the watcher reports is read here, in one pass over the board, beside
the one deadline function that must know each of them (a rule's own reading lives in its module:
quorum.py, agents/costs.py, agents/faults.py).
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from enum import StrEnum
from typing import Iterable, Iterator, Mapping

from gitliza.core import clock, forgerules as forge

from gitliza.core.agents import faults as provider

from gitliza.core.reports import metrics
from gitliza.core.board import Board
from gitliza.core.invariants import check_board
from gitliza.core.model import Anomaly, Config, SprintStatus, Task, Urgency
from gitliza.core.quorum import rubber_stamp_fix
from gitliza.core.quorumreach import shortfalls
from gitliza.core.states import TERMINAL, AgentState, TaskState
from gitliza.core.agents.costs import goal_over_budget

S = TaskState

# config key -> the seed's value in seconds
THRESHOLDS: dict[str, int] = {
    "alarm_lease_grace": 120,          # liza-watch.sh LEASE_GRACE_PERIOD
    "alarm_orphan_grace": 30,          # orphaned REJECTED grace
    "alarm_stall": 1800,               # goal stalled: no state change
    "alarm_stale_draft": 1800,         # DRAFT never finalized
    "alarm_checkpoint_stale": 1800,    # CHECKPOINT STALE
    "alarm_checkpoint_stuck": 7200,    # CHECKPOINT STUCK (writes .liza/ESCALATION)
    "alarm_checkpoint_abandoned": 28800,  # CHECKPOINT ABANDONED? (suggests abort)
    "alarm_pause_stale": 1800,         # STALE PAUSE
    "alarm_pause_forgotten": 7200,     # PAUSE FORGOTTEN?
    "alarm_provider_down": 900,        # a model provider refusing a supervisor (core/agents/faults.py)
}
# How close to a limit "approaching" starts (the seed: 8/10 iterations, 3/5 review cycles).
ITERATION_MARGIN = 2
REVIEW_MARGIN = 2


class Level(StrEnum):
    WARNING = "warning"
    CRITICAL = "critical"


ICON = {Level.WARNING: "\u26a0\ufe0f", Level.CRITICAL: "\U0001f6a8"}


@dataclass(frozen=True, slots=True)
class Facts:
    """What the board does not say. Times are ISO UTC strings."""

    now: str
    last_change: str | None = None       # Liza-Time of the newest state commit
    pause_since: str | None = None       # the board is paused (or `.liza/PAUSE` exists) since
    checkpoint_since: str | None = None  # a `.liza/CHECKPOINT` file exists since (else the board)
    invalid: str | None = None           # a problem the shell found (e.g. an unreadable board)
    # CLAIMED tasks' worktree paths that do not exist on this machine (the shell looked)
    missing_worktrees: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Alert:
    kind: str      # LEASE_EXPIRED, BLOCKED, ...
    subject: str   # the task, discovery or limit it is about ("" for board-wide alarms)
    level: Level
    text: str      # the seed's line, e.g. "LEASE EXPIRED: coder-1 on task-3"
    stage: int = 0  # escalation stage (checkpoint, pause); higher is worse

    @property
    def key(self) -> tuple[str, str]:
        return self.kind, self.subject

    def line(self) -> str:
        return f"{ICON[self.level]} {self.text}"


@dataclass(frozen=True, slots=True)
class Report:
    """One thing to tell the human: an alarm that started, escalated or ended."""

    event: str  # "fired", "escalated", "resolved"
    alert: Alert
    time: str

    def line(self) -> str:
        if self.event == "resolved":
            return f"\u2705 RESOLVED: {self.alert.text}"
        return self.alert.line()

    def as_json(self) -> dict[str, object]:
        return {"time": self.time, "event": self.event, "kind": self.alert.kind,
                "subject": self.alert.subject or None, "level": self.alert.level.value,
                "stage": self.alert.stage, "text": self.alert.text, "line": self.line()}


def thresholds(config: Config) -> dict[str, int]:
    """The alarm thresholds in seconds: board config where set, else the seed's."""
    out = dict(THRESHOLDS)
    for f in fields(config):
        if f.name in out:
            v = getattr(config, f.name)
            if v is not None:
                out[f.name] = v
    return out


def _age(since: str, now: str) -> int:
    return clock.to_epoch(now) - clock.to_epoch(since)


def _minutes(seconds: int) -> int:
    return max(seconds, 0) // 60


def _duration(seconds: int) -> str:
    m = _minutes(seconds)
    return f"{m // 60}h {m % 60}m" if m >= 60 else f"{m}min"


def _limit(task: Task, config: Config, name: str) -> int:
    if name == "iterations":
        return task.max_iterations or config.max_coder_iterations
    return task.max_review_cycles or config.max_review_cycles


def _first_claimer(task: Task) -> str | None:
    for h in task.history:
        if h.event == "claimed" and h.agent:
            return h.agent
    return None


def _since_last(task: Task, event: str) -> str:
    for h in reversed(task.history):
        if h.event == event:
            return h.time
    return task.history[-1].time if task.history else task.created


def _task_alerts(board: Board, t: Task, config: Config, th: Mapping[str, int],
                 now: str) -> Iterator[Alert]:
    W, C = Level.WARNING, Level.CRITICAL
    grace = th["alarm_lease_grace"]
    if t.status == S.CLAIMED and t.lease_expires and _age(t.lease_expires, now) > grace:
        yield Alert("LEASE_EXPIRED", t.id, W, f"LEASE EXPIRED: {t.assigned_to} on {t.id}")
    if t.status == S.READY_FOR_REVIEW and t.reviewing_by and t.review_lease_expires and \
            _age(t.review_lease_expires, now) > grace:
        yield Alert("REVIEW_LEASE_EXPIRED", t.id, W, f"REVIEW LEASE EXPIRED: {t.reviewing_by} "
                    f"on {t.id} \u2014 review can be reclaimed")
    if t.status == S.BLOCKED and t.awaiting_human:  # the human's questions (block --for-human)
        yield Alert("AWAITING_HUMAN", t.id, C, f"AWAITING HUMAN: {t.id} \u2014 "
                    f"{' / '.join(t.blocked_questions)} (`git liza unblock {t.id} --answer TEXT`)")
    elif t.status == S.BLOCKED:
        yield Alert("BLOCKED", t.id, W, f"BLOCKED: {t.id} \u2014 {t.blocked_reason or 'no reason'}")
    if t.status == S.REJECTED and t.assigned_to:
        holder = board.agent(t.assigned_to)
        on_it = holder is not None and holder.current_task == t.id and \
            holder.status in (AgentState.WORKING, AgentState.WAITING)
        since = _since_last(t, "rejected")
        if not on_it and _age(since, now) > th["alarm_orphan_grace"]:
            status = str(holder.status) if holder is not None else "MISSING"
            yield Alert("ORPHANED_REJECTED", t.id, C, f"ORPHANED REJECTED: {t.id} \u2014 assigned "
                        f"to {t.assigned_to} but agent is {status}")
    if t.status == S.CLAIMED:
        first = _first_claimer(t)
        if first and t.assigned_to and first != t.assigned_to:
            yield Alert("REASSIGNED", t.id, W, f"REASSIGNED: {t.id} \u2014 now {t.assigned_to} "
                        f"(was {first}), hypothesis exhaustion risk")
    cliff = _limit(t, config, "reviews")
    cycles = t.review_cycles_current
    if cycles >= cliff:
        yield Alert("REVIEW_LOOP", t.id, C, f"REVIEW LOOP: {t.id} \u2014 {cycles} cycles (at cliff)")
    if t.status == S.INTEGRATION_FAILED:
        yield Alert("INTEGRATION_FAILED", t.id, C, f"INTEGRATION FAILED: {t.id}")
    if len(t.failed_by) >= 2:
        yield Alert("HYPOTHESIS_EXHAUSTION", t.id, C,
                    f"HYPOTHESIS EXHAUSTION: {t.id} \u2014 requires rescope")
    max_iter = _limit(t, config, "iterations")
    if t.status == S.CLAIMED and t.iteration is not None and \
            max_iter - ITERATION_MARGIN <= t.iteration < max_iter:
        yield Alert("APPROACHING_LIMIT", f"{t.id}:iteration", W,
                    f"APPROACHING LIMIT: {t.id} \u2014 iteration {t.iteration}/{max_iter}")
    if cliff - REVIEW_MARGIN <= cycles < cliff and cycles > 0:
        yield Alert("APPROACHING_LIMIT", f"{t.id}:review", W,
                    f"APPROACHING LIMIT: {t.id} \u2014 review cycle {cycles}/{cliff}")
    if len(t.failed_by) == 1 and cycles >= cliff - REVIEW_MARGIN and cycles > 0:
        yield Alert("APPROACHING_LIMIT", f"{t.id}:failures", W,
                    f"APPROACHING LIMIT: {t.id} \u2014 1 coder failed + {cycles} review cycles "
                    "(hypothesis exhaustion risk)")
    spent = _budget_spent(board, t)
    if spent is not None:
        yield Alert("BUDGET", t.id, C, f"BUDGET: {t.id} \u2014 {spent.reporter}'s supervisor "
                    f"stopped it: {spent.detail().get('spent')} of {spent.detail().get('budget')}"
                    " tokens spent")
    gave_up = _gave_up(board, t)
    if gave_up is not None:
        yield Alert("GAVE_UP", t.id, C, f"GAVE UP: {gave_up.reporter}'s supervisor on {t.id} "
                    f"\u2014 {gave_up.detail().get('error_pattern', 'no progress')}")
    if t.status == S.DRAFT:
        age = _age(t.created, now)
        if age > th["alarm_stale_draft"]:
            yield Alert("STALE_DRAFT", t.id, W, f"STALE DRAFT: {t.id} \u2014 created "
                        f"{_minutes(age)}min ago, never finalized (Planner crash?)")


GAVE_UP_DETAIL = "supervisor_gave_up"  # the retry_loop anomaly detail a supervisor writes


def _gave_up(board: Board, t: Task) -> Anomaly | None:
    """The supervisor's give-up anomaly on `t`, while nothing has happened to the task since (a
    planner's unblock, a new claim or review resolves it)."""
    last = t.history[-1].time if t.history else t.created
    for a in board.values("anomalies"):
        if a.task == t.id and a.type == "retry_loop" and a.timestamp >= last and \
                GAVE_UP_DETAIL in a.detail():
            return a  # type: ignore[no-any-return]
    return None


def _budget_spent(board: Board, t: Task) -> Anomaly | None:
    """A supervisor's budget_exceeded anomaly on `t`, while nothing has happened to the task
    since (an unblock or a new claim resolves it)."""
    last = t.history[-1].time if t.history else t.created
    for a in board.values("anomalies"):
        if a.task == t.id and a.type == "budget_exceeded" and a.timestamp >= last:
            return a  # type: ignore[no-any-return]
    return None


def checkpoint_since(board: Board, facts: Facts) -> str | None:
    """When the open checkpoint started: the file's time, else the board's sprint CHECKPOINT."""
    if facts.checkpoint_since is not None:
        return facts.checkpoint_since
    if board.initialized and board.sprint.status == SprintStatus.CHECKPOINT:
        tl = board.sprint.timeline
        return tl.checkpoint_at or tl.started
    return None


def _checkpoint_alert(since: str, th: Mapping[str, int], now: str) -> Alert | None:
    age = _age(since, now)
    if age > th["alarm_checkpoint_abandoned"]:
        return Alert("CHECKPOINT", "", Level.CRITICAL, "CHECKPOINT ABANDONED?: no human response "
                     f"for {age // 3600} hours", 3)
    if age > th["alarm_checkpoint_stuck"]:
        return Alert("CHECKPOINT", "", Level.CRITICAL, "CHECKPOINT STUCK: no human response for "
                     f"{_minutes(age)} minutes", 2)
    if age > th["alarm_checkpoint_stale"]:
        return Alert("CHECKPOINT", "", Level.WARNING, "CHECKPOINT STALE: waiting for human for "
                     f"{_minutes(age)} minutes", 1)
    return None


def _pause_alert(since: str, th: Mapping[str, int], now: str) -> Alert | None:
    age = _age(since, now)
    if age > th["alarm_pause_forgotten"]:
        return Alert("PAUSE", "", Level.CRITICAL, f"PAUSE FORGOTTEN?: PAUSE file exists for "
                     f"{_minutes(age)}min \u2014 remove to resume", 2)
    if age > th["alarm_pause_stale"]:
        return Alert("PAUSE", "", Level.WARNING, f"STALE PAUSE: PAUSE file exists for "
                     f"{_minutes(age)}min \u2014 forgotten?", 1)
    return None


def evaluate(board: Board, facts: Facts) -> list[Alert]:
    """Every alarm active at `facts.now`, in a stable order."""
    now = facts.now
    out: list[Alert] = []
    if facts.invalid:
        out.append(Alert("INVALID_STATE", "", Level.CRITICAL, f"INVALID STATE: {facts.invalid}"))
    if not board.initialized:
        return out
    config = board.config
    th = thresholds(config)
    for t in sorted(board.tasks(), key=lambda t: t.id):
        out.extend(_task_alerts(board, t, config, th, now))
    out.extend(_silent_supervisors(board, th, now))
    out.extend(Alert("PROVIDER", cli, Level.CRITICAL, text)  # core/agents/faults.py says when
               for cli, text in provider.alarms(board, th["alarm_provider_down"], now))
    out.extend(Alert("FORGE", tid, Level.WARNING, text)  # core/forgerules.py says when
               for tid, text in forge.alarms(board, now))
    for d in sorted(board.values("discovered"), key=lambda d: d.id):
        if d.urgency == Urgency.IMMEDIATE and not d.converted_to_task:
            out.append(Alert("IMMEDIATE_DISCOVERY", d.id, Level.CRITICAL, f"IMMEDIATE DISCOVERY: "
                             f"{d.id} \u2014 {d.description} (Planner should wake)"))
    if not facts.invalid:
        problems = [p for p in check_board(board, now,
                                           lambda wt: wt not in facts.missing_worktrees)
                    if not p.warning]
        if problems:
            more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
            out.append(Alert("INVALID_STATE", "", Level.CRITICAL,
                             f"INVALID STATE: {problems[0]}{more}"))
    over = goal_over_budget(board)
    if over is not None and board.goal.status == "IN_PROGRESS":
        out.append(Alert("BUDGET", "", Level.CRITICAL, f"BUDGET: {over} \u2014 no agent run "
                         "starts until a human raises it"))
    warning = metrics.rubber_stamp_warning(
        metrics.compute(board.all_tasks(), sprint_started=board.sprint.timeline.started))
    if warning:
        warning += rubber_stamp_fix(board.config)  # the warning becomes an action
        out.append(Alert("HIGH_APPROVAL_RATE", "", Level.WARNING, warning))
    out += [Alert("QUORUM_UNREACHABLE", tid, Level.WARNING, ln) for tid, ln in shortfalls(board)]
    if _working(board) and facts.last_change is not None:
        idle = _age(facts.last_change, now)
        if idle > th["alarm_stall"] and facts.pause_since is None and \
                checkpoint_since(board, facts) is None:
            out.append(Alert("STALLED", "", Level.WARNING,
                             f"STALLED: no progress for {_duration(idle)}"))
    since = checkpoint_since(board, facts)
    if since is not None:
        a = _checkpoint_alert(since, th, now)
        if a is not None:
            out.append(a)
    if facts.pause_since is not None:
        a = _pause_alert(facts.pause_since, th, now)
        if a is not None:
            out.append(a)
    out.sort(key=lambda a: a.kind != "AWAITING_HUMAN")  # the team waits on those: first
    return out


def _silent_supervisors(board: Board, th: Mapping[str, int], now: str) -> Iterator[Alert]:
    """A supervisor token past its expiry (and the lease grace) that was never given back: its
    supervisor died, or is wedged (its lease keeper stops renewing once the loop stops moving,
    gitliza/team/heartbeat.py). Resolved when a new supervisor takes the id or `doctor --fix`
    frees it."""
    for sup in sorted(board.values("supervisors"), key=lambda s: s.agent):
        if sup.expires is not None and _age(sup.expires, now) > th["alarm_lease_grace"]:
            where = f", pid {sup.pid} on {sup.host}" if sup.pid is not None else ""
            yield Alert("SUPERVISOR_SILENT", sup.agent, Level.WARNING,
                        f"SUPERVISOR SILENT: {sup.agent}'s supervisor (generation "
                        f"{sup.generation}{where}) stopped renewing its token at {sup.expires} "
                        "\u2014 dead or wedged: `git liza doctor`")


def _working(board: Board) -> bool:
    """A goal in progress with live work: a finished or empty board is not 'stalled'."""
    return board.goal.status == "IN_PROGRESS" and any(
        t.status not in TERMINAL for t in board.tasks())


def next_deadline(board: Board, facts: Facts) -> str | None:
    """The earliest time after `facts.now` at which `evaluate` could change with the board and the
    facts unchanged (a lease passes its grace, a draft or a checkpoint ages...), or None."""
    now = facts.now
    if not board.initialized:
        return None
    th = thresholds(board.config)
    times: list[str] = []

    def at(since: str | None, seconds: int) -> None:
        if since is not None:
            times.append(clock.plus(since, seconds + 1))  # alarms fire strictly after

    for t in board.tasks():
        if t.status == S.CLAIMED:
            at(t.lease_expires, th["alarm_lease_grace"])
        elif t.status == S.READY_FOR_REVIEW and t.reviewing_by:
            at(t.review_lease_expires, th["alarm_lease_grace"])
        elif t.status == S.REJECTED:
            at(_since_last(t, "rejected"), th["alarm_orphan_grace"])
        elif t.status == S.DRAFT:
            at(t.created, th["alarm_stale_draft"])
    for sup in board.values("supervisors"):
        at(sup.expires, th["alarm_lease_grace"])
    times += provider.alarm_times(board, th["alarm_provider_down"], now)
    if _working(board):
        at(facts.last_change, th["alarm_stall"])
    since = checkpoint_since(board, facts)
    for k in ("alarm_checkpoint_stale", "alarm_checkpoint_stuck", "alarm_checkpoint_abandoned"):
        at(since, th[k])
    for k in ("alarm_pause_stale", "alarm_pause_forgotten"):
        at(facts.pause_since, th[k])
    # A WORKING agent's expired lease is only a warning of `validate` (liza-validate.sh), never
    # INVALID STATE: the lease alarm above reports it.
    future = [t for t in times if t > now]
    return min(future) if future else None


State = Mapping[tuple[str, str], Alert]


def step(previous: State, active: Iterable[Alert], now: str
         ) -> tuple[dict[tuple[str, str], Alert], list[Report]]:
    """Fire once, escalate, resolve: compare what was active with what is active now."""
    current: dict[tuple[str, str], Alert] = {}
    reports: list[Report] = []
    for a in active:
        current[a.key] = a
        old = previous.get(a.key)
        if old is None:
            reports.append(Report("fired", a, now))
        elif a.stage > old.stage:
            reports.append(Report("escalated", a, now))
        elif a.stage < old.stage:
            # A stage never goes down while the condition lasts; keep the reported one.
            current[a.key] = replace(a, stage=old.stage)
    for key, old in previous.items():
        if key not in current:
            reports.append(Report("resolved", old, now))
    return current, reports


def escalation_text(board: Board, alert: Alert, since: str, now: str) -> str:
    """The `.liza/ESCALATION` file of sprint-governance.md for a stuck or abandoned checkpoint."""
    word = "CHECKPOINT_ABANDONED" if alert.stage >= 3 else "CHECKPOINT_STUCK"
    age = _age(since, now)
    waiting = sorted((t for t in board.tasks() if t.status not in TERMINAL), key=lambda t: t.id)
    listed = ", ".join(f"{t.id} {t.status.value}" for t in waiting[:10]) + \
        (", ..." if len(waiting) > 10 else "")
    lines = [f"{word} since {since} ({age // 3600}h {(age % 3600) // 60}m)",
             f"Sprint: {board.sprint.id if board.initialized else 'none'}",
             f"Tasks waiting: {len(waiting)}" + (f" ({listed})" if waiting else ""),
             "Action required: `git liza resume` to continue, or `git liza abort` to stop"]
    lines += ["Suggestion: no human response for 8h+; consider aborting"] * (alert.stage >= 3)
    return "\n".join(lines) + "\n"
