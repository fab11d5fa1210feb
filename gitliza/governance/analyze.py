"""`git liza analyze`: the circuit breaker (specs/circuit-breaker.md, liza-analyze.sh).

The patterns are computed by the core (core/agents/circuit.py) from the board and the history
read from git (the commits that logged each anomaly are cited as evidence). The report goes to
`.liza/circuit_breaker_report.md`; the verdict is recorded on the board (`circuit` op: last_check,
status, current_trigger, history), and a trigger opens a CHECKPOINT (the board's checkpoint op,
trigger `circuit_breaker`) so every machine halts. `--resolve TEXT` is the human closing a trigger.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gitliza import atomic
from gitliza.services.api import Liza
from gitliza.core.agents import circuit
from gitliza.core.model import CBStatus, SprintStatus
from gitliza.core.ops.governance import Circuit
from gitliza.git.store import Committed
from gitliza.governance.checkpoint import Opened, liza_dir, open_checkpoint
from gitliza.governance.history import logged

REPORT = "circuit_breaker_report.md"


@dataclass(frozen=True)
class Analyzed:
    analysis: circuit.Analysis
    report: Path
    recorded: Committed | None
    checkpoint: Opened | None


def analyze(liza: Liza, *, record: bool = True) -> Analyzed:
    store = liza.store
    board = liza.board()
    start = circuit.window_start(board)
    result = circuit.analyze(board, logged(store, since=start))
    now = liza.now()
    path = liza_dir(store) / REPORT
    rel = f".liza/{REPORT}"
    atomic.write(path.parent, REPORT, circuit.report(result, now, rel).encode())
    if not record:
        return Analyzed(result, path, None, None)
    hit = result.triggered
    if hit is not None and board.circuit_breaker.status == CBStatus.TRIGGERED:
        return Analyzed(result, path, None, None)  # already tripped: the human resolves it first
    if hit is None:
        return Analyzed(result, path, liza.do(Circuit, result="OK"), None)
    done = liza.do(Circuit, result="TRIGGERED", pattern=hit.pattern, severity=hit.severity,
                   report_file=rel)
    opened = None
    if done.outcome.board.sprint.status == SprintStatus.IN_PROGRESS:
        opened = open_checkpoint(liza, f"circuit breaker: {hit.pattern} ({hit.severity})",
                                 "circuit_breaker")
    return Analyzed(result, path, done, opened)


def resolve(liza: Liza, resolution: str) -> Committed:
    return liza.do(Circuit, result="RESOLVED", resolution=resolution)
