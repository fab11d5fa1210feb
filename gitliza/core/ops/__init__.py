"""All ops. Importing this package registers every op in `OPS` (name -> record class)."""
from __future__ import annotations

from gitliza.core.ops.base import OPS, Ctx, Event, Op, Outcome, apply, op_from_record
from gitliza.core.ops.journal import AnomalyOp, Discover, Note, SpecChangeOp
from gitliza.core.ops.planning import (Abandon, Add, ConfigSet, Finalize, Init, Register, Rescope,
                                       Unblock)
from gitliza.core.ops.work import (Block, Claim, ClaimReview, HandoffOp, Heartbeat, Merge,
                                   Release, Submit, Verdict)

__all__ = [
    "OPS", "Ctx", "Event", "Op", "Outcome", "apply", "op_from_record",
    "AnomalyOp", "Discover", "Note", "SpecChangeOp",
    "Abandon", "Add", "ConfigSet", "Finalize", "Init", "Register", "Rescope", "Unblock",
    "Block", "Claim", "ClaimReview", "HandoffOp", "Heartbeat", "Merge", "Release", "Submit",
    "Verdict",
]
