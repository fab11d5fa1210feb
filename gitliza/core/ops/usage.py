"""`usage`: what one agent run consumed, recorded by its supervisor when the run ends (one
transition per run, not per model call). Append-only, keyed by the run's id, so a run is recorded
once; the cost is the CLI's or the agent's report, else the board's price table's, else unknown
(gitliza/core/agents/costs.py)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from gitliza.core.agents import costs
from gitliza.core.model import Usage
from gitliza.core.ops.base import Ctx, Op, register_op
from gitliza.core.agents.faults import End
from gitliza.errors import ValidationError

# AGENT.GENERATION.N: the agent id's characters, then two counters (gitliza/team/usage.py)
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}\.[0-9]{1,12}\.[0-9]{1,9}$")
_WORD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+\[\]-]{0,127}$")  # a CLI or model name


def check_tokens(value: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationError(f"{what} must be a whole number of tokens, 0 or more, got {value!r}")
    if value > costs.MAX_TOKENS_PER_RUN:
        raise ValidationError(f"{what} {value:,} is more than any run uses "
                              f"(at most {costs.MAX_TOKENS_PER_RUN:,})")
    return value


def plain_word(value: str | None) -> bool:
    return value is None or bool(_WORD.match(value))


def check_word(value: str | None, what: str) -> None:
    if value is not None and not _WORD.match(value):
        raise ValidationError(f"{what} {value!r} is not a plain name (letters, digits, ._:/@+-[])")


@register_op
@dataclass(frozen=True, kw_only=True)
class RecordUsage(Op):
    NAME = "usage"
    run_id: str
    cli: str
    duration: int
    task: str | None = None
    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_micro_usd: int | None = None
    cost_source: str | None = None
    end: str | None = None  # why the run ended (core/agents/faults.py End)

    def run(self, ctx: Ctx) -> None:
        me = ctx.require_agent()
        if self.end is not None and self.end not in {e.value for e in End}:
            raise ValidationError(f"end {self.end!r} is not one of: "
                                  + ", ".join(e.value for e in End))
        if not RUN_ID.match(self.run_id) or not self.run_id.startswith(me.id + "."):
            raise ValidationError(f"run id {self.run_id!r} is not {me.id}.GENERATION.N")
        check_word(self.cli, "cli")
        check_word(self.model, "model")
        for name in ("input_tokens", "output_tokens", "cached_tokens"):
            check_tokens(getattr(self, name), name)
        if self.cached_tokens > self.input_tokens:
            raise ValidationError(f"cached_tokens ({self.cached_tokens}) cannot exceed "
                                  f"input_tokens ({self.input_tokens}): cached input is input")
        if isinstance(self.duration, bool) or self.duration < 0 or self.duration > 366 * 86400:
            raise ValidationError(f"duration must be 0 to a year in seconds, got {self.duration}")
        cost, source = self.cost_micro_usd, self.cost_source
        if (cost is None) != (source is None) or (source is not None and
                                                  source not in costs.COST_SOURCES):
            raise ValidationError("a cost needs its source (cli, report or prices), and only one")
        if cost is not None and not 0 <= cost <= costs.micros(costs.MAX_USD_PER_RUN):
            raise ValidationError(f"cost of one run must be 0 to ${costs.MAX_USD_PER_RUN}")
        if cost is None:
            cost = costs.price_of(ctx.board.config.prices, self.model, self.cli,
                                  self.input_tokens, self.output_tokens, self.cached_tokens)
            source = "prices" if cost is not None else None
        if self.task is not None:
            ctx.require_task(self.task)
            ctx.task_id = self.task
        if ctx.get("usage", self.run_id) is not None:
            raise ValidationError(f"the usage of run {self.run_id} is already recorded")
        entry = Usage(timestamp=self.time, agent=me.id, role=me.role.value, run=self.run_id,
                      goal=ctx.board.goal.id, cli=self.cli, duration=self.duration,
                      task=self.task, model=self.model, input_tokens=self.input_tokens,
                      output_tokens=self.output_tokens, cached_tokens=self.cached_tokens,
                      cost_micro_usd=cost, cost_source=source, end=self.end)
        ctx.put("usage", self.run_id, entry)
        scopes = [costs.goal_key(entry.goal)] + ([costs.task_key(self.task)] if self.task else [])
        for scope in scopes:
            t = costs.Totals.of(ctx.get("usage_totals", scope))
            t.add(entry)
            ctx.put("usage_totals", scope, t.stored(scope))
        ctx.summary = (f"usage {self.run_id}" + (f" on {self.task}" if self.task else "")
                       + f": {self.input_tokens + self.output_tokens} tokens"
                       + (f", {costs.usd_text(cost)}" if cost is not None else "")
                       + f" by {self.actor}")
