"""`.liza/usage.yaml`: what the goal's agent runs used and cost, for people (totals, by agent,
task, role, model and goal, the budgets), written with `.liza/state.yaml` from the same state.
Rewritten only when the board's `usage/` tree changed (its id heads the file), so a transition
that records no run costs one short read."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gitliza import atomic
from gitliza.core.agents import costs
from gitliza.core.board import Board

USAGE_FILE = "usage.yaml"


def _q(v: Any) -> str:
    return json.dumps(v) if isinstance(v, str) else str(v)  # a JSON string is a YAML string


def render(board: Board, tree_id: str) -> str:
    report: dict[str, Any] = costs.report(board, costs.Filter(goal=board.goal.id)).as_json()
    cfg = board.config
    lines = [f"# usage/ {tree_id} (gitliza: `git liza usage`; do not edit)",
             f"goal: {_q(board.goal.id)}",
             "budgets:", f"  tokens_per_task: {_q(cfg.budget_tokens_per_task or 'none')}",
             f"  tokens_per_goal: {_q(cfg.budget_tokens_per_goal or 'none')}",
             f"  usd_per_goal: {_q(cfg.budget_usd_per_goal or 'none')}"]
    over = costs.goal_over_budget(board)
    if over:
        lines.append(f"  spent: {_q(over)}")
    for name, data in report.items():
        rows: dict[str, Any] = {"": data} if name == "total" else data
        lines.append(f"{name}:" + (" {}" if not rows else ""))
        for key, t in rows.items():
            pad = "  "
            if key:
                lines.append(f"  {_q(key)}:")
                pad = "    "
            lines += [f"{pad}{k}: {_q(v)}" for k, v in t.items()]
    return "\n".join(lines) + "\n"


def write(board: Board, tree: Any, directory: Path) -> bool:
    """Bring `.liza/usage.yaml` up to `tree`'s `usage/` (absent: no file); True if written."""
    path = directory / USAGE_FILE
    entry = tree["usage"] if "usage" in tree else None
    if entry is None or not board.initialized:
        if path.exists():
            path.unlink()
            return True
        return False
    tree_id = str(entry.id)
    try:
        with path.open() as f:
            if tree_id in f.readline():
                return False
    except OSError:
        pass
    atomic.write(directory, USAGE_FILE, render(board, tree_id).encode())
    return True
