"""Issue 36: what `git liza team` and `git liza log` show a human. The team prints the board's
transitions live with the reason of a rejection (no `git liza show` needed), "none reported" once
per scripted agent, and removes every agent its supervisors registered alike; `log` and the web
timeline leave supervise and usage rows out unless asked (`--all`, `--op`)."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_board import liza, ok
from tests.team.procs import add_task, env_for, make_board, script

pytestmark = pytest.mark.slow


def test_team_prints_verdicts_with_reasons_and_log_hides_bookkeeping(
        repo: Path, tmp_path: Path) -> None:
    # The supervisors exit once idle for 3 s, so the team ends by itself.
    make_board(repo, coder_max_wait="3", reviewer_max_wait="3", seal_every="10")
    add_task(repo, "mul")
    count = tmp_path / "reviews"
    agent = script(tmp_path, "agent.sh", f"""cat > /dev/null
if [ "$LIZA_ROLE" = coder ]; then
  echo "x$(date +%s%N)" >> mul.txt && git add mul.txt && git commit -qm "$LIZA_TASK_ID: mul"
  git liza submit "$LIZA_TASK_ID"
elif [ -e {count} ]; then
  git liza verdict "$LIZA_TASK_ID" approve
else
  touch {count}
  git liza verdict "$LIZA_TASK_ID" reject --reason "mul(2, 3) is not 6"
fi
""")
    r = subprocess.run([sys.executable, "-m", "gitliza", "team", "--planners", "0", "--coders",
                        "1", "--", str(agent)], cwd=repo, env=env_for(), capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    out = r.stdout
    # live, with the reason, and the merge
    assert re.search(r"^board: verdict mul .*REJECTED.*: mul\(2, 3\) is not 6$", out, re.M), out
    assert re.search(r"^board: merge mul .*MERGED", out, re.M), out
    assert not re.search(r"^board: (supervise|usage) ", out, re.M), out
    # two coder runs and two reviewer runs, one "none reported" each
    for agent_id in ("coder-1", "reviewer-1"):
        told = [x for x in out.splitlines() if x.startswith(f"[{agent_id}]")
                and "none reported" in x]
        assert len(told) == 1, out
    # every agent the supervisors registered is gone at their clean end, alike
    st = json.loads(ok(liza(repo, "status", "--json", agent=None)))
    assert st["agents"] == [], st["agents"]
    # log: the work, not the bookkeeping, unless asked
    plain = ok(liza(repo, "log", agent=None))
    assert "verdict" in plain and not re.search(r"\s(supervise|usage)\s", plain), plain
    everything = ok(liza(repo, "log", "--all", agent=None))
    assert re.search(r"\ssupervise\s", everything) and re.search(r"\susage\s", everything)
    asked = ok(liza(repo, "log", "--op", "usage", agent=None))
    assert re.search(r"\susage\s", asked) and "verdict" not in asked
    # the team runs as the human (signatures off here): it sealed every 10 commits
    assert "team: seal by human (seal_every 10)" in out, out
    seals = json.loads(ok(liza(repo, "log", "--op", "seal", "--json", agent=None)))
    assert seals and all(s["actor"] == "human" for s in seals)
    ok(liza(repo, "verify", agent=None))
    # watch --once with nothing wrong says so
    w = liza(repo, "watch", "--once", agent=None)
    assert w.returncode == 0 and w.stdout.strip() == "watch: no alarms", w.stdout + w.stderr
