"""`git liza agent`: real supervisor processes running small scripted agents on a real repository
with short lease and heartbeat settings. No timed assertions: every wait has a generous bound and
the checks are about what happened (the board's log, exit codes, the supervisor's output)."""
from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.team.procs import (Sup, add_task, make_board, ops, script, task_of, wait_status)
from tests.cli.test_board import liza, ok, tip
from tests.conftest import git

pytestmark = pytest.mark.slow

# A coder agent that commits a file in its worktree and submits.
SUBMIT = """test -n "$LIZA_TASK_ID" && test "$(pwd)" = "$LIZA_WORKTREE"
echo "$LIZA_TASK_ID" > "$LIZA_TASK_ID.txt"
git add "$LIZA_TASK_ID.txt"
git diff --cached --quiet || git commit -q -m "implement $LIZA_TASK_ID"
git liza submit "$LIZA_TASK_ID"
"""


def test_exit_codes_crash_backoff_then_graceful_restart_then_done(repo: Path,
                                                                    tmp_path: Path) -> None:
    make_board(repo)
    add_task(repo, "t1")
    runs = tmp_path / "runs"
    agent = script(tmp_path, "agent.sh", f"""n=$(cat {runs} 2>/dev/null || echo 0); n=$((n+1))
echo $n > {runs}
echo "session $n prompt=$LIZA_PROMPT_FILE role=$LIZA_ROLE"
case $n in 1|2) exit 3;; 3) exit 42;; esac
grep -q "RESUME: Task t1" "$LIZA_PROMPT_FILE"
""" + SUBMIT)
    sup = Sup(repo, "coder", "coder-1", "--", str(agent))
    sup.expect("crashed (exit 3, 1 in a row) (no progress 1/5); restarting in 1s")
    sup.expect("crashed (exit 3, 2 in a row) (no progress 2/5); restarting in 2s")  # doubled
    sup.expect("exited 42 (graceful) (no progress 3/5); restarting in 2s")  # capped
    sup.expect("agent completed")
    ok(liza(repo, "abort", agent=None))
    assert sup.wait() == 0
    assert task_of(repo, "t1")["status"] == "READY_FOR_REVIEW"
    # One claim for the four sessions: the restarts resumed the task the coder held.
    assert [o for o in ops(repo) if o[0] == "claim"] == [("claim", "coder-1", "t1")]
    saved = sorted((repo / ".liza" / "agent-prompts").glob("coder-1-*.txt"))
    assert len(saved) == 4 and "=== ASSIGNED TASK ===" in saved[0].read_text()
    # The agent's output is in one log per run (not the supervisor's), listed by `show`.
    logs = task_of(repo, "t1")["agent_logs"]
    assert len(logs) == 4 and all("/.liza/agent-logs/coder-1--t1--" in p for p in logs)
    assert "session 1 prompt=" in Path(logs[0]).read_text()
    assert "session 4 prompt=" in Path(logs[3]).read_text()
    assert f"agent log: {logs[0]}" in sup.output()
    # Only a failed run's last line (its error, issue 47) reaches the supervisor's output.
    assert all("role=coder" not in x or "crashed (exit 3" in x for x in sup.lines)
    assert "crashed (exit 3, 1 in a row) (no progress 1/5); restarting in 1s; agent.sh agent " \
           "error: session 1 prompt=" in sup.output()
    shown = ok(liza(repo, "show", "t1", agent=None))
    assert "agent logs (this machine, oldest first):" in shown and logs[3] in shown


def test_pause_file_and_board_op_hold_spawning_until_resume(repo: Path, tmp_path: Path) -> None:
    make_board(repo)
    add_task(repo, "t1")
    (repo / ".liza").mkdir(exist_ok=True)
    (repo / ".liza" / "PAUSE").touch()
    sup = Sup(repo, "coder", "coder-1", "--", str(script(tmp_path, "a.sh", SUBMIT)))
    sup.expect("PAUSE: waiting")
    assert task_of(repo, "t1")["status"] == "UNCLAIMED"
    ok(liza(repo, "pause", "--reason", "hold on", agent=None))
    (repo / ".liza" / "PAUSE").unlink()  # the board still says PAUSED: still held
    ok(liza(repo, "resume", "--note", "go", agent=None))
    wait_status(repo, "t1", "READY_FOR_REVIEW")
    names = [o[0] for o in ops(repo)]
    assert names.index("claim") > names.index("resume") > names.index("pause")
    ok(liza(repo, "abort", agent=None))
    assert sup.wait() == 0


def test_abort_ends_every_supervisor(repo: Path, tmp_path: Path) -> None:
    make_board(repo)
    agent = str(script(tmp_path, "noop.sh", "exit 0\n"))
    add_task(repo, "t1")
    ok(liza(repo, "pause", agent=None))  # nobody starts anything; everybody waits
    sups = [Sup(repo, role, ident, "--", agent) for role, ident in
            [("planner", "planner-1"), ("coder", "coder-1"), ("coder", "coder-2"),
             ("code-reviewer", "reviewer-1")]]
    for s in sups:
        s.expect("PAUSE: waiting")
    ok(liza(repo, "abort", "--reason", "stop the team", agent=None))
    assert [s.wait() for s in sups] == [0, 0, 0, 0]
    assert all("ABORT; exiting" in s.output() for s in sups)
    # Each gave its generation token back.
    log = json.loads(ok(liza(repo, "log", "--all", "--json", agent=None)))
    ends = [e["actor"] for e in log if e["op"] == "supervise" and e["args"]["mode"] == "end"]
    assert sorted(ends) == ["coder-1", "coder-2", "planner-1", "reviewer-1"]


def test_abort_file_ends_a_supervisor(repo: Path, tmp_path: Path) -> None:
    make_board(repo)
    sup = Sup(repo, "reviewer", "reviewer-1", "--", "true")
    sup.expect("generation 1")
    (repo / ".liza").mkdir(exist_ok=True)
    (repo / ".liza" / "ABORT").touch()
    assert sup.wait() == 0 and "ABORT; exiting" in sup.output()
    # It held nothing: it leaves the board, as liza-agent.sh's exit trap removes its agent
    # (`status` would list it as IDLE forever otherwise).
    agents = json.loads(ok(liza(repo, "status", "--json", agent=None)))["agents"]
    assert "reviewer-1" not in {a["id"] for a in agents}
    ok(liza(repo, "verify", agent=None))


def test_a_long_running_agent_keeps_its_lease(repo: Path, tmp_path: Path) -> None:
    make_board(repo)  # lease 5 s, heartbeat every 1 s
    add_task(repo, "t1")
    agent = script(tmp_path, "slow.sh", "sleep 12\n" + SUBMIT)
    sup = Sup(repo, "coder", "coder-1", "--", str(agent))
    sup.expect("started agent")
    # A second coder waits for work: had coder-1's lease lapsed, it would take t1 over.
    rival = Sup(repo, "coder", "coder-2", "--", str(script(tmp_path, "ok.sh", SUBMIT)))
    wait_status(repo, "t1", "READY_FOR_REVIEW")  # submit would be refused on an expired lease
    t = task_of(repo, "t1")
    assert t["assigned_to"] == "coder-1" and "reclaimed" not in [h["event"] for h in t["history"]]
    assert [h.get("agent") for h in t["history"] if h["event"] == "ready_for_review"] == \
        ["coder-1"]
    # The lease was kept off the audit chain (refs/liza/live/coder-1): the board holds only the
    # protocol, no heartbeat and no token renewal.
    assert not [o for o in ops(repo) if o[0] == "heartbeat"]
    assert git(repo, "rev-parse", "-q", "--verify", "refs/liza/live/coder-1", check=False)
    log = json.loads(ok(liza(repo, "log", "--all", "--json", agent=None)))
    assert not [e for e in log if e["op"] == "supervise" and e["args"].get("mode") == "renew"]
    ok(liza(repo, "abort", agent=None))
    assert sup.wait() == 0 and rival.wait() == 0
    ok(liza(repo, "verify", agent=None))


def test_a_killed_supervisors_lease_expires_and_another_coder_takes_over(
        repo: Path, tmp_path: Path) -> None:
    make_board(repo)
    add_task(repo, "t1")
    hang = script(tmp_path, "hang.sh", "exec sleep 600\n")
    first = Sup(repo, "coder", "coder-1", "--", str(hang))
    pgid = int(first.expect("started agent (pid ").split("(pid ")[1].split(")")[0])
    # The machine dies: supervisor and agent are gone at once, nothing is released.
    first.kill()
    os.killpg(pgid, signal.SIGKILL)  # the agent runs in its own process group
    assert task_of(repo, "t1")["assigned_to"] == "coder-1"
    second = Sup(repo, "coder", "coder-2", "--", str(script(tmp_path, "ok.sh", SUBMIT)))
    wait_status(repo, "t1", "READY_FOR_REVIEW")  # woke up on the lease expiry, no board write
    t = task_of(repo, "t1")
    assert t["assigned_to"] == "coder-2" and t["history"][-2]["event"] == "reclaimed"
    ok(liza(repo, "abort", agent=None))
    assert second.wait() == 0


def test_two_supervisors_with_one_id_exactly_one_keeps_it(repo: Path, tmp_path: Path) -> None:
    make_board(repo)
    a = Sup(repo, "coder", "coder-1", "--", "true")
    a.expect("generation 1")
    b = Sup(repo, "coder", "coder-1", "--", "true")
    assert b.wait() == 1 and "held by a live supervisor, generation 1" in b.output()
    c = Sup(repo, "coder", "coder-1", "--takeover", "--", "true")
    c.expect("generation 2")
    assert a.wait() == 1 and "standing down" in a.output()
    # The survivor still works: it claims and runs its agent.
    add_task(repo, "t1")
    c.expect("claimed t1")
    ok(liza(repo, "abort", agent=None))
    assert c.wait() == 0


def test_an_agent_whose_task_was_taken_over_is_stopped(repo: Path, tmp_path: Path) -> None:
    make_board(repo)
    add_task(repo, "t1")
    hang = script(tmp_path, "hang.sh", "exec sleep 600\n")
    first = Sup(repo, "coder", "coder-1", "--", str(hang))
    first.expect("started agent")
    first.signal(signal.SIGSTOP)  # frozen: no heartbeat, the lease runs out
    try:
        second = Sup(repo, "coder", "coder-2", "--", str(script(tmp_path, "ok.sh", SUBMIT)))
        wait_status(repo, "t1", "READY_FOR_REVIEW")
    finally:
        first.signal(signal.SIGCONT)
    line = first.expect("agent stopped (t1 ")
    assert "coder-2" in line or "READY_FOR_REVIEW" in line
    ok(liza(repo, "abort", agent=None))
    assert first.wait() == 0 and second.wait() == 0


def test_the_reviewer_supervisor_merges_what_it_approved(repo: Path, tmp_path: Path) -> None:
    make_board(repo, reviewer_max_wait="2")
    add_task(repo, "t1")
    coder = Sup(repo, "coder", "coder-1", "--once", "--", str(script(tmp_path, "c.sh", SUBMIT)))
    assert coder.wait() == 0
    reviewer = script(tmp_path, "r.sh", """test "$(git rev-parse HEAD)" = "$LIZA_REVIEW_COMMIT"
test -f "$LIZA_TASK_ID.txt"
git liza verdict "$LIZA_TASK_ID" approve --commit "$LIZA_REVIEW_COMMIT"
""")
    sup = Sup(repo, "code-reviewer", "reviewer-1", "--", str(reviewer))
    assert sup.wait() == 0, sup.output()
    assert "merged t1 into integration" in sup.output()
    t = task_of(repo, "t1")
    assert t["status"] == "MERGED"
    merged = [o for o in ops(repo) if o[0] == "merge"]
    assert merged == [("merge", "reviewer-1", "t1")]
    ok(liza(repo, "verify", agent=None))


def test_bad_invocations_change_nothing(repo: Path) -> None:
    make_board(repo)
    ok(liza(repo, "register", "m1-coder-9", "--role", "planner", agent=None))
    before = tip(repo)
    for args, agent, code, msg in [
            (["agent", "boss"], "coder-1", 1, "is not planner, coder"),
            (["agent", "coder"], None, 1, "needs an agent id"),
            (["agent", "coder", "--cli", "emacs"], "coder-1", 1, "--cli must be"),
            (["agent", "coder", "--", "no-such-agent-cli"], "coder-1", 5, "not found on PATH"),
            (["agent", "coder", "--", "true"], "planner-9", 1, "does not name the coder role"),
            (["agent", "coder", "--", "true"], "m1-coder-9", 1, "registered as planner")]:
        r = liza(repo, *args, agent=agent)
        assert r.returncode == code and msg in r.stderr, r.stderr
    assert tip(repo) == before


def test_sigterm_stops_the_agent_and_leaves_the_board_consistent(repo: Path,
                                                                   tmp_path: Path) -> None:
    make_board(repo)
    add_task(repo, "t1")
    sup = Sup(repo, "coder", "coder-1", "--", str(script(tmp_path, "hang.sh", "exec sleep 600\n")))
    pgid = int(sup.expect("started agent (pid ").split("(pid ")[1].split(")")[0])
    sup.signal(signal.SIGTERM)
    assert sup.wait() == 0 and "SIGTERM: stopping the agent" in sup.output()
    with pytest.raises(ProcessLookupError):
        for _ in range(600):  # SIGKILL follows SIGTERM after the grace period at the latest
            os.killpg(pgid, 0)
            time.sleep(0.1)
    t = task_of(repo, "t1")
    assert t["status"] == "CLAIMED" and t["assigned_to"] == "coder-1"  # left to expire
    agents = json.loads(ok(liza(repo, "status", "--json", agent=None)))["agents"]
    assert "coder-1" in {a["id"] for a in agents}  # it holds t1: it stays until taken over
    log = json.loads(ok(liza(repo, "log", "--all", "--json", "-n", "1", agent=None)))
    assert log[0]["op"] == "supervise" and log[0]["args"]["mode"] == "end"
    ok(liza(repo, "validate", agent=None))


def test_a_handoff_reaches_the_next_sessions_prompt_and_is_then_taken(repo: Path,
                                                                       tmp_path: Path) -> None:
    make_board(repo)
    add_task(repo, "t1")
    runs = tmp_path / "runs"
    agent = script(tmp_path, "agent.sh", f"""n=$(cat {runs} 2>/dev/null || echo 0); n=$((n+1))
echo $n > {runs}
if [ $n = 1 ]; then
  git liza handoff t1 --summary "parser half done" --next-action "write the tests"
  sleep 2  # the lease keeper beats meanwhile: the handoff stays pending
  exit 42
fi
grep -q "=== HANDOFF FROM coder-1" "$LIZA_PROMPT_FILE"
grep -A1 "^NEXT ACTION (untrusted" "$LIZA_PROMPT_FILE" | grep -q "  | write the tests"
""" + SUBMIT)
    sup = Sup(repo, "coder", "coder-1", "--", str(agent))
    sup.expect("exited 42 (graceful); restarting in 1s")
    sup.expect("agent completed")
    ok(liza(repo, "abort", agent=None))
    assert sup.wait() == 0
    t = task_of(repo, "t1")
    assert t["status"] == "READY_FOR_REVIEW" and not t.get("handoff_pending")
    events = [h["event"] for h in t["history"]]
    assert "handoff" in events
