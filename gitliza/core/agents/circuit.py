"""The circuit breaker's pattern rules (specs/circuit-breaker.md), pure.

The input is the board (its anomalies journal, sprint and circuit breaker sections) and its history:
the state commits that recorded each anomaly, oldest first, which the shell reads from git. The
history places every anomaly on the chain (the commit cited as evidence) and fixes the window.

Window: the current sprint (the spec's `window: current_sprint`), starting later if a trigger was
resolved since: anomalies a human already ruled on do not fire the breaker again.

Matching is the spec's v1: `similar()` and `same()` are exact string matches (liza-analyze.sh's
`group_by`), so `timeout` and `connection timeout` are counted apart.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from gitliza.core.board import Board
from gitliza.core.model import Anomaly


@dataclass(frozen=True, slots=True)
class Logged:
    """One state commit of the history, as far as the breaker cares."""

    commit: str
    time: str
    op: str
    actor: str
    task: str | None = None


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    description: str
    types: tuple[str, ...]
    severity: str
    threshold: int
    group: Callable[[Anomaly], str | None]  # the value anomalies must share (None: not counted)


def _detail(*names: str) -> Callable[[Anomaly], str | None]:
    def get(a: Anomaly) -> str | None:
        d = a.detail()
        for n in names:
            v = d.get(n)
            if v is not None:
                return str(v)
        return None
    return get


def _debt(a: Anomaly) -> str | None:
    return "debt_created" if a.detail().get("debt_created") in (True, "true") else None


RULES: tuple[Rule, ...] = (
    Rule("retry_cluster", "Same error type recurring across tasks", ("retry_loop",),
         "ARCHITECTURE_FLAW", 3, _detail("error_pattern")),
    Rule("debt_accumulation", "Multiple trade-offs creating debt", ("trade_off",),
         "SCOPE_FLAW", 3, _debt),
    Rule("assumption_cascade", "Same assumption failing across tasks", ("assumption_violated",),
         "SPEC_FLAW", 2, _detail("assumption")),
    Rule("workaround_pattern", "Multiple workarounds for similar issues",
         ("workaround", "trade_off"), "ARCHITECTURE_FLAW", 2, _detail("root_cause", "what")),
    Rule("spec_gap_cluster", "Multiple tasks hitting spec ambiguity",
         ("spec_ambiguity", "spec_gap"), "SPEC_FLAW", 2, _detail("spec_ref")),
    Rule("external_service_outage", "Same external service blocking multiple tasks",
         ("external_blocker",), "EXTERNAL_DEPENDENCY", 2, _detail("blocker_service")),
)


@dataclass(frozen=True, slots=True)
class Evidence:
    anomaly: Anomaly
    commit: str | None  # the state commit that recorded it (None: before the history given)


@dataclass(frozen=True, slots=True)
class Finding:
    pattern: str
    severity: str
    description: str
    shared: str                  # the value the anomalies share (error pattern, service...)
    evidence: tuple[Evidence, ...]

    @property
    def tasks(self) -> list[str]:
        return sorted({e.anomaly.task for e in self.evidence if e.anomaly.task})

    def summary(self) -> str:
        where = f" on {', '.join(self.tasks)}" if self.tasks else ""
        return (f"{self.pattern} ({self.severity}): {len(self.evidence)} "
                f"{'/'.join(sorted({e.anomaly.type for e in self.evidence}))} anomalies share "
                f"{self.shared!r}{where}")


@dataclass(frozen=True, slots=True)
class Analysis:
    window_start: str | None
    anomalies: int               # anomalies in the window
    findings: tuple[Finding, ...]

    @property
    def triggered(self) -> Finding | None:
        """The pattern that trips the breaker: the first of the spec's rules that matched."""
        return self.findings[0] if self.findings else None


def window_start(board: Board) -> str | None:
    """Start of the current sprint, or the last resolution of a trigger if later."""
    start = board.sprint.timeline.started if board.initialized else None
    for h in board.circuit_breaker.history:
        if h.resolved_at and (start is None or h.resolved_at > start):
            start = h.resolved_at
    return start


def _recorded_by(history: Sequence[Logged]) -> Callable[[Anomaly], str | None]:
    """The commit that logged an anomaly: the one by its reporter at its timestamp (an anomaly
    carries its op's time and actor, whichever op wrote it: `anomaly`, a claim that hit the
    iteration limit, a block at hypothesis exhaustion)."""
    index: dict[tuple[str, str], str] = {}
    for h in history:
        index.setdefault((h.time, h.actor), h.commit)
    return lambda a: index.get((a.timestamp, a.reporter))


def analyze(board: Board, history: Iterable[Logged] = ()) -> Analysis:
    start = window_start(board)
    found = [a for a in board.values("anomalies") if start is None or a.timestamp >= start]
    found.sort(key=lambda a: a.timestamp)
    commit_of = _recorded_by(list(history))
    findings: list[Finding] = []
    for rule in RULES:
        groups: dict[str, list[Anomaly]] = {}
        for a in found:
            if a.type in rule.types:
                key = rule.group(a)
                if key is not None:
                    groups.setdefault(key, []).append(a)
        for shared, members in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            if len(members) >= rule.threshold:
                findings.append(Finding(rule.name, rule.severity, rule.description, shared,
                                        tuple(Evidence(a, commit_of(a)) for a in members)))
    return Analysis(start, len(found), tuple(findings))


def report(analysis: Analysis, now: str, report_file: str) -> str:
    """`.liza/circuit_breaker_report.md` in the spec's format."""
    hit = analysis.triggered
    lines = ["# Circuit Breaker Report", ""]
    if hit is None:
        lines += [f"**Checked:** {now}", "**Result:** OK \u2014 no patterns detected", "",
                  f"Anomalies in the window (since {analysis.window_start or 'the start'}): "
                  f"{analysis.anomalies}", ""]
        return "\n".join(lines)
    lines += [f"**Triggered:** {now}", f"**Pattern:** {hit.pattern}",
              f"**Severity:** {hit.severity}", "", "## Trigger Evidence", "",
              "| Task | Anomaly | Shared value | Reporter | Logged at | Commit |",
              "|------|---------|--------------|----------|-----------|--------|"]
    for e in hit.evidence:
        a = e.anomaly
        lines.append(f"| {a.task or '-'} | {a.type} | {hit.shared} | {a.reporter} | "
                     f"{a.timestamp} | {(e.commit or '-')[:12]} |")
    lines += ["", f"**Common factor:** {hit.description.lower()}: {hit.shared!r}", ""]
    others = analysis.findings[1:]
    if others:
        lines += ["## Other Patterns Detected", ""]
        lines += [f"- {f.summary()}" for f in others]
        lines.append("")
    lines += ["## Recommended Actions", "1. HALT current sprint (done: CHECKPOINT opened)",
              "2. Review the evidence above and the anomalies on the board",
              "3. Update the affected specs, contracts or architecture",
              "4. RESUME with the decision recorded (`git liza resume --decision ...`)", "",
              "## Human Decision Required", "- [ ] Acknowledge report",
              "- [ ] Confirm severity assessment", "- [ ] Determine remediation",
              "- [ ] Release checkpoint with decision logged", "",
              f"_Report file: {report_file}_", ""]
    return "\n".join(lines)
