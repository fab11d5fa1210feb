"""Issue 48's scenario as a slow test: three machines on one host (their own network namespaces
where `ip netns` works, else a TCP relay each), a bare remote with the server hook served by a real
`git daemon`, a `git liza team` of scripted agents on each, no cron of `git liza sync`; machine B
SIGKILLed whole mid-run and brought back, machine C cut off from the remote for 45 s, longer than
the lease; 6 tasks added on A once B and C have started (benchmarks/fleet_scenario.py runs it and
prints its figures; docs/multi-machine.md gives them).

What the issue's "Done when" promises, each checked by `fleet_scenario.problems`: every task
merged and every team exiting by itself once the goal is completed; B and C claiming tasks added
after they started (their followers, no sync run on them); B's commit and uncommitted edits on the
remote while B is down; B, back, saving its leftovers to the attic first (listed by `attic`, on
the remote; `doctor` names a dirty leftover with the entry that keeps it); no acknowledged op dropped without a line in a team's output with its rescue ref; no task
worked by two coders at once (the agents' own log of their sessions, and the board's history);
`verify` accepting every clone; `git liza machines` on A showing B and C unreachable, then back,
and the dead B unreachable within one lease of its kill; no live, connected machine's board more
than 15 s behind the remote's.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from benchmarks import fleet_scenario

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("git") is None, reason="no git")]


@pytest.mark.timeout(1800)
def test_a_fleet_of_three_machines_with_a_kill_and_a_partition(tmp_path: Path) -> None:
    lines: list[str] = []
    res = fleet_scenario.run(tmp_path, say=lines.append)
    print(res.net, res.seconds, res.figures)  # (`-s` shows the run's figures)
    said = "\n".join(lines)
    tails = {m: out[-4000:] for m, out in res.outputs.items()}
    assert res.problems == [], (res.problems, res.figures, said, tails)
    f, c = res.figures, res.checks
    # The figures the doc quotes exist (their values are the benchmark's, never asserted).
    assert set(f["notice_s"]) == {"b", "c"}
    assert f["b_work_lost_s"] is not None
    assert set(f["board_lag_s"]) == {"a", "b", "c"}
    assert c["merged"] == c["tasks"] == 18
    assert f["duplicate_work_s"] == 0 and not c["silent_drops"]
