"""What the human is told, off the terminal: the escalation webhook's events, as pure functions.

    human_events(board)          -> the events that are not alarms (a goal's end, a circuit-breaker
                                    trip, a checkpoint opened): they are news, not conditions, so
                                    `watch --once` never counts them as active
    notified(report)             -> whether a watcher's report goes out (fired and escalated ones)
    cause_matcher(alert)         -> how to find the board commit that caused an alert: the newest
                                    commit whose trailers name its task, or one of its ops
    delivery_id(cause, report)   -> the id a receiver dedupes on: the same on every machine that
                                    sees the same cause, whatever board tip it saw it at
    document(...)                -> the one JSON document POSTed (or given to the command)
    backoff(attempt)             -> seconds before a retry

The shell (gitliza/governance/notify.py) claims, sends and retries; docs/governance.md.
"""
from __future__ import annotations

from typing import Iterator

from gitliza.core.reports.alarms import Alert, Level, Report
from gitliza.core.board import Board
from gitliza.core.hashing import sha1
from gitliza.core.model import Task

# The reports that go out: an alarm that starts or gets worse. A resolution is the human's own
# doing most of the time (an answer, a resume), so it is not news to them.
NOTIFIED = ("fired", "escalated")
# Retries: 1, 2, 4 ... 60 s, at most ATTEMPTS sends in all (about 5 minutes), then one log line
# and an alarm.
ATTEMPTS = 8
BACKOFF_MAX = 60.0

# kind -> the ops whose commit caused a board-wide event (the newest such commit is the cause)
_CAUSE_OPS: dict[str, frozenset[str]] = {
    "GOAL_ENDED": frozenset({"complete-goal", "abort-goal", "abort"}),
    "CIRCUIT_TRIPPED": frozenset({"circuit"}),
    "CHECKPOINT_OPENED": frozenset({"checkpoint", "circuit"}),
    "CHECKPOINT": frozenset({"checkpoint", "circuit"}),
    "PAUSE": frozenset({"pause"}),
    "PROVIDER": frozenset({"provider-wait"}),
}
# kind -> the state a task alarm's condition began with: its cause is the newest commit that
# moved the task there (`Liza-To`), not any later commit naming the task (a supervisor's anomaly
# after its block made one BLOCKED event two deliveries under two ids).
_CAUSE_STATES: dict[str, str] = {"BLOCKED": "BLOCKED", "AWAITING_HUMAN": "BLOCKED",
                                 "INTEGRATION_FAILED": "INTEGRATION_FAILED"}
# kind -> the op that recorded a task alarm's condition (a supervisor's anomaly)
_CAUSE_TASK_OPS: dict[str, frozenset[str]] = {"GAVE_UP": frozenset({"anomaly"}),
                                              "BUDGET": frozenset({"anomaly"})}


def notified(report: Report) -> bool:
    return report.event in NOTIFIED


def human_events(board: Board) -> list[Alert]:
    """The events the human hears of besides the alarms, each active while its condition lasts
    (the watcher's fire-once step reports its start)."""
    if not board.initialized:
        return []
    out: list[Alert] = []
    goal = board.goal
    if goal.status != "IN_PROGRESS":
        out.append(Alert("GOAL_ENDED", goal.id, Level.WARNING,
                         f"GOAL {goal.status}: {goal.id} \u2014 {goal.description}"))
    cb = board.circuit_breaker
    if cb.status == "TRIGGERED" and cb.current_trigger is not None:
        tr = cb.current_trigger
        out.append(Alert("CIRCUIT_TRIPPED", tr.timestamp, Level.CRITICAL,
                         f"CIRCUIT BREAKER TRIGGERED: {tr.pattern} ({tr.severity}) \u2014 "
                         "`git liza analyze --resolve TEXT`, then `git liza resume`"))
    if board.sprint.status == "CHECKPOINT":
        since = board.sprint.timeline.checkpoint_at or ""
        out.append(Alert("CHECKPOINT_OPENED", since, Level.WARNING,
                         f"CHECKPOINT: the team waits for the human since {since or 'now'} "
                         "\u2014 `git liza resume --decision ...`"))
    return out


def task_of(alert: Alert) -> str | None:
    """The task an alert is about (APPROACHING_LIMIT's subject carries a suffix), or None."""
    if alert.kind in _CAUSE_OPS or alert.kind in ("INVALID_STATE", "STALLED", "HIGH_APPROVAL_RATE",
                                                  "SUPERVISOR_SILENT", "IMMEDIATE_DISCOVERY",
                                                  "PROVIDER", "DROPPED_OPS"):
        return None
    return alert.subject.split(":", 1)[0] or None


def cause_matcher(alert: Alert) -> tuple[str | None, frozenset[str]]:
    """(task, ops): the cause is the newest state commit with `Liza-Task: task` (when a task is
    named) or with `Liza-Op` among `ops`; neither: the board tip the event was seen at. A task
    alarm's own state or op narrows it (`cause_state`, `matches`)."""
    return task_of(alert), _CAUSE_OPS.get(alert.kind, frozenset())


def cause_state(alert: Alert) -> tuple[str | None, frozenset[str]]:
    """(the `Liza-To` state, the `Liza-Op`s) a task alarm's cause must also have."""
    return _CAUSE_STATES.get(alert.kind), _CAUSE_TASK_OPS.get(alert.kind, frozenset())


def trailer(message: str, key: str) -> str | None:
    """One trailer's value from a state commit's message, without parsing the op (cheap: the
    cause walk reads many messages)."""
    prefix = key + ": "
    for line in reversed(message.splitlines()):
        if line.startswith(prefix):
            return line[len(prefix):].strip()
    return None


def matches(message: str, task: str | None, ops: frozenset[str], to: str | None = None,
            task_ops: frozenset[str] = frozenset()) -> bool:
    if task is not None and trailer(message, "Liza-Task") == task:
        return (to is None or trailer(message, "Liza-To") == to) and \
            (not task_ops or trailer(message, "Liza-Op") in task_ops)
    return bool(ops) and trailer(message, "Liza-Op") in ops


def delivery_id(cause: str, report: Report) -> str:
    """The dedupe id: the causing board commit and the event. Two machines, or a watcher and a
    team, that see the same cause compute the same id, so one sender wins the claim on it."""
    a = report.alert
    text = f"{cause}\0{report.event}\0{a.kind}\0{a.subject}\0{a.stage}"
    return str(sha1(text.encode()).hexdigest())[:32]


def agent_of(board: Board, alert: Alert) -> str | None:
    """The agent an event is about: the task's coder or reviewer, else the last actor on it."""
    if alert.kind == "SUPERVISOR_SILENT":
        return alert.subject
    task = task_of(alert)
    t: Task | None = board.task(task) if task and board.initialized else None
    if t is None:
        return None
    if t.reviewing_by and alert.kind == "REVIEW_LEASE_EXPIRED":
        return t.reviewing_by
    if t.assigned_to:
        return t.assigned_to
    return next((h.agent for h in reversed(t.history) if h.agent), None)


def link(web_url: str | None, alert: Alert) -> str | None:
    """The web board's page of the event (its task's page, else the board), where one runs."""
    if not web_url:
        return None
    base = web_url.rstrip("/")
    task = task_of(alert)
    return f"{base}/task/{task}" if task else f"{base}/"


def document(board: Board, report: Report, *, ident: str, cause: str, tip: str | None,
             web_url: str | None, repository: str | None = None) -> dict[str, object]:
    """The JSON document of one event (docs/governance.md, "The escalation webhook")."""
    a = report.alert
    task = task_of(a)
    t = board.task(task) if task and board.initialized else None
    doc: dict[str, object] = {
        "id": ident, "event": a.kind, "change": report.event, "level": a.level.value,
        "stage": a.stage, "task": task, "agent": agent_of(board, a), "line": report.line(),
        "text": a.text, "time": report.time, "board_commit": cause, "board_tip": tip,
        "goal": board.goal.id if board.initialized else None, "link": link(web_url, a),
        "repository": repository,
    }
    if t is not None and t.status == "BLOCKED":
        doc["questions"] = list(t.blocked_questions)
        doc["awaiting_human"] = bool(getattr(t, "awaiting_human", False))
    return doc


def backoff(attempt: int) -> float:
    """Seconds before retry `attempt` (1-based): 1, 2, 4 ... capped at BACKOFF_MAX."""
    return float(min(BACKOFF_MAX, 2.0 ** max(attempt - 1, 0)))


def failure_alert(target: str, why: str) -> Alert:
    """The alarm a delivery that ran out of retries raises (the human hears of it on the
    terminal, in alerts.log and on the desktop: the webhook is what failed)."""
    return Alert("NOTIFY_FAILED", target, Level.CRITICAL,
                 f"NOTIFY FAILED: {target} \u2014 {why}")


def events(board: Board, active: list[Alert]) -> Iterator[Alert]:
    """The alarms and the human events together (what the notifier's own step compares)."""
    yield from active
    yield from human_events(board)
