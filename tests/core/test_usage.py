"""The usage op, the price table, totals and budgets (pure: boards built by real ops)."""
from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from gitliza.core.agents import costs

from gitliza.core.encoding import codec

from gitliza.core.reports import alarms
from gitliza.core.board import Board
from gitliza.core.invariants import check_board
from gitliza.core.model import Config, Task, Usage
from gitliza.core.ops import ConfigSet, Edit, apply
from gitliza.core.ops.usage import RecordUsage
from gitliza.core.states import TaskState
from gitliza.core.agents.wake import Hold, hold
from gitliza.errors import LizaError, PermissionDenied, ValidationError
from tests.core.boards import Runner, add_ready, claim, team


def _run(r: Runner, n: int = 1, agent: str = "coder-1", task: str | None = "task-1",
         **kw: Any) -> Any:
    args: dict[str, Any] = dict(run_id=f"{agent}.1.{n}", cli="command", duration=7, task=task,
                                input_tokens=800, output_tokens=200, cached_tokens=100)
    args.update(kw)
    return r.do(RecordUsage, agent, **args)


def _board() -> Runner:
    r = team()
    add_ready(r)
    claim(r)
    return r


def test_a_run_is_recorded_once_with_the_agents_role_and_the_goal() -> None:
    r = _board()
    out = _run(r)
    assert out.event.task == "task-1" and out.event.from_state is None
    # The entry and the goal's and the task's running totals; nothing else moves.
    assert sorted(out.changes) == [("usage", "coder-1.1.1"),
                                   ("usage_totals", f"goal.{r.board.goal.id}"),
                                   ("usage_totals", "task.task-1")]
    u = r.board.get("usage", "coder-1.1.1")
    assert (u.agent, u.role, u.goal, u.input_tokens, u.output_tokens, u.cached_tokens,
            u.cost_micro_usd, u.cost_source) == ("coder-1", "coder", r.board.goal.id, 800, 200,
                                                 100, None, None)
    with pytest.raises(ValidationError, match="already recorded"):
        _run(r)
    assert codec.decode(Usage, codec.encode(u)) == u


@pytest.mark.parametrize("kw,match", [
    ({"input_tokens": -1}, "0 or more"),
    ({"output_tokens": 10**11}, "more than any run uses"),
    ({"cached_tokens": 900}, "cannot exceed"),
    ({"run_id": "coder-2.1.1"}, "is not coder-1"),
    ({"run_id": "coder-1"}, "is not coder-1"),
    ({"cost_micro_usd": 5}, "needs its source"),
    ({"cost_micro_usd": 5, "cost_source": "guess"}, "needs its source"),
    ({"cost_micro_usd": -5, "cost_source": "cli"}, "cost of one run"),
    ({"task": "nope"}, "no task"),
    ({"model": "a b"}, "not a plain name"),
    ({"duration": -1}, "duration"),
])
def test_bad_usage_is_refused_and_changes_nothing(kw: dict[str, Any], match: str) -> None:
    r = _board()
    before = r.board
    with pytest.raises(LizaError, match=match):
        _run(r, **kw)
    assert before.keys("usage") == []


def test_only_a_registered_agent_records_a_run() -> None:
    r = _board()
    with pytest.raises(PermissionDenied):
        r.do(RecordUsage, "human", run_id="human.1.1", cli="command", duration=1)
    with pytest.raises(PermissionDenied):
        r.do(RecordUsage, "ghost", run_id="ghost.1.1", cli="command", duration=1)


def test_the_price_table_prices_a_run_without_a_cost_and_the_cli_cost_wins() -> None:
    r = _board()
    r.do(ConfigSet, "human", key="prices", value="m1=3/15/0.3, command=1/2")
    assert r.board.config.prices == "command=1/2 m1=3/15/0.3"  # canonical: sorted
    _run(r, 1, model="m1")
    # 700 x $3 + 100 x $0.30 + 200 x $15, per million tokens
    assert r.board.get("usage", "coder-1.1.1").cost_micro_usd == 2100 + 30 + 3000
    _run(r, 2)  # no model: the CLI's row; cached input at the input rate
    assert r.board.get("usage", "coder-1.1.2").cost_micro_usd == 800 + 400
    _run(r, 3, cost_micro_usd=99, cost_source="cli")
    u = r.board.get("usage", "coder-1.1.3")
    assert (u.cost_micro_usd, u.cost_source) == (99, "cli")
    assert [x.cost_source for x in costs.entries(r.board)] == ["prices", "prices", "cli"]


@pytest.mark.parametrize("text", ["m=1", "=1/2", "m=1/2/3/4", "m=x/2", "m=1/2 m=1/2", "m=-1/2",
                                  "m=0.0000001/1"])
def test_a_malformed_price_table_is_refused(text: str) -> None:
    with pytest.raises(ValidationError):
        costs.canonical_prices(text)


def test_totals_group_by_agent_task_role_model_and_goal() -> None:
    r = _board()
    _run(r, 1, model="m1")
    _run(r, 2, task=None)
    rep = costs.report(r.board)
    assert rep.total.tokens == 2000 and rep.total.runs == 2 and rep.total.unpriced == 2
    assert set(rep.groups["task"]) == {"task-1", "(planning)"}
    assert set(rep.groups["model"]) == {"m1", "(command)"}
    assert rep.groups["role"]["coder"].runs == 2
    assert costs.task_tokens(r.board, "task-1") == 1000
    assert costs.report(r.board, costs.Filter(since="2099-01-01T00:00:00Z")).total.runs == 0
    assert costs.goal_totals(r.board) == rep.total  # the running total is the sum of the runs
    assert costs.totals_problems(r.board) == []
    forged = r.board.with_changes({("usage_totals", "task.task-1"): replace(
        r.board.get("usage_totals", "task.task-1"), output_tokens=1)})
    assert costs.totals_problems(forged) == ["usage total task.task-1 does not match its runs"]
    assert any("usage total" in str(v) for v in check_board(forged, r.now()))


def test_a_task_budget_per_task_override_and_config() -> None:
    r = _board()
    assert costs.task_over_budget(r.board, "task-1") is None  # no budget: never over
    r.do(ConfigSet, "human", key="budget_tokens_per_task", value="1500")
    _run(r, 1)
    assert costs.task_over_budget(r.board, "task-1") is None  # 1,000 of 1,500
    _run(r, 2)
    assert costs.task_over_budget(r.board, "task-1") == (1500, 2000)
    r2 = team()
    add_ready(r2, budget_tokens=500)
    assert r2.board.task("task-1").budget_tokens == 500
    claim(r2)
    _run(r2, 1)
    assert costs.task_over_budget(r2.board, "task-1") == (500, 1000)
    with pytest.raises(ValidationError, match="budget_tokens"):
        add_ready(r2, "task-2", budget_tokens=0)


def test_edit_sets_a_budget() -> None:
    r = team()
    add_ready(r)
    r.do(Edit, "planner-1", task="task-1", budget_tokens=9000)
    assert r.board.task("task-1").budget_tokens == 9000


def test_only_the_human_loosens_a_budget() -> None:
    """A runaway planner cannot lift the stop: budgets and prices in config are the human's,
    and an agent may tighten a task's budget, never raise it."""
    r = team()
    for actor in ("planner-1", "coder-1"):
        for key in costs.HUMAN_KEYS:
            with pytest.raises(PermissionDenied, match="human"):
                r.do(ConfigSet, actor, key=key, value="5000" if "tokens" in key else "1")
    r.do(ConfigSet, "human", key="budget_tokens_per_task", value="1000")
    with pytest.raises(PermissionDenied, match="only the human raises"):
        add_ready(r, budget_tokens=1001)
    add_ready(r, budget_tokens=800)
    with pytest.raises(PermissionDenied, match="above the task's budget \\(800\\)"):
        r.do(Edit, "planner-1", task="task-1", budget_tokens=900)
    r.do(Edit, "planner-1", task="task-1", budget_tokens=500)
    r.do(Edit, "human", task="task-1", budget_tokens=50000)
    assert r.board.task("task-1").budget_tokens == 50000


def test_a_goal_budget_holds_every_supervisor_and_raises_an_alarm() -> None:
    r = _board()
    r.do(ConfigSet, "human", key="budget_tokens_per_goal", value="1000")
    assert hold(r.board) is None
    _run(r, 1)
    assert hold(r.board) == Hold.BUDGET
    alerts = [a for a in alarms.evaluate(r.board, alarms.Facts(now=r.now())) if a.kind == "BUDGET"]
    assert alerts and "1,000 of 1,000" in alerts[0].text
    r.do(ConfigSet, "human", key="budget_tokens_per_goal", value="none")
    assert hold(r.board) is None
    r.do(ConfigSet, "human", key="budget_usd_per_goal", value="0.001")
    r.do(ConfigSet, "human", key="prices", value="command=1/1")
    _run(r, 2)  # $0.001 exactly
    assert costs.goal_over_budget(r.board) is not None
    assert "dollar budget" in str(costs.goal_over_budget(r.board))


@pytest.mark.parametrize("key,value", [("budget_tokens_per_task", "0"),
                                       ("budget_tokens_per_goal", "-1"),
                                       ("budget_tokens_per_goal", str(10**13)),
                                       ("budget_usd_per_goal", "0"),
                                       ("budget_usd_per_goal", "1.0000001"),
                                       ("budget_usd_per_goal", "NaN")])
def test_a_bad_budget_is_refused(key: str, value: str) -> None:
    r = team()
    with pytest.raises(ValidationError):
        r.do(ConfigSet, "human", key=key, value=value)


def test_old_entities_keep_their_bytes() -> None:
    t = Task(id="t", description="d", status=TaskState.DRAFT, created="2025-01-17T14:00:00Z")
    assert "budget_tokens" not in codec.encode(t)
    assert not {"budget_tokens_per_task", "prices"} & set(codec.encode(Config()))


def test_usd_text_and_parse() -> None:
    assert costs.usd_text(5130) == "$0.0051" and costs.usd_text(12) == "$0.000012"
    assert costs.canonical_usd("12.50", "x") == "12.5"
    assert costs.micros(Decimal("0.000001")) == 1
    with pytest.raises(ValidationError):
        apply(Board(), RecordUsage(actor="x", time="2025-01-17T14:00:00Z", run_id="x.1.1",
                                   cli="c", duration=1))
