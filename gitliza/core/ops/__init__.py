"""All ops, the package's public face. Op classes are loaded on first use (PEP 562): a CLI
command pays only for the op module it runs; `load_all()` (replay, `op_from_record`) registers
every op in `OPS`. The face re-exports the names defined in ops/base.py and ops/engine.py so that
callers can write `from gitliza.core.ops import Claim, apply` without knowing which module an op
lives in."""
from __future__ import annotations

import importlib
from typing import Any

from gitliza.core.ops.base import OPS, Ctx, Event, Op, Outcome, load_all, op_from_record
from gitliza.core.ops.engine import apply

_WHERE = {
    "AnomalyOp": "journal", "Convert": "journal", "Discover": "journal", "Note": "journal",
    "SpecChangeOp": "journal",
    "AbortGoal": "goal", "CompleteGoal": "goal", "ConfigSet": "goal", "Init": "goal",
    "Register": "goal",
    "Abandon": "planning", "Add": "planning", "AddTasks": "planning", "Edit": "planning",
    "Finalize": "planning", "NewTask": "planning",
    "Rescope": "planning", "Unblock": "planning",
    "Block": "work", "Claim": "work", "HandoffOp": "work", "Heartbeat": "work", "Reassign": "work",
    "Release": "work", "Submit": "work",
    "ClaimReview": "review", "Merge": "review", "Verdict": "review",
    "RootCause": "review",
    "CarryApproval": "integration", "Conflict": "integration",
    "AbortOp": "control", "Checkpoint": "control", "Pause": "control", "Resume": "control",
    "Supervise": "control",
    "Circuit": "governance", "Import": "governance", "SprintScopeOp": "sprint",
    "Rekey": "keys", "Seal": "keys", "RecordUsage": "usage", "Upgrade": "upgrade",
}

__all__ = ["OPS", "Ctx", "Event", "Op", "Outcome", "apply", "load_all", "op_from_record",
           *_WHERE]


def __getattr__(name: str) -> Any:
    mod = _WHERE.get(name)
    if mod is None:
        raise AttributeError(name)
    return getattr(importlib.import_module(f"gitliza.core.ops.{mod}"), name)
