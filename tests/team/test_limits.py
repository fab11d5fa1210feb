"""Supervisor limits with real supervisor processes and scripted agents: a run that leaves the
task held and the board unmoved is a no-progress run, whatever its exit code; no-progress runs
back off and, after max_no_progress_runs in a row, the supervisor gives the task up (BLOCKED, a
retry_loop anomaly, the watcher's GAVE_UP alarm); launches per minute are capped; `--once` and
`git liza team` report a run as it ended. No timed assertions: the checks count what happened."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.team.procs import Sup, add_task, env_for, make_board, ops, script, task_of
from tests.cli.test_board import liza, ok

pytestmark = pytest.mark.slow

CAP = {"max_no_progress_runs": "3"}


def _gave_up(repo: Path, sup: Sup, task: str) -> None:
    sup.expect("giving up")
    t = task_of(repo, task)
    assert t["status"] == "BLOCKED" and "supervisor gave up" in t["blocked_reason"]
    assert t["failed_by"] == ["coder-1"]
    assert sum("started agent" in line for line in sup.lines) == 3  # the cap, no more
    w = liza(repo, "watch", "--once", "--json", agent=None)
    alarms = [json.loads(line) for line in w.stdout.splitlines() if line.strip()]
    gave = [a for a in alarms if a["kind"] == "GAVE_UP"]
    assert gave and gave[0]["subject"] == task and gave[0]["level"] == "critical", w.stdout
    assert "3 agent runs in a row without board progress" in gave[0]["text"]


@pytest.mark.parametrize("body,first,second", [
    # `claude -p` with every tool denied: exit 0, the task still claimed.
    ("exit 0\n", "still holds its work and the board did not move (no progress 1/3); "
     "restarting in 1s", "(no progress 2/3); restarting in 2s"),
    ("exit 42\n", "exited 42 (graceful) (no progress 1/3); restarting in 1s",
     "exited 42 (graceful) (no progress 2/3); restarting in 2s"),
    ("echo \"agent.sh: can't open file 'planner.py'\" >&2\nexit 3\n",
     "crashed (exit 3, 1 in a row) (no progress 1/3); restarting in 1s",
     "crashed (exit 3, 2 in a row) (no progress 2/3); restarting in 2s"),
], ids=["exit0-held", "always-42", "always-crash"])
def test_a_run_without_progress_backs_off_then_the_task_is_given_up(
        repo: Path, tmp_path: Path, body: str, first: str, second: str) -> None:
    make_board(repo, **CAP)
    add_task(repo, "t1")
    sup = Sup(repo, "coder", "coder-1", "--", str(script(tmp_path, "agent.sh", body)))
    sup.expect(first)
    sup.expect(second)
    _gave_up(repo, sup, "t1")
    if "can't open" in body:  # the human is told why: the agent's own last words
        gave = liza(repo, "watch", "--once", "--json", agent=None).stdout
        assert "(last: exit 3: agent.sh: can't open file 'planner.py')" in gave, gave
    # The supervisor goes on: the blocked task is not claimed again, nothing else is relaunched.
    ok(liza(repo, "abort", agent=None))
    assert sup.wait() == 0
    assert [o for o in ops(repo) if o[0] == "claim"] == [("claim", "coder-1", "t1")]
    assert sum("started agent" in line for line in sup.lines) == 3


def test_a_run_that_moves_the_board_resets_the_count(repo: Path, tmp_path: Path) -> None:
    """Commits on the task branch are progress even without a submit: only runs in a row that
    move nothing count towards the cap."""
    make_board(repo, **CAP)
    add_task(repo, "t1")
    runs = tmp_path / "runs"
    agent = script(tmp_path, "agent.sh", f"""n=$(cat {runs} 2>/dev/null || echo 0); n=$((n+1))
echo $n > {runs}
case $n in 3) echo "$n" > "f$n.txt"; git add "f$n.txt"; git commit -qm "step $n";; esac
test $n -lt 6 && exit 0
git liza submit "$LIZA_TASK_ID"
""")
    sup = Sup(repo, "coder", "coder-1", "--", str(agent))
    sup.expect("agent completed")  # run 3 committed: progress
    ok(liza(repo, "wait", "status", "--task", "t1", "--status", "READY_FOR_REVIEW",
            "--timeout", "60", agent=None))
    ok(liza(repo, "abort", agent=None))
    assert sup.wait() == 0
    assert "giving up" not in sup.output()
    assert "(no progress 2/3)" in sup.output() and "(no progress 3/3)" not in sup.output()


def test_launches_per_minute_are_capped(repo: Path, tmp_path: Path) -> None:
    """An agent that makes progress at every run (a commit) and never finishes is relaunched at
    once, but never more than max_launches_per_minute times in a minute."""
    make_board(repo, max_launches_per_minute="3")
    add_task(repo, "t1")
    agent = script(tmp_path, "busy.sh", """date +%s%N > "run.txt"; git add run.txt
git commit -qm step
""")
    sup = Sup(repo, "coder", "coder-1", "--", str(agent))
    sup.expect("3 agent launches in the last minute (max_launches_per_minute); next launch in")
    assert sum("started agent" in line for line in sup.lines) == 3
    ok(liza(repo, "abort", agent=None))
    assert sup.wait() == 0
    assert sum("started agent" in line for line in sup.lines) == 3


def test_a_reviewer_without_progress_gives_up_and_exits(repo: Path, tmp_path: Path) -> None:
    make_board(repo, **CAP)
    add_task(repo, "t1")
    ok(liza(repo, "register", "coder-1", "--role", "coder", agent=None))
    wt = json.loads(ok(liza(repo, "claim", "--json", agent="coder-1")))["worktree"]
    (Path(wt) / "t1.txt").write_text("t1\n")
    for argv in (["git", "add", "t1.txt"], ["git", "commit", "-qm", "t1"]):
        subprocess.run(argv, cwd=wt, check=True, env=env_for("coder-1"))
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=wt, capture_output=True, text=True,
                          check=True).stdout.strip()
    ok(liza(repo, "submit", "t1", "--commit", head, agent="coder-1"))
    sup = Sup(repo, "code-reviewer", "reviewer-1", "--",
              str(script(tmp_path, "idle.sh", "exit 0\n")))
    assert sup.wait() == 1
    out = sup.output()
    assert "giving up the review of t1; exiting" in out
    assert sum("started agent" in line for line in sup.lines) == 3
    w = liza(repo, "watch", "--once", "--json", agent=None)
    assert any(json.loads(x)["kind"] == "GAVE_UP" for x in w.stdout.splitlines() if x.strip())


def test_once_reports_a_crash_without_promising_a_restart(repo: Path, tmp_path: Path) -> None:
    make_board(repo)
    add_task(repo, "t1")
    sup = Sup(repo, "coder", "coder-1", "--once", "--",
              str(script(tmp_path, "crash.sh", "exit 3\n")))
    assert sup.wait() == 1
    assert "agent crashed (exit 3, 1 in a row) (no progress 1/5); exiting (--once)" in \
        sup.output()
    assert "restarting" not in sup.output()


def test_team_labels_each_line_once(repo: Path, tmp_path: Path) -> None:
    make_board(repo, coder_max_wait="2")  # the supervisor exits once there is nothing left
    add_task(repo, "t1")
    agent = script(tmp_path, "ok.sh", """echo hi > "$LIZA_TASK_ID.txt"; git add -A
git commit -qm work; git liza submit "$LIZA_TASK_ID"
""")
    r = subprocess.run([sys.executable, "-m", "gitliza", "team", "--planners", "0",
                        "--reviewers", "0", "--coders", "1", "--", str(agent)],
                       cwd=repo, env=env_for(), capture_output=True, text=True, timeout=120)
    assert "[coder-1] claimed t1" in r.stdout, r.stdout
    assert "[coder-1] [coder-1]" not in r.stdout
