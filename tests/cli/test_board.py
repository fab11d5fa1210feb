"""The planner CLI end to end, through the real `git liza` executable."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import commit_specs, git

GIT_LIZA = str(Path(sys.executable).parent / "git-liza")


def liza(repo: Path, *args: str, agent: str | None = "planner-1",
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    e = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    e.pop("LIZA_AGENT_ID", None)
    if agent:
        e["LIZA_AGENT_ID"] = agent
    e.update(env or {})
    return subprocess.run(["git", "liza", *args], cwd=repo, capture_output=True, text=True,
                          env=e, timeout=60)


def ok(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 0, r.stderr
    return r.stdout


def tip(repo: Path) -> str:
    return git(repo, "rev-parse", "-q", "--verify", "refs/liza/state", check=False)


@pytest.fixture
def board(repo: Path) -> Path:
    commit_specs(repo, "specs/r.md")
    ok(liza(repo, "init", "Retry logic for all API calls", agent=None))
    ok(liza(repo, "register", "planner-1", "--role", "planner", agent=None))
    return repo


def test_planning_session(board: Path) -> None:
    ok(liza(board, "add", "task-1", "--desc", "retry get_user", "--spec-ref", "specs/r.md",
            "--done-when", "retries 3x", "--scope", "UserAPI", "--ready"))
    ok(liza(board, "add", "task-2", "--desc", "retry orders", "--depends-on", "task-1",
            "--priority", "2"))
    out = json.loads(ok(liza(board, "add", "task-3", "--desc", "x", "--json")))
    assert out["to"] == "DRAFT" and out["state"] == tip(board) and out["task"] == "task-3"
    status = json.loads(ok(liza(board, "status", "--json")))
    assert {t["id"]: t["status"] for t in status["tasks"]} == {
        "task-1": "UNCLAIMED", "task-2": "DRAFT", "task-3": "DRAFT"}
    assert status["claimable"] == ["task-1"]
    assert json.loads(ok(liza(board, "ready", "--json")))[0]["id"] == "task-1"
    shown = json.loads(ok(liza(board, "show", "task-1", "--json")))
    assert shown["done_when"] == "retries 3x" and shown["history"][0]["event"] == "created"
    log = json.loads(ok(liza(board, "log", "--json", "-n", "2")))
    assert [e["op"] for e in log] == ["add", "add"] and log[0]["task"] == "task-3"
    assert [e["task"] for e in json.loads(ok(liza(board, "log", "--json", "--task", "task-1")))] \
        == ["task-1"]
    past = json.loads(ok(liza(board, "status", "--json", "--at", "refs/liza/state~2")))
    assert [t["id"] for t in past["tasks"]] == ["task-1"]
    assert ok(liza(board, "validate")).strip() == "VALID"
    ok(liza(board, "rescope", "task-3", "--into", "task-3a", "--into", "task-3b",
            "--reason", "too broad"))
    ok(liza(board, "abandon", "task-3a", "--reason", "not needed"))
    ok(liza(board, "note", "use the retry util", "--for", "task-1", agent=None))
    ok(liza(board, "spec-change", "specs/r.md", "--change", "auth retry"))
    ok(liza(board, "config", "lease_duration", "600"))
    assert ok(liza(board, "config", "lease_duration")).strip() == "600"
    trail = git(board, "log", "--format=%s", "refs/liza/state")
    assert "rescope task-3 (DRAFT -> SUPERSEDED) into task-3a, task-3b by planner-1" in trail
    assert git(board, "fsck", "--strict", "--no-dangling") == ""


@pytest.mark.parametrize("bad", ["../x", "/abs", "", "has space", "ctl\x07x", "Task-1",
                                 "x" * 65])
def test_bad_ids_exit_1_with_one_line_and_nothing_written(board: Path, bad: str) -> None:
    before = tip(board)
    r = liza(board, "add", bad, "--desc", "d")
    assert r.returncode == 1 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("gitliza: error:")
    assert tip(board) == before
    r = liza(board, "register", bad, "--role", "coder")
    assert r.returncode == 1 and tip(board) == before


@pytest.mark.parametrize("args,needle", [
    (["init", "again"], "already exists"),
    (["finalize", "nope"], "no task 'nope'"),
    (["add", "task-9", "--desc", "d", "--depends-on", "ghost"], "does not exist"),
    (["add", "task-9", "--desc", "d", "--ready"], "missing spec_ref, done_when, scope"),
    (["add", "task-9", "--desc", "d", "--priority", "9"], "priority"),
    (["config", "lease_duration", "soon"], "positive integer"),
    (["config", "nope", "1"], "unknown config key"),
    (["anomaly", "external_blocker"], "blocker_service"),
    (["block", "nope", "--reason", "r", "--question", "q"], "no task"),
    (["no-such-command"], "No such command"),
    (["add"], "add needs a TASK id and --desc"),
])
def test_errors_are_one_line_exit_1_and_leave_the_ref(board: Path, args: list[str],
                                                      needle: str) -> None:
    before = tip(board)
    r = liza(board, *args)
    assert r.returncode == 1, r
    assert needle in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert tip(board) == before


def test_roles_and_agent_identity(board: Path) -> None:
    ok(liza(board, "register", "coder-1", "--role", "coder"))
    r = liza(board, "add", "task-1", "--desc", "d", agent="coder-1")
    assert r.returncode == 1 and "not allowed for coder-1" in r.stderr
    r = liza(board, "add", "task-1", "--desc", "d", "--agent", "planner-1", agent="coder-1")
    assert r.returncode == 0
    r = liza(board, "add", "task-2", "--desc", "d", agent="ghost")
    assert r.returncode == 1 and "not a registered agent" in r.stderr


def test_outside_a_repository(tmp_path: Path) -> None:
    r = liza(tmp_path, "status")
    assert r.returncode == 1 and "not a git repository" in r.stderr


def test_no_board_yet(repo: Path) -> None:
    r = liza(repo, "status")
    assert r.returncode == 1 and "git liza init" in r.stderr


def test_validate_reports_a_broken_board_with_exit_4(board: Path) -> None:
    import pygit2
    from gitliza.core.encoding.layout import path_of
    from gitliza.core.model import Task
    r = pygit2.Repository(str(board))
    tipc = r[r.lookup_reference("refs/liza/state").target]
    bad = Task(id="task-x", description="d", status="CLAIMED",  # type: ignore[arg-type]
               created="2025-01-17T14:00:00Z", spec_ref="s", done_when="w")
    from gitliza.git.store import Store
    tree = Store(r).build_tree(tipc.tree, {("tasks", "task-x"): bad})
    sig = pygit2.Signature("x", "x@y", 0, 0)
    r.lookup_reference("refs/liza/state").set_target(
        r.create_commit(None, sig, sig, "hand edit", tree, [tipc.id]))
    assert path_of("tasks", "task-x") in [e for e in git(board, "ls-tree", "-r", "--name-only",
                                                         "refs/liza/state").splitlines()]
    res = liza(board, "validate")
    assert res.returncode == 4
    assert "CLAIMED task must have assigned_to" in res.stdout
    out: Any = json.loads(liza(board, "validate", "--json").stdout)
    assert out["valid"] is False and out["violations"]


def test_missing_dependency_exits_5_with_one_line(board: Path, tmp_path: Path) -> None:
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    # stands in for an environment where pygit2 was never installed
    (shadow / "pygit2.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'pygit2'\", name='pygit2')\n")
    r = liza(board, "status", env={"PYTHONPATH": str(shadow)})
    assert r.returncode == 5
    assert r.stderr.strip().splitlines() == [
        "gitliza: error: missing dependency: Python module 'pygit2' is not installed "
        "(reinstall gitliza with its dependencies: pip install gitliza)"]
