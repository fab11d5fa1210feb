"""What the team costs (pure): the usage entries of agent runs (`usage/` on the board, one per
run, model.Usage), their totals by agent, task, role, model and goal, the user's price table, and
the budgets that stop runaway work.

Tokens: a run's `input` counts every input token, cached ones included (the CLIs disagree on
this; gitliza/team/usage.py normalises), `cached` is the part of the input read from a cache, and
what a budget counts is input + output. Money is kept in millionths of a US dollar, so sums are
exact; a run without a cost (its CLI gave none and the price table does not cover its model) is
counted as unpriced, never as free.

Budgets are read from the board (config, the task's override) and checked against the spend on
the board, so every supervisor on every machine sees the same spend and the same verdict:
- a task whose runs spent `budget_tokens` (or config.budget_tokens_per_task) is not started
  again: its supervisor blocks it (a `budget_exceeded` anomaly, the watcher's BUDGET alarm);
- a goal whose runs spent config.budget_tokens_per_goal or budget_usd_per_goal holds every
  supervisor (wake.Hold.BUDGET) until a human raises the budget.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

from gitliza.core.board import Board
from gitliza.core.model import Task, Usage, UsageTotal
from gitliza.errors import ValidationError

if TYPE_CHECKING:
    from decimal import Decimal
# decimal is imported where money is parsed, not at module level: `status` imports this module
# for the goal's total, which is integer arithmetic (CLI start-up, docs/conventions.md).

MICRO = 1_000_000  # micro-dollars per dollar
MAX_TOKENS_PER_RUN = 10**10  # more than any model's context times any run's turns: a typo
MAX_USD_PER_RUN = 100_000
MAX_USD_BUDGET = 10**9
COST_SOURCES = ("cli", "report", "prices")


# -- money --------------------------------------------------------------------------------------
def parse_usd(value: object, what: str, most: int = MAX_USD_BUDGET,
              zero: bool = False) -> Decimal:
    """A dollar amount: a decimal number, positive (or zero when `zero`), at most `most`, with
    at most six decimals (a micro-dollar)."""
    from decimal import Decimal, InvalidOperation
    try:
        d = Decimal(str(value).strip())
    except (InvalidOperation, ValueError):
        raise ValidationError(f"{what} must be a dollar amount like 12.50, got {value!r}") from None
    if not d.is_finite() or d < 0 or (d == 0 and not zero):
        raise ValidationError(f"{what} must be a positive dollar amount, got {value!r}")
    if d > most:
        raise ValidationError(f"{what} must be at most {most} dollars, got {value!r}")
    if d != d.quantize(Decimal("0.000001")):
        raise ValidationError(f"{what} has more than six decimals: {value!r}")
    return d


def canonical_usd(value: object, what: str) -> str:
    """config budget_usd_per_goal as stored: the amount without trailing zeros."""
    d = parse_usd(value, what)
    text = format(d.normalize(), "f")
    return text


def micros(d: Decimal | int) -> int:
    return int(d * MICRO)


def usd_exact(m: int) -> str:
    """Micro-dollars as an exact decimal text without trailing zeros: 10800 -> `0.0108`."""
    whole, frac = divmod(m, MICRO)
    return f"{whole}.{frac:06d}".rstrip("0").rstrip(".")


def usd_text(m: int | None) -> str:
    """A cost for people: `$0.0123` (four decimals, rounded; six below a hundredth of a cent)."""
    if m is None:
        return "-"
    if m >= 100 or m == 0:
        q = (m + 50) // 100
        return f"${q // 10000}.{q % 10000:04d}"
    return f"$0.{m:06d}"


# -- the price table ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: Decimal
    output: Decimal
    cached: Decimal | None = None  # None: cached input costs what input costs


def parse_prices(text: str | None) -> dict[str, Price]:
    """`MODEL=IN/OUT[/CACHED] ...` (spaces or commas between entries), USD per million tokens;
    MODEL is a model name as the CLI reports it, or a CLI's name (claude, codex, gemini, mistral,
    command) for its runs whose model is not known."""
    out: dict[str, Price] = {}
    for entry in (text or "").replace(",", " ").split():
        name, eq, rates = entry.partition("=")
        parts = rates.split("/")
        if not eq or not name or len(parts) not in (2, 3):
            raise ValidationError(f"price {entry!r} is not MODEL=IN/OUT[/CACHED] (USD per "
                                  "million tokens)")
        if name in out:
            raise ValidationError(f"price for {name!r} is given twice")
        vals = [parse_usd(p, f"price of {name}", zero=True) for p in parts]
        out[name] = Price(vals[0], vals[1], vals[2] if len(vals) == 3 else None)
    return out


def canonical_prices(text: str) -> str:
    """config prices as stored: entries sorted by name, one space apart."""
    table = parse_prices(text)
    if not table:
        raise ValidationError("config prices must name at least one MODEL=IN/OUT[/CACHED]")

    def num(d: Decimal) -> str:
        return format(d.normalize(), "f")
    return " ".join(f"{k}={num(p.input)}/{num(p.output)}"
                    + (f"/{num(p.cached)}" if p.cached is not None else "")
                    for k, p in sorted(table.items()))


def price_of(prices: str | None, model: str | None, cli: str, input_tokens: int,
             output_tokens: int, cached_tokens: int) -> int | None:
    """The cost in micro-dollars by the price table (the model's row, else the CLI's), or
    None when neither has one. Rounded to the nearest micro-dollar."""
    table = parse_prices(prices)
    p = table.get(model) if model else None
    if p is None:
        p = table.get(cli)
    if p is None:
        return None
    cached_rate = p.cached if p.cached is not None else p.input
    usd = ((input_tokens - cached_tokens) * p.input + cached_tokens * cached_rate
           + output_tokens * p.output) / MICRO
    return int((usd * MICRO).to_integral_value())  # half even, to the micro-dollar



# -- totals -------------------------------------------------------------------------------------
@dataclass
class Totals:
    runs: int = 0
    input: int = 0
    output: int = 0
    cached: int = 0
    cost: int = 0  # micro-dollars of the priced runs
    unpriced: int = 0  # runs with no cost known
    duration: int = 0

    @property
    def tokens(self) -> int:
        return self.input + self.output

    def add(self, u: Usage) -> None:
        self.runs += 1
        self.input += u.input_tokens
        self.output += u.output_tokens
        self.cached += u.cached_tokens
        self.duration += u.duration
        if u.cost_micro_usd is None:
            self.unpriced += 1
        else:
            self.cost += u.cost_micro_usd

    @classmethod
    def of(cls, t: UsageTotal | None) -> Totals:
        if t is None:
            return cls()
        return cls(t.runs, t.input_tokens, t.output_tokens, t.cached_tokens, t.cost_micro_usd,
                   t.unpriced, t.duration)

    def stored(self, scope: str) -> UsageTotal:
        return UsageTotal(scope=scope, runs=self.runs, input_tokens=self.input,
                          output_tokens=self.output, cached_tokens=self.cached,
                          cost_micro_usd=self.cost, unpriced=self.unpriced,
                          duration=self.duration)

    def as_json(self) -> dict[str, object]:
        return {"runs": self.runs, "input_tokens": self.input, "output_tokens": self.output,
                "cached_tokens": self.cached, "tokens": self.tokens,
                "cost_usd": usd_exact(self.cost), "unpriced_runs": self.unpriced,
                "duration": self.duration}

    def line(self) -> str:
        cost = usd_text(self.cost) + (f" (+{self.unpriced} unpriced)" if self.unpriced else "")
        return (f"{self.runs} runs, {self.tokens:,} tokens (in {self.input:,}, out "
                f"{self.output:,}, cached {self.cached:,}), {cost}")


@dataclass(frozen=True)
class Filter:
    goal: str | None = None
    task: str | None = None
    agent: str | None = None
    since: str | None = None  # ISO UTC: runs that ended at or after

    def keep(self, u: Usage) -> bool:
        return ((self.goal is None or u.goal == self.goal)
                and (self.task is None or u.task == self.task)
                and (self.agent is None or u.agent == self.agent)
                and (self.since is None or u.timestamp >= self.since))


def entries(board: Board, flt: Filter = Filter()) -> list[Usage]:
    """The usage entries that pass `flt`, oldest first."""
    return sorted((u for u in board.values("usage") if flt.keep(u)),
                  key=lambda u: (u.timestamp, u.run))


def total(items: Iterable[Usage]) -> Totals:
    t = Totals()
    for u in items:
        t.add(u)
    return t


GROUPS: dict[str, Callable[[Usage], str]] = {
    "agent": lambda u: u.agent, "task": lambda u: u.task or "(planning)",
    "role": lambda u: u.role, "model": lambda u: u.model or f"({u.cli})",
    "goal": lambda u: u.goal,
}


def by(items: Iterable[Usage], group: str) -> dict[str, Totals]:
    key = GROUPS[group]
    out: dict[str, Totals] = {}
    for u in items:
        out.setdefault(key(u), Totals()).add(u)
    return dict(sorted(out.items()))


@dataclass
class Report:
    """Everything `git liza usage` shows."""

    total: Totals
    groups: dict[str, dict[str, Totals]] = field(default_factory=dict)

    def as_json(self) -> dict[str, object]:
        return {"total": self.total.as_json(),
                **{g: {k: t.as_json() for k, t in rows.items()} for g, rows in self.groups.items()}}


def report(board: Board, flt: Filter = Filter()) -> Report:
    items = entries(board, flt)
    return Report(total(items), {g: by(items, g) for g in GROUPS})


def goal_key(goal: str) -> str:
    return f"goal.{goal}"


def task_key(task: str) -> str:
    return f"task.{task}"


def goal_totals(board: Board) -> Totals:
    """What the current goal's runs spent (its running total: one blob)."""
    if not board.initialized:
        return Totals()
    return Totals.of(board.get("usage_totals", goal_key(board.goal.id)))


def task_tokens(board: Board, task: str) -> int:
    return Totals.of(board.get("usage_totals", task_key(task))).tokens


def totals_problems(board: Board) -> list[str]:
    """Running totals that differ from the sum of their entries (`validate`)."""
    want: dict[str, Totals] = {}
    for u in board.values("usage"):
        want.setdefault(goal_key(u.goal), Totals()).add(u)
        if u.task is not None:
            want.setdefault(task_key(u.task), Totals()).add(u)
    have = {k: board.get("usage_totals", k) for k in board.keys("usage_totals")}
    out = [f"usage total {k} does not match its runs" for k in sorted(set(want) | set(have))
           if Totals.of(have.get(k)) != want.get(k, Totals())]
    return out


# -- budgets ------------------------------------------------------------------------------------
# What only the human sets: an agent (the planner included) that could raise a budget or cheapen
# the prices would stop nothing. An agent may tighten a task's budget (add/edit), never loosen it.
HUMAN_KEYS = frozenset({"sandbox_pids_max", "sandbox_memory_max_mb", "sandbox_tmp_max_mb",
                        "sandbox_secret_env",  # the sandbox's limits and secrets, too
                        "sandbox_host_ports", "sandbox_checkout_max_mb",
                        "sandbox_checkout_max_files",
                        "budget_tokens_per_task", "budget_tokens_per_goal", "budget_usd_per_goal",
                        "prices"})


def check_task_budget(board: Board, budget: int | None, human: bool,
                      current: int | None = None) -> None:
    """A per-task budget set by an agent may not exceed the task's budget now (its own, else
    config.budget_tokens_per_task)."""
    cap = current if current is not None else board.config.budget_tokens_per_task
    if budget is not None and not human and cap is not None and budget > cap:
        from gitliza.errors import PermissionDenied
        raise PermissionDenied(f"budget_tokens {budget:,} is above the task's budget ({cap:,}): "
                               "only the human raises a budget")


def task_budget(board: Board, t: Task) -> int | None:
    return t.budget_tokens if t.budget_tokens is not None else board.config.budget_tokens_per_task


def task_over_budget(board: Board, task: str) -> tuple[int, int] | None:
    """(budget, spent) when `task`'s runs spent its token budget, else None."""
    t = board.task(task)
    if t is None:
        return None
    budget = task_budget(board, t)
    if budget is None:
        return None
    spent = task_tokens(board, task)
    return (budget, spent) if spent >= budget else None


def task_budget_reason(budget: int, spent: int) -> str:
    return (f"token budget spent: {spent:,} of {budget:,} tokens (budget_tokens); raise it "
            "(`git liza edit TASK --budget-tokens N` after unblock, or config "
            "budget_tokens_per_task) to go on")


def goal_over_budget(board: Board) -> str | None:
    """Why no run may start on this goal (its token or dollar budget is spent), or None."""
    cfg = board.config
    if cfg.budget_tokens_per_goal is None and cfg.budget_usd_per_goal is None:
        return None  # the common case reads no usage entry
    t = goal_totals(board)
    if cfg.budget_tokens_per_goal is not None and t.tokens >= cfg.budget_tokens_per_goal:
        return (f"goal token budget spent: {t.tokens:,} of {cfg.budget_tokens_per_goal:,} "
                "tokens (config budget_tokens_per_goal)")
    if cfg.budget_usd_per_goal is not None:
        limit = micros(parse_usd(cfg.budget_usd_per_goal, "budget_usd_per_goal"))
        if t.cost >= limit:
            return (f"goal dollar budget spent: {usd_text(t.cost)} of "
                    f"{usd_text(limit)} (config budget_usd_per_goal)")
    return None


def iter_runs(board: Board, task: str) -> Iterator[Usage]:
    """The runs on `task`, oldest first (`git liza show TASK`)."""
    return iter(entries(board, Filter(task=task)))
