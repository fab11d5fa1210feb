"""Usage and budgets with real supervisor processes and scripted agents that report their own
usage (`git liza usage report`): one `usage` transition per run, attributed to the run; a task
whose runs spent its token budget is blocked before the next launch (before the no-progress cap
would have stopped it) and the watcher raises BUDGET; a goal budget holds every supervisor.
No timed assertions: the checks count runs and read the board."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli.test_board import liza, ok
from tests.team.procs import Sup, add_task, env_for, make_board, ops, script, task_of

pytestmark = pytest.mark.slow

REPORTS = "git liza usage report --input 800 --output 200 --cached 100\n"


def _alarms(repo: Path) -> list[dict[str, object]]:
    w = liza(repo, "watch", "--once", "--json", agent=None)
    return [json.loads(line) for line in w.stdout.splitlines() if line.strip()]


def _next(sup: Sup, text: str) -> None:
    """Read the supervisor's output on until a new line containing `text`."""
    while True:
        line = sup._q.get(timeout=120)
        assert line is not None, sup.output()
        sup.lines.append(line)
        if text in line:
            return


def _usage(repo: Path, *args: str) -> dict[str, object]:
    data: dict[str, object] = json.loads(ok(liza(repo, "usage", "--json", *args, agent=None)))
    return data


def test_a_task_that_spent_its_budget_is_blocked_before_the_next_launch(
        repo: Path, tmp_path: Path) -> None:
    make_board(repo, max_no_progress_runs="5", budget_tokens_per_task="1500")
    add_task(repo, "t1")
    # Never submits, never commits: without a budget it would run 5 times (the cap).
    agent = script(tmp_path, "agent.sh", REPORTS + "git liza usage report --input 0 --output 0\n")
    sup = Sup(repo, "coder", "coder-1", "--", str(agent))
    sup.expect("token budget spent")
    t = task_of(repo, "t1")
    assert t["status"] == "BLOCKED"
    assert "token budget spent: 2,000 of 1,500 tokens" in t["blocked_reason"]
    assert sum("started agent" in line for line in sup.lines) == 2  # 1,000 then 2,000 spent
    assert "giving up" not in sup.output()
    assert "usage of run coder-1.1.1: 800 in, 200 out, 100 cached" in sup.output()
    # One usage transition per run, each the sum of that run's reports, attributed to its run.
    runs = t["usage"]
    assert [(u["run"], u["input_tokens"], u["output_tokens"], u["cached_tokens"], u["role"])
            for u in runs] == [(r, 800, 200, 100, "coder") for r in ("coder-1.1.1", "coder-1.1.2")]
    assert [o for o in ops(repo) if o[0] == "usage"] == [("usage", "coder-1", "t1")] * 2
    alarms = _alarms(repo)
    budget = [a for a in alarms if a["kind"] == "BUDGET"]
    assert budget and budget[0]["subject"] == "t1" and "2000 of 1500" in str(budget[0]["text"])
    u = _usage(repo)
    assert u["total"] == {"runs": 2, "input_tokens": 1600, "output_tokens": 400,  # type: ignore
                          "cached_tokens": 200, "tokens": 2000, "cost_usd": "0",
                          "unpriced_runs": 2, "duration": u["total"]["duration"]}  # type: ignore
    assert set(u["agent"]) == {"coder-1"} and set(u["task"]) == {"t1"}  # type: ignore
    shown = ok(liza(repo, "show", "t1", agent=None))
    assert "coder-1.1.2  coder-1 (coder)  command  in 800 out 200 cached 100" in shown
    ok(liza(repo, "materialize", agent=None))
    view = (repo / ".liza" / "usage.yaml").read_text()
    assert '"coder-1":' in view and "tokens: 2000" in view and '"t1":' in view, view
    ok(liza(repo, "abort", agent=None))
    assert sup.wait() == 0
    assert sum("started agent" in line for line in sup.lines) == 2
    assert ok(liza(repo, "verify", agent=None))
    assert ok(liza(repo, "validate", agent=None))


def test_a_goal_budget_stops_two_supervisors_at_once(repo: Path, tmp_path: Path) -> None:
    make_board(repo, budget_tokens_per_goal="1000")
    add_task(repo, "t1")
    add_task(repo, "t2")
    ok(liza(repo, "config", "prices", "command=3/15", agent=None))
    gate = tmp_path / "gate"
    gate.mkdir()
    # Both first runs are on before either ends (each waits for the other), so both start;
    # after them the goal has spent 2,000 tokens and neither supervisor starts another run.
    agent = script(tmp_path, "agent.sh", f"""touch {gate}/$LIZA_AGENT_ID
n=0; while [ "$(ls {gate} | wc -l)" -lt 2 ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n+1)); done
{REPORTS}""")
    sups = [Sup(repo, "coder", f"coder-{i}", "--", str(agent)) for i in (1, 2)]
    for s in sups:
        s.expect("BUDGET: waiting")
    assert sum("started agent" in line for s in sups for line in s.lines) == 2
    u = _usage(repo)
    assert u["total"]["tokens"] == 2000  # type: ignore[index]
    # The price table priced them: 700 x $3 + 100 x $3 (cached at the input rate) + 200 x $15
    # per million = $0.0054 a run.
    assert u["total"]["cost_usd"] == "0.0108"  # type: ignore[index]
    assert "goal token budget spent" in str(u["budgets"]["goal_over"])  # type: ignore[index]
    alarms = [a for a in _alarms(repo) if a["kind"] == "BUDGET"]
    assert alarms and alarms[0]["subject"] is None and "2,000 of 1,000" in str(alarms[0]["text"])
    status = ok(liza(repo, "status", agent=None))
    assert "usage: 2 runs, 2,000 tokens" in status
    # The human raises the budget: both go on.
    ok(liza(repo, "config", "budget_tokens_per_goal", "100000", agent=None))
    for s in sups:
        _next(s, "started agent")
    ok(liza(repo, "abort", agent=None))
    for s in sups:
        assert s.wait() == 0
    assert sum("started agent" in line for s in sups for line in s.lines) > 2


def test_reports_outside_a_run_and_bad_reports_move_nothing(repo: Path) -> None:
    make_board(repo)
    head = subprocess.run(["git", "rev-parse", "refs/liza/state"], cwd=repo, capture_output=True,
                          text=True).stdout
    bad = [("usage", "report", "--input", "5", "--output", "1"),  # no $LIZA_RUN_ID
           ("config", "budget_tokens_per_task", "0"),
           ("config", "budget_tokens_per_goal", "-3"),
           ("config", "budget_usd_per_goal", "0"),
           ("config", "budget_usd_per_goal", "lots"),
           ("config", "prices", "claude=3"),
           ("add", "t9", "--desc", "x", "--budget-tokens", "0")]
    for args in bad:
        r = liza(repo, *args, agent=None)
        assert r.returncode == 1, (args, r.stdout, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    env_run = dict(env_for(), LIZA_RUN_ID="coder-1.1.1")
    for args in (("--input", "5", "--output", "1"),  # a run that is not on
                 ("--input=-5", "--output", "1"), ("--input", "99999999999", "--output", "1"),
                 ("--input", "5", "--output", "1", "--cached", "6"),
                 ("--input", "5", "--output", "1", "--cost", "-1")):
        r = subprocess.run(["git", "liza", "usage", "report", *args], cwd=repo, env=env_run,
                           capture_output=True, text=True)
        assert r.returncode == 1, (args, r.stdout, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    after = subprocess.run(["git", "rev-parse", "refs/liza/state"], cwd=repo,
                           capture_output=True, text=True).stdout
    assert after == head
    assert not (repo / ".liza" / "agent-usage" / "coder-1.1.1.jsonl").exists()


def test_a_command_agent_that_reports_nothing_is_told_how_to(repo: Path, tmp_path: Path) -> None:
    """A script agent's run with no `usage report`: its supervisor says none was reported and
    how to, not a run of zeros; the run is still recorded (one usage transition)."""
    make_board(repo)
    add_task(repo, "t1")
    sup = Sup(repo, "coder", "coder-1", "--once", "--", str(script(tmp_path, "quiet.sh", "true\n")))
    sup.wait()
    assert "usage of run coder-1.1.1: none reported (a -- COMMAND agent reports its own with " \
           "`git liza usage report`; docs/usage.md)" in sup.output(), sup.output()
    assert "0 in, 0 out" not in sup.output()
    assert [o for o in ops(repo) if o[0] == "usage"] == [("usage", "coder-1", "t1")]
