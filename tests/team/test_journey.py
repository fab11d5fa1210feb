"""Issue 49's journey, the way a person drives it: a real `git liza team` of scripted agents,
six goals in a row on one board, `review_quorum 2` with two reviewers and then with one, a question
for the human answered, a Ctrl-C and a restart over committed work. None of the problems the
issue lists may show: no INVALID state, no "exited -15", no "went to nobody", no attic entry for
work that was never at risk, the asker gets its answered task back."""
from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.cli.test_board import liza, ok
from tests.team import procs
from tests.team.procs import WAIT, add_task, env_for, make_board, script

pytestmark = pytest.mark.slow

AGENT = """cat > /dev/null
if [ "$LIZA_ROLE" != coder ]; then
  git liza verdict "$LIZA_TASK_ID" approve
  exit 0
fi
if [ "$LIZA_TASK_ID" = ask ] && [ ! -e {tmp}/asked ]; then
  touch {tmp}/asked
  git liza block ask --reason "a product call" --question "EU or US dates?" --for-human
  exit 0
fi
echo "$LIZA_TASK_ID $(date +%s%N)" >> "$LIZA_TASK_ID.txt"
git add "$LIZA_TASK_ID.txt" && git commit -qm "$LIZA_TASK_ID: work"
if [ "$LIZA_TASK_ID" = slow ] && [ ! -e {tmp}/go ]; then
  touch {tmp}/slow-committed
  exec sleep 600
fi
git liza submit "$LIZA_TASK_ID"
"""


class Team:
    """`git liza team` in its own process group (a terminal's Ctrl-C reaches the whole group)."""

    def __init__(self, repo: Path, agent: Path, reviewers: int, coders: int = 2) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gitliza", "team", "--planners", "0", "--coders", str(coders),
             "--reviewers", str(reviewers), "--", str(agent)], cwd=repo, env=env_for(),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.out: list[str] = []
        self.err = ""
        SHOWN.append(self)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.out.append(line.rstrip("\n"))

    def ctrl_c(self) -> int:
        os.killpg(self.proc.pid, signal.SIGINT)
        return self.end()

    def end(self) -> int:
        code = self.proc.wait(timeout=120)
        assert self.proc.stderr is not None
        self.err = self.proc.stderr.read()
        time.sleep(0.2)  # the reader thread's last lines (it ends at EOF)
        return code

    def text(self) -> str:
        return "\n".join(self.out)


def status(repo: Path) -> dict[str, Any]:
    got: dict[str, Any] = json.loads(ok(liza(repo, "status", "--json", agent=None)))
    return got


def merged(repo: Path, tid: str) -> bool:
    return bool(task(repo, tid)["status"] == "MERGED")


SHOWN: list[Team] = []  # the team running, whose output a failed wait shows


def until(what: str, check: Callable[[], object]) -> None:
    """procs.until, failing with the running team's last output."""
    procs.until(check, lambda: f"{what}:\n" + "\n".join(SHOWN[-1].out[-80:] if SHOWN else []),
                timeout=4 * WAIT)


def task(repo: Path, tid: str) -> dict[str, Any]:
    got: dict[str, Any] = json.loads(ok(liza(repo, "show", tid, "--json", agent=None)))
    return got


def clean(repo: Path, team: Team) -> None:
    """What none of the issue's problems leaves: checked after every run."""
    text = team.text() + team.err
    for bad in ("INVALID", "exited -", "went to nobody", "Traceback", "already failed",
                "hypothesis", "dead session's leftovers"):
        assert bad not in text, (bad, text[-6000:])
    assert liza(repo, "validate", agent=None).returncode == 0


@pytest.mark.timeout(900)
def test_the_journey(repo: Path, tmp_path: Path) -> None:
    agent = script(tmp_path, "agent.sh", AGENT.format(tmp=tmp_path))
    make_board(repo, review_quorum="2", lease_duration="120", heartbeat_interval="2")
    # Goal 1: two reviewers under a quorum of two, and a question for the human.
    add_task(repo, "one")
    add_task(repo, "ask")
    team = Team(repo, agent, reviewers=2, coders=1)
    until("the question", lambda: task(repo, "ask").get("awaiting_human"))
    planner_try = liza(repo, "unblock", "ask", agent="planner-x")
    assert planner_try.returncode != 0
    ok(liza(repo, "unblock", "ask", "--answer", "EU, day first", agent=None))
    until("goal 1's merges", lambda: all(task(repo, t)["status"] == "MERGED"
                                         for t in ("one", "ask")))
    asked = [h for h in task(repo, "ask")["history"] if h["event"] == "claimed"]
    assert {h["agent"] for h in asked} == {"coder-1"} and len(asked) == 2  # the asker, again
    assert not task(repo, "ask").get("failed_by")
    ok(liza(repo, "complete-goal", agent=None))
    assert team.end() == 0
    clean(repo, team)
    assert "vote 1 of 2 recorded" in team.text()
    # Goal 2: one reviewer under a quorum of two (said at start, and by watch), a Ctrl-C while
    # the coder holds committed work, a restart with two reviewers that resumes it.
    ok(liza(repo, "init", "goal two", agent=None))
    add_task(repo, "slow")
    add_task(repo, "two")
    team = Team(repo, agent, reviewers=1)
    until("a vote on two", lambda: len(task(repo, "two").get("approvals") or ()) == 1)
    until("slow's commit", (tmp_path / "slow-committed").exists)
    watch = liza(repo, "watch", "--once", agent=None)
    assert "QUORUM UNREACHABLE: two" in watch.stderr + watch.stdout, watch.stderr
    assert team.ctrl_c() == 130
    assert "review_quorum 2 but 1 code reviewer" in team.err
    clean(repo, team)
    (tmp_path / "go").touch()
    team = Team(repo, agent, reviewers=2)
    until("goal 2's merges", lambda: all(task(repo, t)["status"] == "MERGED"
                                         for t in ("slow", "two")))
    ok(liza(repo, "complete-goal", agent=None))
    assert team.end() == 0
    clean(repo, team)
    assert "slow: resumed" in team.text(), team.text()[-4000:]
    attic = liza(repo, "attic", agent=None).stdout
    assert attic.strip() == "the attic is empty", attic
    # Goals 3 to 6 in a row: the board carries on, each ended goal's status its own.
    for n in ("three", "four", "five", "six"):
        ok(liza(repo, "init", f"goal {n}", agent=None))
        add_task(repo, n)
        team = Team(repo, agent, reviewers=2)
        until(f"goal {n}'s merge", functools.partial(merged, repo, n))
        ok(liza(repo, "complete-goal", agent=None))
        assert team.end() == 0
        clean(repo, team)
        st = liza(repo, "status", agent=None).stdout
        assert "Goal completed: 1 task(s) merged" in st and n in st, st
    attic = liza(repo, "attic", agent=None).stdout
    assert attic.strip() == "the attic is empty", attic
