"""Governance ops: the circuit breaker's verdicts (`circuit`) and the import genesis (`import`).

`circuit` records what `git liza analyze` found in the schema's circuit_breaker section, so every
machine sees a tripped breaker, and records the human's resolution of a trigger.

`import` is the other legal genesis of a chain, beside `init`: its commit holds a whole board read
from a seed-schema state.yaml. Its arguments carry the digest of that board (and of the source
files), not the board: `genesis(op, entities)` checks the entities against the digest and returns
them as the commit's changes, which is what the importer writes and what `verify` recomputes from
the recorded tree (gitliza/interop/genesis.py). Applied anywhere else, it is refused.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Mapping

from gitliza.core import clock

from gitliza.core.encoding import layout, tomlblob
from gitliza.core.board import Board, Key
from gitliza.core.model import CBEntry, CBStatus, CBTrigger
from gitliza.core.ops.base import Ctx, Event, Op, Outcome, need_text, register_op, replace
from gitliza.errors import IllegalTransition, ValidationError

SEVERITIES = ("VISION_FLAW", "SCOPE_FLAW", "SPEC_FLAW", "ARCHITECTURE_FLAW", "TECH_STACK_FLAW",
              "EXTERNAL_DEPENDENCY")


@register_op
@dataclass(frozen=True, kw_only=True)
class Circuit(Op):
    """result OK or TRIGGERED (a check by analyze), or RESOLVED (the human closes a trigger)."""

    NAME = "circuit"
    result: str
    pattern: str | None = None
    severity: str | None = None
    report_file: str | None = None
    resolution: str | None = None

    def run(self, ctx: Ctx) -> None:
        ctx.allowed()
        cb = ctx.board.circuit_breaker
        if self.result == "RESOLVED":
            self._resolve(ctx)
            return
        if self.result == "TRIGGERED":
            need_text(self.pattern, "pattern")
            if self.severity not in SEVERITIES:
                raise ValidationError(f"severity must be one of {', '.join(SEVERITIES)}")
            assert self.pattern is not None and self.severity is not None
            entry = CBEntry(timestamp=self.time, result="TRIGGERED", pattern=self.pattern,
                            severity=self.severity)
            cb = replace(cb, status=CBStatus.TRIGGERED, current_trigger=CBTrigger(
                self.time, self.pattern, self.severity, self.report_file))
            ctx.summary = f"circuit breaker TRIGGERED: {self.pattern} ({self.severity}) by {self.actor}"
        elif self.result == "OK":
            if self.pattern or self.severity or self.resolution:
                raise ValidationError("an OK check has no pattern, severity or resolution")
            entry = CBEntry(timestamp=self.time, result="OK")
            # An open trigger stays open until a human resolves it.
            ctx.summary = f"circuit breaker check OK by {self.actor}"
        else:
            raise ValidationError(f"result must be OK, TRIGGERED or RESOLVED, not {self.result!r}")
        ctx.put("circuit_breaker", "", replace(cb, last_check=self.time,
                                               history=cb.history + (entry,)))

    def _resolve(self, ctx: Ctx) -> None:
        ctx.allowed("circuit:resolve", "resolving a circuit breaker trigger")
        resolution = need_text(self.resolution, "resolution")
        cb = ctx.board.circuit_breaker
        trig = cb.current_trigger
        if cb.status != CBStatus.TRIGGERED or trig is None:
            raise ValidationError("the circuit breaker is not triggered: nothing to resolve")
        # The trigger's history entry gets the resolution (the spec's resolution workflow).
        history = list(cb.history)
        for i in range(len(history) - 1, -1, -1):
            h = history[i]
            if h.result == "TRIGGERED" and h.timestamp == trig.timestamp and h.resolved_at is None:
                history[i] = replace(h, resolution=resolution, resolved_at=self.time)
                break
        else:
            history.append(CBEntry(timestamp=trig.timestamp, result="TRIGGERED",
                                   pattern=trig.pattern, severity=trig.severity,
                                   resolution=resolution, resolved_at=self.time))
        ctx.put("circuit_breaker", "", replace(cb, status=CBStatus.OK, current_trigger=None,
                                               history=tuple(history)))
        ctx.summary = f"circuit breaker resolved ({trig.pattern}) by {self.actor}"


@register_op
@dataclass(frozen=True, kw_only=True)
class Import(Op):
    NAME = "import"
    digest: str                     # board_digest() of the imported entities
    tasks: int = 0                  # counts, for a human reading `git log`
    source_sha256: str | None = None  # the state.yaml file as given
    log_sha256: str | None = None     # its log.yaml, when imported with one
    log_entries: int = 0

    def run(self, ctx: Ctx) -> None:
        raise IllegalTransition("import is only legal as the first commit of a board "
                                "(`git liza import --force` replaces a board)")


def board_digest(entities: Mapping[Key, Any]) -> str:
    """sha256 over the canonical storage of every entity (path and blob, sorted by path): the same
    board always has the same digest, however its YAML was written."""
    h = hashlib.sha256()
    for path, blob in sorted((layout.path_of(c, k), tomlblob.dumps(e))
                             for (c, k), e in entities.items() if e is not None):
        h.update(path.encode() + b"\0" + str(len(blob)).encode() + b"\0" + blob)
    return "sha256:" + h.hexdigest()


def genesis(op: Import, entities: Mapping[Key, Any]) -> Outcome:
    """The import commit's outcome: every entity is a change on the empty board. Refused when the
    entities are not the board the op's digest names."""
    clock.check_ts(op.time, "op time")
    if not entities or ("goal", "") not in entities:
        raise ValidationError("an imported board needs a goal")
    got = board_digest(entities)
    if got != op.digest:
        raise ValidationError(f"the board's digest is {got}, the import records {op.digest}")
    changes = dict(entities)
    board = Board().with_changes(changes)
    _check_references(board)
    n = sum(1 for c, _k in changes if c in ("tasks", "archive"))
    if n != op.tasks:
        raise ValidationError(f"the board has {n} tasks, the import records {op.tasks}")
    summary = f"import {board.goal.id} ({n} tasks) by {op.actor}"
    event = Event(op=op.NAME, actor=op.actor, time=op.time, summary=summary)
    return Outcome(changes=changes, event=event, board=board)


def _check_references(board: Board) -> None:
    """The relational invariants that hold at any time (the per-entity ones are checked on every
    write, verify included); time-dependent ones (a live lease) cannot hold for an old board."""
    from gitliza.core.invariants import find_cycle
    tasks = {t.id: t for t in board.all_tasks()}
    for t in tasks.values():
        for dep in t.depends_on:
            if dep not in tasks:
                raise ValidationError(f"task {t.id} depends on {dep}, which does not exist")
    cycle = find_cycle({t.id: t.depends_on for t in tasks.values()})
    if cycle:
        raise ValidationError(f"circular dependencies: {' -> '.join(cycle)}")
