"""`git liza usage` (what the team's runs cost: totals by agent, task, role, model and goal) and
`git liza usage report` (an agent's own report of what it used in the current run)."""
from __future__ import annotations

import os
import re

from gitliza.cli.commands import Env
from gitliza.core import clock
from gitliza.core.agents import costs as core_usage
from gitliza.errors import ValidationError

_AGO = re.compile(r"^([0-9]{1,6})([mhd])$")
_UNIT = {"m": 60, "h": 3600, "d": 86400}


def since_time(text: str | None, now: str) -> str | None:
    """--since: an ISO UTC time, or a span back from now (30m, 12h, 7d)."""
    if text is None:
        return None
    m = _AGO.match(text.strip())
    if m:
        return clock.plus(now, -int(m.group(1)) * _UNIT[m.group(2)])
    try:
        return clock.check_ts(text.strip(), "--since")
    except ValidationError:
        raise ValidationError(f"--since must be a time like 2026-01-31T12:00:00Z or a span like "
                              f"30m, 12h, 7d; got {text!r}") from None


def show(env: Env, since: str | None, task: str | None, by: str | None, all_goals: bool,
         at: str | None) -> int:
    from gitliza.services.views.data import usage_data
    liza = env.liza()
    data = usage_data(liza, since_time(since, liza.now()), task, by, at, all_goals)
    if env.json:
        env.out.json(data)
        return 0
    out = env.out
    t = data["total"]
    out.line(f"total: {t['runs']} runs, {t['tokens']:,} tokens (in {t['input_tokens']:,}, out "
             f"{t['output_tokens']:,}, cached {t['cached_tokens']:,}), ${t['cost_usd']}"
             + (f" (+{t['unpriced_runs']} unpriced runs)" if t["unpriced_runs"] else ""))
    b = data["budgets"]
    if any(v is not None for v in b.values()):
        out.line("budgets: " + ", ".join(f"{k} {v}" for k, v in b.items()
                                         if v is not None and k != "goal_over"))
        if b["goal_over"]:
            out.line(f"  {b['goal_over']}: no agent run starts")
    for group in core_usage.GROUPS:
        rows = data[group]
        if not rows:
            continue
        out.table(f"by {group}", [group, "runs", "tokens", "input", "output", "cached", "cost"],
                  [[k, r["runs"], r["tokens"], r["input_tokens"], r["output_tokens"],
                    r["cached_tokens"], "$" + r["cost_usd"]
                    + (f" (+{r['unpriced_runs']} unpriced)" if r["unpriced_runs"] else "")]
                   for k, r in rows.items()])
    return 0


def report(env: Env, input_tokens: int, output_tokens: int, cached_tokens: int,
           cost: str | None, model: str | None) -> int:
    from gitliza.git.repository import liza_path
    from gitliza.team import usage
    liza = env.liza()
    run = usage.report(liza_path(liza.repo), os.environ, input_tokens=input_tokens,
                       output_tokens=output_tokens, cached_tokens=cached_tokens, cost=cost,
                       model=model)
    env.out.result({"run": run, "input": input_tokens, "output": output_tokens,
                    "cached": cached_tokens, "cost": cost, "model": model},
                   f"usage of run {run}: {input_tokens:,} in, {output_tokens:,} out reported")
    return 0
