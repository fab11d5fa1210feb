"""`git liza analyze` on histories built for each circuit-breaker pattern."""
from __future__ import annotations

from typing import Any

import pytest

from gitliza.core.model import CBStatus, SprintStatus
from gitliza.core.ops import AnomalyOp
from gitliza.core.ops.control import Resume
from gitliza.errors import PermissionDenied
from gitliza.git.store import Store
from gitliza.governance.analyze import analyze, resolve
from gitliza.services.verify.engine import verify
from tests.governance.conftest import Team

Details = tuple[tuple[str, Any], ...]
PATTERNS: list[tuple[str, str, str, list[Details]]] = [
    ("retry_cluster", "ARCHITECTURE_FLAW", "retry_loop",
     [(("count", 3), ("error_pattern", "serialization failure"))] * 3),
    ("debt_accumulation", "SCOPE_FLAW", "trade_off",
     [(("what", f"flatten {i}"), ("why", "time"), ("debt_created", True)) for i in range(3)]),
    ("assumption_cascade", "SPEC_FLAW", "assumption_violated",
     [(("assumption", "API paginates"), ("reality", "it does not"))] * 2),
    ("workaround_pattern", "ARCHITECTURE_FLAW", "workaround",
     [(("root_cause", "no nesting in the data model"),)] * 2),
    ("spec_gap_cluster", "SPEC_FLAW", "spec_ambiguity", [(("spec_ref", "specs/api.md#list"),)] * 2),
    ("external_service_outage", "EXTERNAL_DEPENDENCY", "external_blocker",
     [(("blocker_service", "payment-gateway"),)] * 2),
]


def log(team: Team, type_: str, details: list[Details]) -> list[str]:
    commits = []
    for i, d in enumerate(details):
        done = team.do("coder-1", AnomalyOp, type=type_, task=f"task-{i % 3 + 1}", details=d)
        commits.append(done.commit)
    return commits


@pytest.mark.parametrize("pattern,severity,type_,details", PATTERNS, ids=[p[0] for p in PATTERNS])
def test_each_pattern_trips_the_breaker_and_opens_a_checkpoint(
        team: Team, pattern: str, severity: str, type_: str, details: list[Details]) -> None:
    # One short of the threshold: OK, recorded as a check.
    log(team, type_, details[:-1])
    got = analyze(team.human)
    assert got.analysis.triggered is None and got.recorded is not None
    assert team.human.board().circuit_breaker.history[-1].result == "OK"
    commits = log(team, type_, details[-1:])
    got = analyze(team.human)
    hit = got.analysis.triggered
    assert hit is not None and (hit.pattern, hit.severity) == (pattern, severity)
    # The evidence cites the commits that logged the anomalies (read from the history).
    assert commits[0] in [e.commit for e in hit.evidence]
    assert commits[0][:12] in got.report.read_text()
    board = team.human.board()
    cb = board.circuit_breaker
    assert cb.status == CBStatus.TRIGGERED and cb.current_trigger is not None
    assert (cb.current_trigger.pattern, cb.current_trigger.severity) == (pattern, severity)
    assert cb.current_trigger.report_file == ".liza/circuit_breaker_report.md"
    assert board.sprint.status == SprintStatus.CHECKPOINT
    assert board.control.checkpoint_trigger == "circuit_breaker"
    assert verify(Store.discover(team.repo), progress=False).commits > 0


def test_resolution_closes_the_trigger_and_the_window_moves_past_it(team: Team) -> None:
    log(team, "external_blocker", [(("blocker_service", "gw"),)] * 2)
    assert analyze(team.human).analysis.triggered is not None
    # Analyzing again while tripped records nothing new.
    assert analyze(team.human).recorded is None
    with pytest.raises(PermissionDenied):
        resolve(team.as_("planner-1"), "not mine to resolve")
    resolve(team.human, "gateway back; retried")
    team.human.do(Resume, decision="CONTINUE", note="gateway back")
    board = team.human.board()
    cb = board.circuit_breaker
    assert cb.status == CBStatus.OK and cb.current_trigger is None
    entry = [h for h in cb.history if h.result == "TRIGGERED"][-1]
    assert entry.resolution == "gateway back; retried" and entry.resolved_at is not None
    assert board.sprint.status == SprintStatus.IN_PROGRESS
    # The anomalies the human ruled on do not trip it again; new ones do.
    assert analyze(team.human).analysis.triggered is None
    log(team, "external_blocker", [(("blocker_service", "gw"),)] * 2)
    assert analyze(team.human).analysis.triggered is not None


def test_no_record_writes_only_the_report(team: Team) -> None:
    log(team, "spec_ambiguity", [(("spec_ref", "specs/x.md"),)] * 2)
    tip = Store.discover(team.repo).tip()
    got = analyze(team.human, record=False)
    assert got.analysis.triggered is not None and got.recorded is None
    assert Store.discover(team.repo).tip() == tip
    assert "**Pattern:** spec_gap_cluster" in got.report.read_text()
