"""All ops, the package's public face. Op classes are loaded on first use: a CLI command pays
only for the op module it runs, and imports an op from its module (`from gitliza.core.ops.work
import Claim`: typed, and nothing else loaded); `load_all()` (replay, `op_from_record`) imports
every module of the package, found on disk, and each registers its ops with `@register_op`, so
the registry `OPS` is derived, never listed. The face re-exports what ops/base.py and
ops/engine.py define, and finds any op class by name (`from gitliza.core.ops import Claim`, for
scripts and tests: that loads every op module) without a second list of where each op lives."""
from __future__ import annotations

from typing import Any

from gitliza.core.ops.base import OPS, Ctx, Event, Op, Outcome, load_all, op_from_record
from gitliza.core.ops.engine import apply

__all__ = ["OPS", "Ctx", "Event", "Op", "Outcome", "apply", "load_all", "op_from_record"]


def __getattr__(name: str) -> Any:
    import sys
    load_all()
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith(__name__ + "."):
            found = module.__dict__.get(name)
            if isinstance(found, type) and found.__module__ == module.__name__:
                globals()[name] = found  # found once
                return found
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
