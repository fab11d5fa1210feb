"""A team that sizes itself: `git liza team --max-coders N` starts a coder supervisor when claimable
work has no idle coder, up to N, and each pool member exits after `pool_idle_exit` idle seconds;
the team ends when nobody is left and no work waits. Real supervisors, a scripted coder."""
from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

from gitliza.core.agents.sizing import to_start
from tests.cli.test_board import liza, ok
from tests.team.procs import BIN, WAIT, add_task, board_json, env_for, make_board, script
from tests.team.test_supervisor import SUBMIT


def test_what_to_start() -> None:
    assert to_start(waiting_work=5, running=0, busy_agents=0, most=4) == 4
    assert to_start(waiting_work=5, running=2, busy_agents=1, most=4) == 2  # one idle takes one
    assert to_start(waiting_work=1, running=2, busy_agents=1, most=4) == 0  # the idle one will
    assert to_start(waiting_work=9, running=4, busy_agents=4, most=4) == 0  # the cap
    assert to_start(waiting_work=0, running=0, busy_agents=0, most=4) == 0


def test_bad_pool_sizes_start_nobody(repo: Path) -> None:
    make_board(repo)
    for args in (["--coders", "3", "--max-coders", "2"], ["--max-coders", "65"],
                 ["--max-reviewers", "-1"]):
        r = subprocess.run([str(BIN / "git-liza"), "team", *args, "--", "true"], cwd=repo,
                           env=env_for(), capture_output=True, text=True, timeout=WAIT)
        assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "started" not in r.stdout


@pytest.mark.slow
def test_the_pool_grows_with_the_plan_and_shrinks_when_idle(repo: Path, tmp_path: Path) -> None:
    make_board(repo, pool_idle_exit="3")
    for i in (1, 2):
        add_task(repo, f"t{i}")
    agent = script(tmp_path, "agent.sh", f"""case "$LIZA_ROLE" in
coder) sleep 1
{SUBMIT} ;;
*) git liza verdict "$LIZA_TASK_ID" approve --commit "$LIZA_REVIEW_COMMIT" ;;
esac
""")
    team = subprocess.Popen([str(BIN / "git-liza"), "team", "--planners", "0", "--coders", "0",
                             "--reviewers", "0", "--max-coders", "4", "--max-reviewers", "1",
                             "--", str(agent)],
                            cwd=repo, env=env_for(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        for i in range(3, 11):  # the plan grows while the team runs
            add_task(repo, f"t{i}")
        end = time.monotonic() + 5 * WAIT
        while time.monotonic() < end:
            tasks = board_json(repo)["tasks"]
            if not tasks:  # every one merged (and archived out of the live list)
                break
            time.sleep(0.5)
        out, _ = team.communicate(timeout=5 * WAIT)  # the idle members exit, then the team
    finally:
        if team.poll() is None:
            team.kill()
    assert team.returncode == 0, out[-3000:]
    assert board_json(repo)["tasks"] == []
    started = re.findall(r"^\[(coder-\d+|reviewer-\d+)\] started `git liza agent", out, re.M)
    idle_exits = re.findall(r"^\[(coder-\d+|reviewer-\d+)\] .*no work for 3s "
                            r"\(pool_idle_exit\); exiting", out, re.M)
    assert 2 <= len(started) and sorted(set(idle_exits)) == sorted(set(started)), out[-3000:]
    live = most = 0  # never more than 4 at once, by the order of the lines
    for line in out.splitlines():
        if re.match(r"^\[(coder|reviewer)-\d+\] started `git liza agent", line):
            live += 1
            most = max(most, live)
        elif "(pool_idle_exit); exiting" in line:
            live -= 1
    assert most <= 5  # 4 coders and 1 reviewer
    claims = ok(liza(repo, "log", "--op", "claim", "--json", agent=None))
    assert claims.count('"op": "claim"') >= 10
