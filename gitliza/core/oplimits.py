"""The limits the ops enforce on what they write, checked on an entity however it arrived.

An op refuses a 5 MB description (`need_text`: 4,000 characters) and a non-positive or too long
per-task limit. A board read from a file (`import`,
`validate FILE`) did not come through the ops, so the same limits are checked here on each entity
it holds: whatever an op would refuse to write, an import refuses too.
"""
from __future__ import annotations

from typing import Any

from gitliza.core.model import Discovery, Goal, Handoff, HumanNote, SpecChange, Task
from gitliza.core.config import CONFIG_MAX
from gitliza.core.ids import spec_ref_leaves

# (entity, field) -> the longest text the op that writes it takes (need_text's default: 4,000).
_TEXT: dict[type, dict[str, int]] = {
    Task: {"description": 4000, "done_when": 4000, "scope": 4000},
    Goal: {"description": 4000},
    Discovery: {"description": 4000},
    Handoff: {"summary": 200, "next_action": 200},
    HumanNote: {"message": 4000},
    SpecChange: {"spec": 4000, "change": 4000},
}


def problems(entity: Any) -> list[str]:
    """What an op would refuse in `entity` (empty: nothing)."""
    out: list[str] = []
    spec_ref = getattr(entity, "spec_ref", None) if isinstance(entity, (Task, Goal)) else None
    leaves = spec_ref_leaves(spec_ref) if isinstance(spec_ref, str) and spec_ref else None
    if leaves:
        out.append(leaves)
    for name, most in _TEXT.get(type(entity), {}).items():
        value = getattr(entity, name)
        if isinstance(value, str) and len(value) > most:
            out.append(f"{name} is longer than {most} characters ({len(value):,})")
    if isinstance(entity, Task):
        for name in ("max_iterations", "max_review_cycles", "lease_duration_override"):
            v = getattr(entity, name)
            if v is not None and v <= 0:
                out.append(f"{name} must be a positive integer, got {v}")
        b = entity.budget_tokens
        if b is not None and not 0 < b <= CONFIG_MAX["budget_tokens_per_task"]:
            out.append(f"budget_tokens must be a positive integer at most "
                       f"{CONFIG_MAX['budget_tokens_per_task']}, got {b}")
        lease = entity.lease_duration_override
        if lease is not None and lease > CONFIG_MAX["lease_duration"]:
            out.append(f"lease_duration_override must be at most {CONFIG_MAX['lease_duration']} "
                       f"seconds, got {lease}")
    return out

