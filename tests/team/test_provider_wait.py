"""A provider's fault is nobody's failure (docs/agents.md "When the provider is in trouble"), with
real supervisor processes and scripted `-- COMMAND` agents that say what a CLI would (the
`gitliza-end:` line, exit 77): the supervisor waits until the reset it was told, says so once,
is shown as WAITING FOR PROVIDER, never gives the task up nor counts it failed; a refused login
is an alarm in `watch` naming the CLI and the fix; the supervisors of one machine running the
same CLI share the wait. The real CLIs against the scripted provider in trouble:
tests/agentcli/test_provider.py. No timed assertions."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gitliza.core import clock
from tests.cli.test_board import liza, ok
from tests.team.procs import (Sup, add_task, board_json, make_board, ops, script, task_of,
                              until)

pytestmark = pytest.mark.slow

CAP = {"max_no_progress_runs": "2"}  # without the waits, 2 refused runs give up


def _reaches(repo: Path, task: str, status: str, seconds: float = 300) -> None:
    """Wait for `task` to reach `status` (`git liza wait`, again while `seconds` last)."""
    said: list[str] = []

    def reached() -> bool:
        r = liza(repo, "wait", "status", "--task", task, "--status", status, "--timeout", "45",
                 agent=None)
        said[:] = [r.stderr.strip()]
        return r.returncode == 0
    until(reached, lambda: f"{task} {status} ({said[-1] if said else ''})", seconds)


def _limited_then_done(tmp: Path, name: str, limited: int, ahead: int = 3) -> Path:
    """An agent whose first `limited` runs are refused by its provider (reset `ahead` seconds
    on), then does the task."""
    runs = tmp / f"{name}.runs"
    return script(tmp, name, f"""n=$(cat {runs} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {runs}
if [ $n -le {limited} ]; then
  echo "calling the model..."
  echo "gitliza-end: rate_limited until=$(( $(date +%s) + {ahead} )) 5-hour limit"
  exit 1
fi
echo done > "$LIZA_TASK_ID.txt"; git add "$LIZA_TASK_ID.txt"; git commit -qm "$LIZA_TASK_ID"
git liza submit "$LIZA_TASK_ID"
""")


def test_a_rate_limited_run_waits_for_the_reset_and_is_never_counted(
        repo: Path, tmp_path: Path) -> None:
    make_board(repo, **CAP)
    add_task(repo, "t1")
    agent = _limited_then_done(tmp_path, "agent.sh", 2)
    sup = Sup(repo, "coder", "coder-1", "--", str(agent))
    line = sup.expect("agent.sh rate limited until")
    assert "(5-hour limit); waiting" in line, line
    # While it waits: its agent is WAITING FOR PROVIDER on the board, the task still its own.
    # (It waits the backoff, 30 s at least: a window, not a moment.)
    seen: list[dict[str, str]] = []

    def waiting() -> bool:
        seen[:] = [a for a in board_json(repo)["agents"]
                   if a["id"] == "coder-1" and a.get("status") == "WAITING FOR PROVIDER"]
        return bool(seen)
    until(waiting, "coder-1 WAITING FOR PROVIDER on the board")
    assert "rate limited" in seen[0]["provider_note"], seen
    assert "WAITING FOR PROVIDER" in ok(liza(repo, "status", agent=None))
    # The waits: the backoff (30 s, 60 s, +-20%), the provider's reset being sooner.
    _reaches(repo, "t1", "READY_FOR_REVIEW")
    t = task_of(repo, "t1")
    assert t.get("failed_by", []) == [] and t["status"] == "READY_FOR_REVIEW"
    # Each run's end is on its usage record (`show`, the web task page).
    assert [u.get("end") for u in t["usage"]] == ["rate_limited", "rate_limited", "done"]
    assert "ended: rate_limited" in ok(liza(repo, "show", "t1", agent=None))
    ok(liza(repo, "abort", agent=None))
    assert sup.wait() == 0
    out = sup.output()
    assert "giving up" not in out and "no progress" not in out
    assert sum("started agent" in x for x in sup.lines) == 3  # 2 refused + the one that worked
    assert sum("rate limited until" in x for x in sup.lines) == 2, out  # one line per wait
    assert "provider answering again" in out
    assert not [o for o in ops(repo) if o[0] in ("anomaly", "block")]
    claims = [o for o in ops(repo) if o[0] == "claim"]
    assert claims == [("claim", "coder-1", "t1")]  # the lease held through every wait
    # The wait is over on the board too.
    me = next(a for a in board_json(repo)["agents"] if a["id"] == "coder-1")
    assert me["status"] != "WAITING FOR PROVIDER" and not me.get("provider_wait")


def test_a_refused_login_is_an_alarm_naming_the_cli_and_its_key(
        repo: Path, tmp_path: Path) -> None:
    make_board(repo, **CAP)
    add_task(repo, "t1")
    agent = script(tmp_path, "nokey", 'echo "Error: Missing NOKEY_API_KEY environment variable '
                                      'for the provider" >&2\nexit 77\n')
    sup = Sup(repo, "coder", "coder-1", "--", str(agent))
    line = sup.expect("nokey not logged in")
    assert "set NOKEY_API_KEY" in line, line
    w = liza(repo, "watch", "--once", "--json", agent=None)
    alarms = [json.loads(x) for x in w.stdout.splitlines() if x.strip()]
    got = [a for a in alarms if a["kind"] == "PROVIDER"]
    assert got and got[0]["subject"] == "nokey" and got[0]["level"] == "critical", w.stdout
    assert "nokey not logged in for coder-1" in got[0]["text"]
    assert "NOKEY_API_KEY" in got[0]["text"]
    w = liza(repo, "watch", "--once", agent=None)
    assert "PROVIDER: nokey not logged in" in w.stdout + w.stderr
    ok(liza(repo, "abort", agent=None))
    assert sup.wait() == 0
    assert sum("started agent" in x for x in sup.lines) == 1  # the backoff: 30 s at least
    assert task_of(repo, "t1").get("failed_by", []) == []
    # Its supervisor gone, the wait is history: no alarm any more.
    w = liza(repo, "watch", "--once", "--json", agent=None)
    assert not [x for x in w.stdout.splitlines() if '"PROVIDER"' in x], w.stdout


def test_supervisors_of_one_machine_share_the_wait_of_their_cli(
        repo: Path, tmp_path: Path) -> None:
    make_board(repo, **CAP)
    add_task(repo, "t1")
    add_task(repo, "t2")
    # One agent program for both (same CLI): its first run is refused for 40 s.
    agent = _limited_then_done(tmp_path, "cli.sh", 1, ahead=40)
    one = Sup(repo, "coder", "coder-1", "--", str(agent))
    one.expect("cli.sh rate limited until")
    two = Sup(repo, "coder", "coder-2", "--", str(agent))
    line = two.expect("the wait of coder-1")
    assert "cli.sh rate limited until" in line
    until = clock.to_epoch(line.split(" until ")[1].split()[0])
    for t in ("t1", "t2"):
        _reaches(repo, t, "READY_FOR_REVIEW")
    ok(liza(repo, "abort", agent=None))
    assert one.wait() == 0 and two.wait() == 0
    # coder-2 launched nothing before the shared reset (its prompt's name is its launch time).
    started = [x for x in two.lines if "started agent" in x]
    assert len(started) == 1
    stamp = re.search(r"coder-2--(\d{4}-\d\d-\d\d)T(\d\d)-(\d\d)-(\d\d)Z", started[0])
    assert stamp is not None, started
    launched = clock.to_epoch(f"{stamp[1]}T{stamp[2]}:{stamp[3]}:{stamp[4]}Z")
    assert launched >= until, (launched, until)
    assert sum("started agent" in x for x in one.lines + two.lines) == 3
