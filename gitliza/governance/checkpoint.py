"""`git liza checkpoint`: open a checkpoint on the board and write the sprint summary the reference
writes (`.liza/sprint_summary.md`, liza-checkpoint.sh) for the human's review.

The checkpoint itself is the board's `checkpoint` op (gitliza/core/ops/control.py): the sprint goes
to CHECKPOINT on every machine, supervisors wait, `git liza resume --decision ...` ends it with the
decision recorded. The summary adds what the reference's has (task counts, durations of merged
tasks, anomalies, blocked tasks) and the metrics of every sprint in the history.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gitliza import atomic
from gitliza.core import clock, mergequeue
from gitliza.core.agents import costs
from gitliza.core.reports import metrics
from gitliza.core.board import Board
from gitliza.core.ops.control import Checkpoint
from gitliza.core.states import TaskState
from gitliza.git.store import Committed, Store
from gitliza.git import repository
from gitliza.governance.history import SprintSpan, sprint_metrics

SUMMARY = "sprint_summary.md"
S = TaskState
DONE = (S.MERGED, S.ABANDONED, S.SUPERSEDED)
IN_PROGRESS = (S.CLAIMED, S.READY_FOR_REVIEW, S.REJECTED)


def liza_dir(store: Store) -> Path:
    """`.liza/` to write a report into: made if missing, refused when tracked or a link."""
    return repository.liza_dir(store.repo)


def _hours(a: str, b: str) -> str:
    return f"{(clock.to_epoch(b) - clock.to_epoch(a)) / 3600:.1f}h"


def _first(events: list[tuple[str, str]], name: str) -> str | None:
    return next((t for e, t in events if e == name), None)


def summary(board: Board, now: str, spans: list[SprintSpan], state: str,
            cut: str | None = None) -> str:
    """The sprint summary (pure: the board, the time and the per-sprint metrics; `cut`: where the
    history this clone holds stops, git/remotes/shallow.py `note`)."""
    sp = board.sprint
    tasks = sorted(board.all_tasks(), key=lambda t: t.id)
    count = {k: sum(1 for t in tasks if t.status in v) for k, v in
             (("done", DONE), ("progress", IN_PROGRESS), ("blocked", (S.BLOCKED,)),
              ("unclaimed", (S.UNCLAIMED,)))}
    started, deadline = sp.timeline.started, sp.timeline.deadline
    lines = ["# Sprint Summary", "",
             f"**Generated:** {now}", f"**Sprint:** {sp.id} ({sp.status.value})",
             f"**Goal:** {board.goal.id}: {board.goal.description}",
             f"**Started:** {started or 'unknown'}", f"**Deadline:** {deadline or 'none'}",
             f"**Elapsed:** {_hours(started, now) if started else 'unknown'}",
             f"**Board:** refs/liza/state {state[:12]}", "",
             "## Task Status", "", "| Status | Count |", "|--------|-------|",
             f"| Done (MERGED/ABANDONED/SUPERSEDED) | {count['done']} |",
             f"| In Progress (CLAIMED/READY_FOR_REVIEW/REJECTED) | {count['progress']} |",
             f"| Blocked | {count['blocked']} |", f"| Unclaimed | {count['unclaimed']} |",
             f"| **Total** | {len(tasks)} |", "",
             "## Task Durations (Completed)", "", "| Task | Duration |", "|------|----------|"]
    for t in tasks:
        ev = [(h.event, h.time) for h in t.history]
        created, merged = _first(ev, "created") or t.created, _first(ev, "merged")
        if t.status == S.MERGED and merged:
            lines.append(f"| {t.id} | {_hours(created, merged)} |")
    m = metrics.compute(tasks, since=started, sprint_started=started)
    lines += ["", "## Metrics (this sprint)", "", "| Metric | Value |", "|--------|-------|"]
    for name in ("iterations_total", "review_cycles_total", "review_verdict_count",
                 "review_verdict_approval_rate_percent", "task_submitted_for_review_count",
                 "task_outcome_approval_rate_percent"):
        v = getattr(m, name)
        lines.append(f"| {name} | {'n/a' if v is None else v} |")
    waited, asked, still = metrics.human_wait(tasks, now, since=started)
    lines.append(f"| time_waiting_for_human | {_hours(now, clock.plus(now, waited))} over "
                 f"{asked} question(s){f', {still} still open' if still else ''} |")
    warning = metrics.rubber_stamp_warning(m)
    if warning:
        lines += ["", f"**{warning}**"]
    flow = mergequeue.figures(board, now)
    lines += ["", "## Flow (conflicts, reviews, merge queue)", "", "| Figure | Value |",
              "|--------|-------|"]
    lines += [f"| {k} | {'n/a' if v is None else v} |" for k, v in flow.items()]
    if spans:
        lines += ["", "## Sprints in the History", ""]
        if cut is not None:
            lines += [f"Only the sprints this clone holds: {cut}.", ""]
        lines += ["| Sprint | Goal | Started | Ended | Done | Iterations | Verdicts | Approval % |",
                  "|--------|------|---------|-------|------|------------|----------|------------|"]
        for s in spans:
            rate = s.metrics.review_verdict_approval_rate_percent
            lines.append(f"| {s.sprint} | {s.goal} | {s.started or '-'} | {s.ended or '-'} | "
                         f"{s.metrics.tasks_done} | {s.metrics.iterations_total} | "
                         f"{s.metrics.review_verdict_count} | {'n/a' if rate is None else rate} |")
    lines += usage_lines(board, started)
    anomalies = list(board.values("anomalies"))
    lines += ["", "## Anomalies", "", f"Total logged: {len(anomalies)}", ""]
    for a in anomalies:
        details = ", ".join(f"{k}={v}" for k, v in a.details)
        lines.append(f"- [{a.type}] {a.task or '-'}: {details}")
    lines += ["", "## Blocked Tasks", ""]
    blocked = [t for t in tasks if t.status == S.BLOCKED]
    for t in blocked:
        lines += [f"### {t.id}", f"**Reason:** {t.blocked_reason or 'no reason'}", "**Questions:**"]
        lines += [f"- {q}" for q in t.blocked_questions] + [""]
    if not blocked:
        lines += ["None", ""]
    lines += ["## Human Review Checklist", "", "- [ ] Review task progress",
              "- [ ] Review anomalies for patterns", "- [ ] Check goal alignment",
              "- [ ] Decide: CONTINUE / ADJUST_SPECS / ADJUST_CONTRACTS / REPLAN / PIVOT / STOP",
              "", "## To Resume", "", "```bash",
              'git liza resume --decision CONTINUE --note "why"   # or: git liza abort', "```", ""]
    return "\n".join(lines)


def usage_lines(board: Board, started: str | None) -> list[str]:
    """## Usage: this sprint's agent runs and the goal's, by agent and by task, and the budgets."""
    sprint = costs.entries(board, costs.Filter(goal=board.goal.id, since=started))
    goal = costs.goal_totals(board)
    lines = ["", "## Usage", "", f"**This sprint:** {costs.total(sprint).line()}",
             f"**Goal:** {goal.line()}"]
    cfg = board.config
    budgets = [f"{k} {v}" for k, v in (("tokens per task", cfg.budget_tokens_per_task),
                                       ("tokens per goal", cfg.budget_tokens_per_goal),
                                       ("USD per goal", cfg.budget_usd_per_goal)) if v is not None]
    if budgets:
        lines.append(f"**Budgets:** {', '.join(budgets)}")
    over = costs.goal_over_budget(board)
    if over:
        lines.append(f"**{over}: no agent run starts until it is raised**")
    for group in ("agent", "task"):
        rows = costs.by(sprint, group)
        if rows:
            lines += ["", f"| {group.title()} | Runs | Tokens | Cost |", "|---|---|---|---|"]
            lines += [f"| {k} | {t.runs} | {t.tokens:,} | {costs.usd_text(t.cost)}"
                      + (f" (+{t.unpriced} unpriced)" if t.unpriced else "") + " |"
                      for k, t in rows.items()]
    return lines


@dataclass(frozen=True)
class Opened:
    done: Committed | None  # None: a checkpoint was already open (the summary is refreshed)
    summary: Path


def write_summary(store: Store, now: str) -> Path:
    board, commit = store.board()
    assert commit is not None
    from gitliza.git.remotes import shallow
    text = summary(board, now, sprint_metrics(store), str(commit.id),
                   shallow.note(store.repo, commit.id))
    path = liza_dir(store) / SUMMARY
    atomic.write(path.parent, SUMMARY, text.encode())
    return path


def open_checkpoint(liza: object, reason: str, trigger: str = "manual") -> Opened:
    """The board's checkpoint op, then the summary (which reads the board with the checkpoint)."""
    from gitliza.services.api import Liza
    assert isinstance(liza, Liza)
    done = liza.do(Checkpoint, reason=reason, trigger=trigger)
    return Opened(done, write_summary(liza.store, liza.now()))
