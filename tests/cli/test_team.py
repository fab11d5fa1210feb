"""`git liza pause/resume/abort` (board ops every machine sees) and `git liza wait`, through the
real executable."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.team.procs import env_for as _env
from tests.conftest import commit_specs
from tests.cli.test_board import liza, ok, tip


@pytest.fixture
def board(repo: Path) -> Path:
    commit_specs(repo, "s.md")  # add --ready checks the spec is on the integration branch
    ok(liza(repo, "init", "Build hello", agent=None))
    ok(liza(repo, "register", "planner-1", "--role", "planner", agent=None))
    ok(liza(repo, "register", "coder-1", "--role", "coder", agent=None))
    return repo


def test_pause_resume_abort_show_in_status_log_and_verify(board: Path) -> None:
    ok(liza(board, "pause", "--reason", "lunch break", agent=None))
    assert "PAUSED by human" in ok(liza(board, "status"))
    st = json.loads(ok(liza(board, "status", "--json")))
    assert st["control"]["paused"] is True and st["control"]["pause_reason"] == "lunch break"
    before = tip(board)
    r = liza(board, "pause", agent=None)
    assert r.returncode == 1 and "already paused" in r.stderr and tip(board) == before
    r = liza(board, "abort", agent="coder-1")
    assert r.returncode == 1 and "not allowed for coder-1" in r.stderr and tip(board) == before
    ok(liza(board, "resume", "--decision", "continue", "--note", "fed"))
    ok(liza(board, "abort", "--reason", "stop", agent=None))
    out = ok(liza(board, "status"))
    assert "ABORTED by human" in out and "PAUSED" not in out
    log = json.loads(ok(liza(board, "log", "--json", "-n", "3")))
    assert [e["op"] for e in log] == ["abort", "resume", "pause"]
    ok(liza(board, "verify"))


def test_wait_for_a_status_set_by_another_process(board: Path) -> None:
    ok(liza(board, "add", "t1", "--desc", "d"))
    waiter = subprocess.Popen(
        ["git", "liza", "wait", "status", "--task", "t1", "--status", "abandoned", "--json"],
        cwd=board, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=_env())
    ok(liza(board, "note", "not yet", "--for", "t1"))  # a change that does not satisfy it
    ok(liza(board, "abandon", "t1", "--reason", "not needed"))
    out, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 0, err
    res = json.loads(out)
    assert res["met"] is True and res["detail"] == ["t1 ABANDONED"] and res["state"] == tip(board)


def test_wait_change_and_timeout(board: Path) -> None:
    r = liza(board, "wait", "change", "--timeout", "0.3", agent=None)
    assert r.returncode == 1 and "timed out" in r.stdout
    since = tip(board)
    waiter = subprocess.Popen(["git", "liza", "wait", "change", "--since", since], cwd=board,
                              stdout=subprocess.PIPE, text=True, env=_env())
    ok(liza(board, "pause", agent=None))  # before or after the waiter started: no matter
    out, _ = waiter.communicate(timeout=60)
    assert waiter.returncode == 0 and f"state {tip(board)[:12]}" in out
    r = liza(board, "wait", "change", "--since", tip(board), "--timeout", "0.2", agent=None)
    assert r.returncode == 1


def test_wait_work_for_a_coder(board: Path) -> None:
    waiter = subprocess.Popen(["git", "liza", "wait", "work", "--timeout", "60"], cwd=board,
                              stdout=subprocess.PIPE, text=True, env=_env("coder-1"))
    ok(liza(board, "add", "t1", "--desc", "d", "--spec-ref", "README.md", "--done-when", "w",
            "--scope", "s", "--ready"))
    out, _ = waiter.communicate(timeout=60)
    assert waiter.returncode == 0 and "work for me: t1" in out


@pytest.mark.parametrize("args,msg", [
    (["wait", "sideways"], "unknown wait condition"),
    (["wait", "status", "--task", "t1"], "needs --task TASK and --status STATUS"),
    (["wait", "status", "--task", "t1", "--status", "DONE"], "is not a task status"),
    (["wait", "work"], "needs an agent"),
    (["wait", "work", "--since", "HEAD"], "--since goes with"),
    (["wait", "change", "--since", "nope"], "no state revision"),
])
def test_wait_bad_input_is_one_line_exit_1(board: Path, args: list[str], msg: str) -> None:
    r = liza(board, *args, agent=None)
    assert r.returncode == 1 and msg in r.stderr and len(r.stderr.strip().splitlines()) == 1
