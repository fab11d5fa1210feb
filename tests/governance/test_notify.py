"""The escalation webhook (gitliza/governance/notify.py) against a real HTTP receiver on 127.0.0.1:
one JSON document per event naming the commit that caused it, one sender per event across
processes and machines (the claim ref), retries with the same id, a failing URL as one line and an
alarm, and the command alternative."""
from __future__ import annotations

import io
import json
import sys
import threading
from pathlib import Path

import pygit2
import pytest

from gitliza.core import clock
from gitliza.core.ops import Block, Claim, ConfigSet, Unblock
from gitliza.git.store import Store
from gitliza.governance.notify import NOTIFY_REFS
from gitliza.governance.watch import Watcher
from gitliza.hooks.install import install
from tests.conftest import git
from tests.governance.conftest import T0, Team
from tests.governance.receiver import Receiver
from tests.governance.test_watch import block


def watcher(repo: Path, team: Team, *, remote: bool = False) -> Watcher:
    # The watcher's clock just after the team's last op: no STALLED, no aged draft.
    return Watcher(Store(pygit2.Repository(str(repo))), err=io.StringIO(),
                   now=lambda: clock.plus(T0, team.minute * 60 + 1), notify=False, remote=remote)


def hook(team: Team, url: str) -> None:
    team.human.do(ConfigSet, key="escalation_webhook", value=url)


def test_a_blocked_task_is_posted_once_naming_its_commit(team: Team) -> None:
    with Receiver() as rx:
        hook(team, rx.url)
        git(team.repo, "config", "liza.webUrl", "http://board.example:8765/")
        block(team)
        cause = git(team.repo, "rev-parse", "refs/liza/state").strip()
        team.human.do(ConfigSet, key="alarm_stall", value="86400")  # a later, unrelated commit
        w = watcher(team.repo, team)
        w.tick()
        assert w.close(drain=60)
        [doc] = rx.wait_for(1)
        assert doc["event"] == "BLOCKED" and doc["change"] == "fired"
        assert (doc["task"], doc["agent"]) == ("task-1", "coder-1")
        assert doc["board_commit"] == cause  # the block, not the tip it was seen at
        assert doc["board_tip"] != cause
        assert doc["line"] == "\u26a0\ufe0f BLOCKED: task-1 \u2014 spec gap"
        assert doc["questions"] == ["which API?"]
        assert doc["link"] == "http://board.example:8765/task/task-1"
        assert rx.headers[0]["Idempotency-Key"] == doc["id"]
        ref = NOTIFY_REFS + doc["id"]
        assert git(team.repo, "rev-parse", ref + "^").strip() == cause
        # A second watcher (another process on this machine, a restarted one) sends nothing.
        again = watcher(team.repo, team)
        again.tick()
        assert again.close(drain=60)
        assert again.notifier is not None and again.notifier.sent == []
        assert len(rx.arrivals) == 1
        # The next block of the same task is a new event, with a new id.
        team.do("planner-1", Unblock, task="task-1")
        team.do("coder-2", Claim, task="task-1", worktree=".worktrees/task-1",
                base_commit="a" * 40)
        team.do("coder-2", Block, task="task-1", reason="again", questions=("and now?",))
        w2 = watcher(team.repo, team)
        w2.tick()
        assert w2.close(drain=60)
        docs = rx.wait_for(2)
        assert docs[1]["id"] != doc["id"] and docs[1]["task"] == "task-1"


def test_no_target_sends_nothing_and_claims_nothing(team: Team) -> None:
    block(team)
    w = watcher(team.repo, team)
    assert [r.alert.kind for r in w.tick()] == ["BLOCKED"]
    assert w.close(drain=10)
    assert git(team.repo, "for-each-ref", NOTIFY_REFS).strip() == ""


def test_retries_keep_the_id_until_the_receiver_takes_it(team: Team) -> None:
    with Receiver(answers=[503, 500]) as rx:
        hook(team, rx.url)
        block(team)
        w = watcher(team.repo, team)
        w.tick()
        [doc] = rx.wait_for(1)
        assert w.close(drain=60)
        assert len(rx.arrivals) == 3
        assert {h["Idempotency-Key"] for h in rx.headers} == {doc["id"]}
        assert "NOTIFY" not in (team.repo / ".liza" / "alerts.log").read_text()


def test_a_failing_url_is_one_line_and_an_alarm(team: Team) -> None:
    with Receiver(answers=[404, 404]) as rx:
        hook(team, rx.url)
        block(team)
        block(team, "task-2")
        w = watcher(team.repo, team)
        w.tick()
        assert w.close(drain=60)
        assert len(rx.arrivals) == 2  # a 404 is not retried: it will not get better
    log = (team.repo / ".liza" / "alerts.log").read_text().splitlines()
    gave_up = [line for line in log if "notify: gave up" in line]
    assert len(gave_up) == 2 and "HTTP 404" in gave_up[0]
    alarms = [line for line in log if "NOTIFY FAILED" in line]
    assert len(alarms) == 1  # one alarm while the target fails, not one per event
    # The team went on: the board is where it was, nothing waited on the receiver.
    assert "BLOCKED: task-2" in "\n".join(log)


def test_the_command_gets_the_document_on_stdin(team: Team, tmp_path: Path) -> None:
    out = tmp_path / "got.json"
    git(team.repo, "config", "liza.escalationCommand",
        f'cat > {out}; echo "$LIZA_EVENT $LIZA_TASK" > {out}.env')
    block(team)
    w = watcher(team.repo, team)
    w.tick()
    assert w.close(drain=60)
    doc = json.loads(out.read_text())
    assert (doc["event"], doc["task"]) == ("BLOCKED", "task-1")
    assert Path(f"{out}.env").read_text() == "BLOCKED task-1\n"


def test_the_webhook_is_the_humans_to_set(team: Team) -> None:
    from gitliza.errors import PermissionDenied
    with pytest.raises(PermissionDenied):
        team.do("planner-1", ConfigSet, key="escalation_webhook", value="http://evil.example/")
    assert team.human.store.board()[0].config.escalation_webhook is None


def test_a_goal_end_and_a_checkpoint_are_sent(team: Team) -> None:
    from gitliza.core.ops import AbortGoal
    with Receiver() as rx:
        hook(team, rx.url)
        w = watcher(team.repo, team)
        w.tick()
        team.human.do(AbortGoal, reason="changed our minds")
        w.tick()
        assert w.close(drain=60)
        [doc] = rx.wait_for(1)
        assert doc["event"] == "GOAL_ENDED" and "ABORTED" in doc["line"]
        assert doc["board_commit"] == git(team.repo, "rev-parse", "refs/liza/state").strip()


@pytest.mark.slow
def test_two_machines_one_sender(team: Team, tmp_path: Path) -> None:
    """Two clones of one remote both see the same BLOCKED commit and race to send it: the
    remote's compare-and-swap on the claim ref lets exactly one POST out, through the server's
    own hook."""
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    install(bare, server=True, python=sys.executable)  # the claims go through the real hook
    with Receiver() as rx:
        hook(team, rx.url)
        block(team)
        git(team.repo, "remote", "add", "origin", str(bare))
        git(team.repo, "push", "-q", "--no-verify", "origin", "refs/liza/state:refs/liza/state")
        other = tmp_path / "other"
        git(tmp_path, "clone", "-q", str(bare), str(other))
        git(other, "fetch", "-q", "origin", "refs/liza/state:refs/liza/state")
        for round_ in range(3):  # three races: each one has one winner
            if round_:
                block(team, f"task-{round_ + 1}")
                git(team.repo, "push", "-q", "--no-verify", "origin",
                    "refs/liza/state:refs/liza/state")
                git(other, "fetch", "-q", "origin", "+refs/liza/state:refs/liza/state")
            ws = [watcher(team.repo, team, remote=True), watcher(other, team, remote=True)]
            ts = [threading.Thread(target=w.tick) for w in ws]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            for w in ws:
                assert w.close(drain=60)
            rx.wait_for(round_ + 1)
            senders = [len(w.notifier.sent) for w in ws if w.notifier is not None]
            assert sum(senders) == 1, (senders, [w.err.getvalue() for w in ws])
        assert len(rx.arrivals) == 3
        assert len({p["id"] for p in rx.posts}) == 3
        claims = git(bare, "for-each-ref", "--format=%(refname)", NOTIFY_REFS).split()
        assert sorted(claims) == sorted(NOTIFY_REFS + p["id"] for p in rx.posts)
        for p in rx.posts:  # each claim is a child of the commit that caused its event
            assert git(bare, "rev-parse", f"{NOTIFY_REFS}{p['id']}^") == p["board_commit"]


def test_a_circuit_breaker_trip_is_sent_naming_its_commit(team: Team) -> None:
    from gitliza.core.ops.governance import Circuit
    with Receiver() as rx:
        hook(team, rx.url)
        w = watcher(team.repo, team)
        w.tick()
        team.human.do(Circuit, result="TRIGGERED", pattern="retry_cluster",
                      severity="ARCHITECTURE_FLAW")
        trip = git(team.repo, "rev-parse", "refs/liza/state").strip()
        team.human.do(ConfigSet, key="alarm_stall", value="86400")  # a later commit
        w.tick()
        assert w.close(drain=60)
        [doc] = [p for p in rx.wait_for(1) if p["event"] == "CIRCUIT_TRIPPED"]
    assert doc["board_commit"] == trip and "retry_cluster" in doc["line"]


def test_a_clones_own_url_wins_over_the_boards(team: Team) -> None:
    """A secret URL kept off the board (which every agent reads) in this clone's git config."""
    with Receiver() as board_rx, Receiver() as own_rx:
        hook(team, board_rx.url)
        git(team.repo, "config", "liza.escalationWebhook", own_rx.url)
        block(team)
        w = watcher(team.repo, team)
        w.tick()
        assert w.close(drain=60)
        [doc] = own_rx.wait_for(1)
        assert doc["event"] == "BLOCKED" and board_rx.arrivals == []


def test_a_block_then_its_anomaly_is_one_post_whichever_tip_a_watcher_sees(team: Team) -> None:
    """Issue 47: a supervisor that gives up blocks its task, then records a retry_loop anomaly
    on it. A watcher that saw the block and one that first looked after the anomaly named two
    different causes (the newest commit naming the task), so one BLOCKED event went out twice
    under two ids. The cause is the commit that moved the task to BLOCKED."""
    from gitliza.core.ops import AnomalyOp
    with Receiver() as rx:
        hook(team, rx.url)
        block(team)
        cause = git(team.repo, "rev-parse", "refs/liza/state").strip()
        first = watcher(team.repo, team)
        first.tick()
        assert first.close(drain=60)
        team.do("coder-1", AnomalyOp, type="retry_loop", task="task-1",
                details=(("count", 5), ("error_pattern", "5 runs without progress"),
                         ("supervisor_gave_up", "coder")))
        second = watcher(team.repo, team)  # another watcher (team's, the human's) sees it now
        second.tick()
        assert second.close(drain=60)
        rx.wait_for(2)  # the BLOCKED and the GAVE_UP events, each once
        assert sorted(d["event"] for d in rx.posts) == ["BLOCKED", "GAVE_UP"], rx.posts
        blocked = [d for d in rx.posts if d["event"] == "BLOCKED"]
        assert blocked[0]["board_commit"] == cause
        assert second.notifier is not None and not any(
            i == blocked[0]["id"] for i in second.notifier.sent)
