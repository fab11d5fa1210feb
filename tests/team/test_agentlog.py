"""Per-run log and prompt files: unambiguous names, rotation, the logs of a task, and where each
agent CLI keeps its own transcript."""
from __future__ import annotations

from pathlib import Path

from gitliza.services import agentlog


def test_names_rotation_and_the_logs_of_a_task(tmp_path: Path) -> None:
    d = tmp_path / agentlog.LOGS_DIR
    d.mkdir()
    made = []
    for i in range(7):
        now = f"2026-01-01T00:00:0{i}Z"
        for agent, task in (("coder-1", "t1"), ("coder-1-x", "t1"), ("coder-1", "t1-2")):
            p = agentlog.log_path(d, agent, task, now)
            agentlog.open_log(p, f"# {agent} {task}").close()
            made.append(p)
    again = agentlog.log_path(d, "coder-1", "t1", "2026-01-01T00:00:06Z")
    assert again.name == "coder-1--t1--2026-01-01T00-00-06Z-2.log"  # same second: a new file
    agentlog.rotate(d, "coder-1", ".log", keep=3)
    left = sorted(p.name for p in d.iterdir())
    # Only coder-1's files rotate (not coder-1-x's, whose name starts the same way).
    assert sum(n.startswith("coder-1--") for n in left) == 3
    assert sum(n.startswith("coder-1-x--") for n in left) == 7
    assert [p.name for p in agentlog.for_task(tmp_path, "t1")] == [
        *(f"coder-1-x--t1--2026-01-01T00-00-0{i}Z.log" for i in range(6)),
        "coder-1--t1--2026-01-01T00-00-06Z.log", "coder-1-x--t1--2026-01-01T00-00-06Z.log"]
    assert [p.name for p in agentlog.for_task(tmp_path, "t1-2")] == [
        f"coder-1--t1-2--2026-01-01T00-00-0{i}Z.log" for i in (5, 6)]
    assert agentlog.for_task(tmp_path / "nowhere", "t1") == []


def test_where_each_cli_keeps_its_transcript(tmp_path: Path) -> None:
    env = {"HOME": "/home/u"}
    wt = Path("/repo/.worktrees/t1")
    assert agentlog.transcript(["claude", "-p"], env, wt) == \
        "/home/u/.claude/projects/-repo--worktrees-t1/<session>.jsonl"
    assert agentlog.transcript(["/usr/bin/codex", "exec"], {**env, "CODEX_HOME": "/c"}, wt) == \
        "/c/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl"
    assert str(agentlog.transcript(["gemini"], env, wt)).startswith("/home/u/.gemini/tmp/")
    assert agentlog.transcript(["vibe"], env, wt) == "/home/u/.vibe/logs/session"
    assert agentlog.transcript(["python3", "agent.py"], env, wt) is None
