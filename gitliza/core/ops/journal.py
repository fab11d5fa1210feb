"""Append-only sections: discover, anomaly, note, spec-change."""
from __future__ import annotations

from dataclasses import dataclass

from gitliza.core.board import journal_key
from gitliza.core.ids import check_id
from gitliza.core.model import (ANOMALY_REQUIRED, Anomaly, Discovery, HumanNote, Severity,
                                SpecChange, Urgency)
from gitliza.core.ops.base import Ctx, Op, need_text, register_op, replace
from gitliza.core.states import ANOMALY_LOGGERS, Role
from gitliza.errors import NotFound, PermissionDenied, ValidationError

DetailValue = str | int | bool


def _task_ref(ctx: Ctx, task: str | None) -> None:
    if task is not None:
        ctx.require_task(task)
        ctx.task_id = task


_ENTRY = {"anomalies": "anomaly", "human_notes": "human note", "spec_changes": "spec change",
          "discovered": "discovery"}


def _append(ctx: Ctx, coll: str, entry: object, ordered: bool = False) -> None:
    """Append `entry`. `ordered` (every op recorded since format 1.1 says so): an entry in the same
    second as earlier ones is keyed after them (`STAMP.NNNN-digest` sorts after `STAMP-...` and
    in NNNN order), so that append order holds, and an identical entry is a new entry; without
    it (older boards, replayed as written) the key is `STAMP-digest` and a repeat is refused."""
    key = journal_key(entry, ctx.op.time)
    if ordered:
        stamp = key.partition("-")[0]
        same = sum(1 for k in ctx.board.keys(coll) if k.startswith((stamp + "-", stamp + ".")))
        same += sum(1 for (c, k) in ctx.changes if c == coll and k.startswith(stamp))
        if same:
            key = f"{stamp}.{same:04d}-{key.partition('-')[2]}"
    if ctx.get(coll, key) is not None:
        raise ValidationError(f"this {_ENTRY.get(coll, 'entry')} is already recorded")
    ctx.put(coll, key, entry)


@register_op
@dataclass(frozen=True, kw_only=True)
class Discover(Op):
    NAME = "discover"
    id: str
    description: str
    during: str | None = None
    severity: str = "medium"
    urgency: str = "deferred"
    recommendation: str | None = None

    def run(self, ctx: Ctx) -> None:
        ctx.require_agent()
        check_id(self.id, "discovery id")
        if ctx.get("discovered", self.id) is not None:
            raise ValidationError(f"discovery {self.id} already exists")
        need_text(self.description, "description")
        try:
            sev, urg = Severity(self.severity), Urgency(self.urgency)
        except ValueError:
            raise ValidationError("severity is critical|high|medium|low and urgency is "
                                  "immediate|deferred") from None
        _task_ref(ctx, self.during)
        ctx.put("discovered", self.id, Discovery(
            id=self.id, by=self.actor, description=self.description, created=self.time,
            during=self.during, severity=sev, urgency=urg, recommendation=self.recommendation))
        ctx.summary = f"discover {self.id} ({sev.value}, {urg.value}) by {self.actor}"


@register_op
@dataclass(frozen=True, kw_only=True)
class Convert(Op):
    """The planner turned a discovery into a task (`converted_to_task`): the discovery stops being
    an open wake condition (an immediate one wakes the planner until it is converted)."""

    NAME = "convert"
    discovery: str
    task: str

    def run(self, ctx: Ctx) -> None:
        ctx.allowed()
        check_id(self.discovery, "discovery id")
        d = ctx.get("discovered", self.discovery)
        if d is None:
            raise NotFound(f"no discovery {self.discovery!r}",
                           hint="`git liza status --json` lists them under discovered")
        if d.converted_to_task is not None:
            raise ValidationError(f"discovery {d.id} is already converted to "
                                  f"{d.converted_to_task}")
        ctx.require_task(self.task)
        ctx.task_id = self.task
        ctx.put("discovered", d.id, replace(d, converted_to_task=self.task))
        ctx.summary = f"convert {d.id} to {self.task} by {self.actor}"


def canonical_details(details: tuple[tuple[str, DetailValue], ...]
                      ) -> tuple[tuple[str, DetailValue], ...]:
    """The detail mapping in the one order both the live write and the replay produce.

    The op's args are recorded as JSON with sorted keys (record.args_json), so a replay sees the
    details sorted whatever order the user typed them in; the entity (and its journal key, a digest
    of its bytes) must therefore not depend on that order either. Sorted by key is also the order
    every anomaly that replayed before this rule had, so older valid histories still verify.
    Duplicate keys are refused: the recorded JSON object would keep only one of them."""
    seen: set[str] = set()
    for key, value in details:
        if not isinstance(key, str) or not key.strip():
            raise ValidationError("anomaly detail keys must be non-empty text")
        if key in seen:
            raise ValidationError(f"anomaly detail {key!r} is given twice")
        seen.add(key)
        if isinstance(value, int) and not isinstance(value, bool) and \
                not -2**63 <= value < 2**63:
            raise ValidationError(f"anomaly detail {key!r}: {value} does not fit in 64 bits")
    return tuple(sorted(details, key=lambda kv: kv[0]))


@register_op
@dataclass(frozen=True, kw_only=True)
class AnomalyOp(Op):
    NAME = "anomaly"
    type: str
    details: tuple[tuple[str, DetailValue], ...] = ()
    task: str | None = None
    ordered: bool = False  # see _append; also: the type is checked against the logger's role

    def run(self, ctx: Ctx) -> None:
        role = ctx.role()  # any registered agent or the human
        required = ANOMALY_REQUIRED.get(self.type)
        if required is None:
            raise ValidationError(f"anomaly type {self.type!r} is not one of: "
                                  + ", ".join(ANOMALY_REQUIRED))
        details = canonical_details(self.details)
        have = {k for k, _ in details}
        missing = [f for f in required if f not in have]
        if missing:
            raise ValidationError(f"anomaly {self.type} needs details: {', '.join(missing)}")
        loggers = ANOMALY_LOGGERS[self.type]
        if self.ordered and role != Role.HUMAN and role not in loggers:
            raise PermissionDenied(f"a {self.type} anomaly is logged by "
                                   + " or ".join(sorted(r.value for r in loggers))
                                   + f", not {self.actor} ({role.value})")
        _task_ref(ctx, self.task)
        _append(ctx, "anomalies", Anomaly(timestamp=self.time, type=self.type,
                                          reporter=self.actor, task=self.task, details=details),
                self.ordered)
        ctx.summary = f"anomaly {self.type}" + (f" on {self.task}" if self.task else "") + \
            f" by {self.actor}"


@register_op
@dataclass(frozen=True, kw_only=True)
class Note(Op):
    NAME = "note"
    message: str
    for_task: str | None = None
    ordered: bool = False  # see _append

    def run(self, ctx: Ctx) -> None:
        need_text(self.message, "message")
        _task_ref(ctx, self.for_task)
        _append(ctx, "human_notes", HumanNote(timestamp=self.time, message=self.message,
                                              for_task=self.for_task, author=self.actor),
                self.ordered)
        ctx.summary = "note" + (f" for {self.for_task}" if self.for_task else "") + \
            f" by {self.actor}"


@register_op
@dataclass(frozen=True, kw_only=True)
class SpecChangeOp(Op):
    NAME = "spec-change"
    spec: str
    change: str
    triggered_by: str | None = None
    ordered: bool = False  # see _append

    def run(self, ctx: Ctx) -> None:
        ctx.allowed()
        need_text(self.spec, "spec")
        need_text(self.change, "change")
        _append(ctx, "spec_changes", SpecChange(timestamp=self.time, spec=self.spec,
                                                change=self.change,
                                                triggered_by=self.triggered_by), self.ordered)
        ctx.summary = f"spec-change {self.spec} by {self.actor}"
