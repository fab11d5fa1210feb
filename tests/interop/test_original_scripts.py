"""The original Liza scripts, run for real from ../shared/reference/liza/scripts/ (never copied
here) with yaqpy standing in for mikefarah's yq: a board they make imports and verifies, and the
`.liza/state.yaml` gitliza materializes passes their validator and their metrics script.

yaqpy speaks yq's language except `if ... then ... else ... end` (liza-validate.sh uses it only
for a CLAIMED task with dependencies), string literals inside `\\(...)` and arguments over 255
bytes, so the boards below stay clear of those."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import git
from tests.cli.test_board import liza, ok

SCRIPTS = Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "liza" / "scripts"


@pytest.fixture
def yq_env(tmp_path: Path) -> dict[str, str]:
    """The environment the scripts run in: `yq` on PATH is a shim for yaqpy."""
    if not SCRIPTS.is_dir():
        pytest.skip(f"the original Liza scripts are not at {SCRIPTS}")
    yaqpy = Path(sys.executable).parent / "yaqpy"
    if not yaqpy.exists():
        found = shutil.which("yaqpy")
        if found is None:
            pytest.skip("yaqpy (mikefarah yq's language, PyPI) is not installed: pip install yaqpy")
        yaqpy = Path(found)
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "yq").write_text(f'#!/bin/sh\nexec "{yaqpy}" "$@"\n')
    (shim / "yq").chmod(0o755)
    path = os.pathsep.join([str(shim), str(Path(sys.executable).parent), os.environ["PATH"]])
    return dict(os.environ, PATH=path)


def run(script: str, cwd: Path, env: dict[str, str], *args: str,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(["bash", str(SCRIPTS / script), *args], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    if check:
        assert r.returncode == 0, f"{script}: {r.stdout}{r.stderr}"
    return r


def yq(cwd: Path, env: dict[str, str], expr: str, path: str = ".liza/state.yaml") -> str:
    return subprocess.run(["yq", "-i", expr, path], cwd=cwd, env=env, check=True,
                          capture_output=True, text=True, timeout=60).stdout


def with_vision(repo: Path) -> None:
    (repo / "specs").mkdir()
    (repo / "specs" / "vision.md").write_text("# Vision\n\nA CLI that says hello.\n")
    git(repo, "add", "specs")
    git(repo, "commit", "-q", "-m", "vision")


def test_a_board_made_by_the_original_scripts_imports_and_verifies(
        repo: Path, yq_env: dict[str, str]) -> None:
    with_vision(repo)
    run("liza-init.sh", repo, yq_env, "Build hello CLI")
    # The planner of the original writes tasks with yq; an agent registers itself.
    yq(repo, yq_env, '.tasks += [{"id": "task-1", "description": "Say hello", '
                     '"status": "UNCLAIMED", "priority": 1, "spec_ref": "specs/vision.md", '
                     '"done_when": "prints hello", "scope": "hello", '
                     '"created": "2025-01-17T14:00:00Z"}]')
    yq(repo, yq_env, '.agents."coder-1" = {"role": "coder", "status": "IDLE"}')
    out = run("liza-claim-task.sh", repo, yq_env, "task-1", "coder-1").stdout
    assert "CLAIMED: task-1 by coder-1" in out
    assert (repo / ".worktrees" / "task-1").is_dir()
    # Every key the scripts wrote is read: goal.spec_ref, the poll intervals, the log.
    r = liza(repo, "import", "--log", ".liza/log.yaml", agent=None)
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr, r.stderr
    ok(liza(repo, "verify", agent=None))
    board = json.loads(ok(liza(repo, "status", "--json", agent=None)))
    assert board["goal"]["spec_ref"] == "specs/vision.md"
    assert board["goal"]["description"] == "Build hello CLI"
    config = json.loads(ok(liza(repo, "config", "--json", agent=None)))
    assert (config["lease_duration"], config["coder_max_wait"]) == (1800, 1800)
    for key, value in (("planner_poll_interval", "60"), ("reviewer_poll_interval", "30")):
        assert ok(liza(repo, "config", key, agent=None)).strip() == value
    [task] = board["tasks"]
    assert (task["id"], task["status"], task["assigned_to"]) == ("task-1", "CLAIMED", "coder-1")
    # gitliza's ops follow on the imported board, and verify accepts the whole chain.
    ok(liza(repo, "validate", agent=None))
    (repo / ".worktrees" / "task-1" / "hello.txt").write_text("hello\n")
    git(repo / ".worktrees" / "task-1", "add", "hello.txt")
    git(repo / ".worktrees" / "task-1", "commit", "-q", "-m", "hello")
    ok(liza(repo, "submit", "task-1", agent="coder-1"))
    ok(liza(repo, "verify", agent=None))


def lifecycle(repo: Path) -> None:
    """A sprint in gitliza: task-1 rejected once then merged, task-2 waiting for it, task-3
    CLAIMED, task-4 abandoned."""
    ok(liza(repo, "init", "Build hello CLI", agent=None))
    for agent, role in (("planner-1", "planner"), ("coder-1", "coder"), ("coder-2", "coder"),
                        ("code-reviewer-1", "code_reviewer")):
        ok(liza(repo, "register", agent, "--role", role, agent=None))
    common = ["--spec-ref", "specs/vision.md", "--done-when", "it prints", "--ready"]
    ok(liza(repo, "add", "task-1", "--desc", "hello", "--scope", "hello", *common))
    ok(liza(repo, "add", "task-2", "--desc", "bye", "--scope", "bye", "--depends-on", "task-1",
            *common))
    ok(liza(repo, "add", "task-3", "--desc", "name", "--scope", "name", *common))
    ok(liza(repo, "add", "task-4", "--desc", "color", "--scope", "color", *common))
    wt = repo / ".worktrees" / "task-1"
    for n, verdict in enumerate(("reject", "approve")):
        ok(liza(repo, "claim", "task-1", agent="coder-1"))
        (wt / "hello.txt").write_text(f"hello {n}\n")
        git(wt, "add", "hello.txt")
        git(wt, "commit", "-q", "-m", f"hello {n}")
        ok(liza(repo, "submit", "task-1", agent="coder-1"))
        ok(liza(repo, "claim-review", "task-1", agent="code-reviewer-1"))
        head = git(wt, "rev-parse", "HEAD")
        extra = ["--reason", "no test"] if verdict == "reject" else []
        ok(liza(repo, "verdict", "task-1", verdict, "--commit", head, *extra,
                agent="code-reviewer-1"))
    ok(liza(repo, "merge", "task-1", agent="code-reviewer-1"))
    ok(liza(repo, "abandon", "task-4", "--reason", "out of scope"))
    ok(liza(repo, "claim", "task-3", agent="coder-2"))
    ok(liza(repo, "materialize", agent=None))


def test_the_original_validator_accepts_the_materialized_state_and_metrics_agree(
        repo: Path, yq_env: dict[str, str]) -> None:
    with_vision(repo)
    lifecycle(repo)
    state = repo / ".liza" / "state.yaml"
    # The merged task-1 is named by the live task-2: it stays in state.yaml (gitliza used to list
    # it in .liza/archive/ only, and liza-validate.sh refused "non-existent task 'task-1'").
    r = run("liza-validate.sh", repo, yq_env, str(state), check=False)
    assert r.returncode == 0 and r.stdout.strip().endswith("VALID"), r.stdout + r.stderr
    assert "INVALID" not in r.stdout
    # update-sprint-metrics.sh recomputes the metrics from the tasks of state.yaml (on a copy:
    # the script rewrites the file it reads).
    copy = repo.parent / "copy"
    (copy / ".liza").mkdir(parents=True)
    shutil.copy(state, copy / ".liza" / "state.yaml")
    out = run("update-sprint-metrics.sh", repo, yq_env, str(copy)).stdout
    theirs = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", out)}
    ours = json.loads(ok(liza(repo, "status", "--json", agent=None)))["sprint"]["metrics"]
    assert theirs["done"] == ours["tasks_done"] == 2  # MERGED and ABANDONED
    assert theirs["in_progress"] == ours["tasks_in_progress"] == 1
    assert theirs["blocked"] == ours["tasks_blocked"] == 0
    assert theirs["iterations"] == ours["iterations_total"] == 3  # task-1 twice, task-3 once
    assert theirs["review_cycles"] == ours["review_cycles_total"] == 1
    assert theirs["approvals"] == ours["review_verdict_approvals"] == 1
    assert theirs["rejections"] == ours["review_verdict_rejections"] == 1
    assert theirs["submitted"] == ours["task_submitted_for_review_count"] == 2
    # The script wrote its figures into the copy: the rest of its metrics agree too.
    written = subprocess.run(["yq", "-o=json", ".sprint.metrics", str(copy / ".liza" /
                                                                          "state.yaml")],
                             env=yq_env, capture_output=True, text=True, check=True).stdout
    for key, value in json.loads(written).items():
        assert ours[key] == value, key
