"""Questions that wait for the human (AWAITING HUMAN): `block --for-human` marks the block, it is
listed first by `status`, the watcher and the webhook, and `unblock --answer` answers and
unblocks in one transition whose answer reaches the next coder's prompt; the time waited is a
figure of the sprint summary."""
from __future__ import annotations

import json
import subprocess
import sys

from gitliza.core import clock

from gitliza.core.agents import prompts

from gitliza.core.reports import metrics, queries
from gitliza.core.ops import Claim, ConfigSet
from gitliza.core.ops.work import Block
from gitliza.governance.checkpoint import summary
from tests.conftest import git
from tests.governance.conftest import T0, Team
from tests.governance.receiver import Receiver
from tests.governance.test_notify import watcher
from tests.governance.test_watch import env_at


def ask_human(team: Team, task: str = "task-2") -> None:
    (team.repo / ".worktrees" / task).mkdir(parents=True, exist_ok=True)
    team.do("coder-1", Claim, task=task, worktree=f".worktrees/{task}", base_commit="a" * 40)
    team.do("coder-1", Block, task=task, reason="needs a product call",
            questions=("EU or US date format?",), for_human=True)


def cli(team: Team, *args: str, agent: str | None = None) -> subprocess.CompletedProcess[str]:
    env = env_at(team.now())
    if agent:
        env["LIZA_AGENT_ID"] = agent
    return subprocess.run([sys.executable, "-m", "gitliza", *args], cwd=team.repo, env=env,
                          capture_output=True, text=True, timeout=120)


def test_block_for_human_is_listed_first(team: Team) -> None:
    (team.repo / ".worktrees" / "task-1").mkdir(parents=True)
    team.do("coder-2", Claim, task="task-1", worktree=".worktrees/task-1", base_commit="a" * 40)
    team.do("coder-2", Block, task="task-1", reason="flaky dep", questions=("pin it?",))
    r = cli(team, "block", "task-3", "--reason", "x", "--question", "q?", "--for-human",
            agent="coder-1")
    assert r.returncode != 0  # not claimed by coder-1: refused, nothing written
    ask_human(team)
    data = json.loads(cli(team, "status", "--json").stdout)
    assert data["tasks"][0]["id"] == "task-2" and data["tasks"][0]["awaiting_human"] is True
    assert data["tasks"][0]["blocked_questions"] == ["EU or US date format?"]
    text = cli(team, "status").stdout
    assert "AWAITING HUMAN: task-2: EU or US date format?" in text
    rows = [line.split()[0] for line in text.splitlines() if line.startswith("task-")]
    assert rows[0] == "task-2"
    r = cli(team, "watch", "--once")
    lines = r.stderr.splitlines()
    assert "AWAITING HUMAN: task-2" in lines[0] and "BLOCKED: task-1" in lines[1]


def test_the_answer_unblocks_in_one_transition_and_reaches_the_prompt(team: Team) -> None:
    ask_human(team)
    before = git(team.repo, "rev-parse", "refs/liza/state")
    r = cli(team, "unblock", "task-2", "--answer", "")
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1
    assert git(team.repo, "rev-parse", "refs/liza/state") == before
    r = cli(team, "unblock", "task-2", "--answer", "EU, day first")
    assert r.returncode == 0, r.stderr
    assert git(team.repo, "rev-parse", "refs/liza/state^") == before  # one commit
    board = team.human.board()
    t = board.task("task-2")
    assert t is not None and t.status == "UNCLAIMED" and not t.awaiting_human
    text = prompts.coder_section(t, ".worktrees/task-2", queries.notes_for(board, "task-2"))
    assert "EU, day first" in text


def test_the_webhook_hears_the_question(team: Team) -> None:
    with Receiver() as rx:
        team.human.do(ConfigSet, key="escalation_webhook", value=rx.url)
        ask_human(team)
        w = watcher(team.repo, team)
        w.tick()
        assert w.close(drain=60)
        [doc] = rx.wait_for(1)
    assert doc["event"] == "AWAITING_HUMAN" and doc["level"] == "critical"
    assert doc["awaiting_human"] is True and doc["questions"] == ["EU or US date format?"]
    assert doc["board_commit"] == git(team.repo, "rev-parse", "refs/liza/state")


def test_time_waiting_for_the_human_is_in_the_sprint_summary(team: Team) -> None:
    ask_human(team)
    asked = team.human.board().task("task-2").history[-1].time
    now = clock.plus(asked, 5400)
    board = team.human.board()
    assert metrics.human_wait(board.all_tasks(), now) == (5400, 1, 1)
    assert "| time_waiting_for_human | 1.5h over 1 question(s), 1 still open |" in \
        summary(board, now, [], "0" * 40)
    team.minute += 29  # answered 30 minutes after it was asked
    cli(team, "unblock", "task-2", "--answer", "EU")
    board = team.human.board()
    assert metrics.human_wait(board.all_tasks(), now) == (1800, 1, 0)
    assert metrics.human_wait(board.all_tasks(), now, since=clock.plus(T0, 86400))[1] == 0
