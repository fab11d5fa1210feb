"""Issue 19 through the real CLI: init's goal spec and branch warning, --json errors, validate
FILE as liza-validate.sh judges, the agent id rule, boards of the original scripts importing."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import git
from tests.interop.test_seed import EXAMPLE, fixed_example
from tests.cli.test_board import liza, ok, tip


def _vision(repo: Path, path: str = "specs/vision.md") -> None:
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text("# Vision\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "vision")


def test_init_records_the_goal_spec_and_refuses_a_missing_one(repo: Path) -> None:
    r = liza(repo, "init", "Hello", "--spec", "specs/nope.md", agent=None)
    assert r.returncode == 1 and "goal spec specs/nope.md does not exist" in r.stderr
    assert tip(repo) == ""  # nothing written
    _vision(repo, "docs/goal.md")
    ok(liza(repo, "init", "Hello", "--spec", "docs/goal.md", agent=None))
    goal = json.loads(ok(liza(repo, "status", "--json", agent=None)))["goal"]
    assert goal["spec_ref"] == "docs/goal.md"


def test_init_defaults_to_specs_vision_md(repo: Path) -> None:
    _vision(repo)
    r = liza(repo, "init", "Hello", agent=None)
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr  # on main, with the default spec
    goal = json.loads(ok(liza(repo, "status", "--json", agent=None)))["goal"]
    assert goal["spec_ref"] == "specs/vision.md"


def test_init_warns_when_head_is_not_main_or_master(repo: Path) -> None:
    git(repo, "switch", "-q", "-c", "feature")
    r = liza(repo, "init", "Hello", agent=None)
    assert r.returncode == 0, r.stderr
    assert "warning: HEAD is on 'feature', not main/master" in r.stderr
    assert "no goal spec: specs/vision.md does not exist" in r.stderr


def test_a_failing_command_with_json_prints_a_json_error(repo: Path) -> None:
    ok(liza(repo, "init", "Hello", agent=None))
    r = liza(repo, "show", "task-9", "--json", agent=None)
    assert r.returncode == 1
    err = json.loads(r.stdout)["error"]
    assert err["code"] == "NOT_FOUND" and err["exit_code"] == 1 and "task-9" in err["message"]
    ok(liza(repo, "register", "coder-1", "--role", "coder", agent=None))
    r = liza(repo, "claim", "--json", agent="coder-1")
    assert r.returncode == 1 and json.loads(r.stdout)["error"]["code"] == "NOT_FOUND"
    r = liza(repo, "abandon", "task-9", "--reason", "x", "--json")
    assert json.loads(r.stdout)["error"]["code"] in ("NOT_FOUND", "VALIDATION")


def test_an_agent_id_must_name_its_role(repo: Path) -> None:
    ok(liza(repo, "init", "Hello", agent=None))
    r = liza(repo, "agent", "planner", "--", "true", agent="coder-1")
    assert r.returncode == 1 and "agent id 'coder-1' does not name the planner role" in r.stderr
    assert "coder-1" not in ok(liza(repo, "status", agent=None))  # not registered


def _seed_project(tmp_path: Path, text: str) -> Path:
    """A project as liza-validate.sh sees one: <project>/.liza/state.yaml, its specs, worktrees."""
    project = tmp_path / "project"
    (project / ".liza").mkdir(parents=True)
    for spec in ("specs/retry-logic.md", "specs/api.md"):
        (project / spec).parent.mkdir(parents=True, exist_ok=True)
        (project / spec).write_text("# spec\n")
    (project / ".worktrees" / "task-7").mkdir(parents=True)
    path = project / ".liza" / "state.yaml"
    path.write_text(text)
    return path


GOOD = fixed_example()
# Each is accepted by gitliza's reader before issue 19 and refused by liza-validate.sh.
REFUSED = [
    ("no version", GOOD.replace("version: 1\n", "", 1), "missing required section 'version'"),
    ("no config", GOOD[: GOOD.index("\nconfig:")] + "\n", "missing required section 'config'"),
    ("no sprint start", GOOD.replace("    started: 2025-01-17T09:00:00Z\n", "", 1),
     "sprint.timeline.started is required"),
    ("missing spec file", GOOD.replace("specs/api.md#rate-limiting", "specs/gone.md"),
     "spec_ref file not found: specs/gone.md"),
    ("missing worktree", GOOD.replace(".worktrees/task-7", ".worktrees/task-77"),
     "CLAIMED task has worktree=.worktrees/task-77 but the directory does not exist"),
    ("coder on two active tasks", GOOD.replace("assigned_to: coder-3", "assigned_to: coder-1"),
     "agent coder-1 is assigned to multiple active tasks"),
]


@pytest.mark.parametrize("name,text,message", REFUSED, ids=[c[0] for c in REFUSED])
def test_validate_file_refuses_what_the_original_validator_refuses(
        repo: Path, tmp_path: Path, name: str, text: str, message: str) -> None:
    assert text != GOOD, name
    path = _seed_project(tmp_path, text)
    r = liza(repo, "validate", str(path), agent=None)
    assert r.returncode == 1 and message in r.stdout + r.stderr, r.stdout + r.stderr


def test_validate_file_accepts_the_fixed_example_in_its_project(repo: Path,
                                                                 tmp_path: Path) -> None:
    r = liza(repo, "validate", str(_seed_project(tmp_path, GOOD)), agent=None)
    assert r.returncode == 0, r.stdout + r.stderr
    # The example's WORKING coder-1 lease expired long ago: a warning, as liza-validate.sh says.
    assert "WARNING: agent coder-1: has status WORKING but its lease expired" in r.stdout
    assert r.stdout.rstrip().endswith("VALID")


def test_an_expired_lease_on_the_live_board_is_a_warning(repo: Path) -> None:
    _vision(repo)
    ok(liza(repo, "init", "Hello", agent=None))
    ok(liza(repo, "config", "lease_duration", "1", agent=None))
    ok(liza(repo, "register", "coder-1", "--role", "coder", agent=None))
    ok(liza(repo, "add", "task-1", "--desc", "d", "--spec-ref", "specs/vision.md", "--done-when",
            "w", "--scope", "s", "--ready", agent=None))
    ok(liza(repo, "claim", "task-1", agent="coder-1"))
    r = liza(repo, "validate", agent=None, env={"LIZA_NOW": "2099-01-01T00:00:00Z"})
    assert r.returncode == 0, r.stdout + r.stderr  # was exit 4, INVALID
    assert "WARNING: agent coder-1: has status WORKING but its lease expired" in r.stdout


def test_the_schema_example_imports_with_each_broken_invariant_a_warning(
        repo: Path, tmp_path: Path) -> None:
    path = tmp_path / "state.yaml"
    path.write_text(EXAMPLE)
    log = tmp_path / "log.yaml"
    # wt-merge.sh's entries: drift_commits on a merge, failed_sha and test_output on a failure.
    log.write_text("- timestamp: 2025-01-17T14:00:00Z\n  agent: system\n  action: initialized\n"
                   "  detail: \"\"\n- timestamp: 2025-01-17T16:00:00Z\n  agent: code-reviewer-1\n"
                   "  action: merged\n  task: task-1\n  drift_commits: 2\n"
                   "  detail: \"fast-forward merge to integration\"\n"
                   "- timestamp: 2025-01-17T16:20:00Z\n  agent: code-reviewer-1\n"
                   "  action: integration_failed\n  task: task-7\n  failed_sha: abc1234\n"
                   "  test_output: .liza/integration-test-task-7-1.log\n  detail: \"tests\"\n")
    r = liza(repo, "import", str(path), "--log", str(log), agent=None)
    assert r.returncode == 0, r.stderr
    for broken in ("converted_to_task: task 'task-3a' does not exist",
                   "CLAIMED task must have valid lease_expires",
                   "only coders can be WAITING",
                   "agent coder-1 is assigned to multiple active tasks"):
        assert broken in r.stderr, r.stderr
    assert "warning:" in r.stderr
    ok(liza(repo, "verify", agent=None))
    assert "(10 tasks, 3 log entries)" in r.stdout


def test_merge_logs_drift_commits_as_wt_merge_sh(repo: Path) -> None:
    from gitliza.interop import seed
    _vision(repo)
    ok(liza(repo, "init", "Hello", agent=None))
    for agent, role in (("coder-1", "coder"), ("coder-2", "coder"),
                        ("code-reviewer-1", "code_reviewer")):
        ok(liza(repo, "register", agent, "--role", role, agent=None))
    for task, coder in (("task-1", "coder-1"), ("task-2", "coder-2")):
        ok(liza(repo, "add", task, "--desc", "d", "--spec-ref", "specs/vision.md", "--done-when",
                "w", "--scope", task, "--ready", agent=None))
        ok(liza(repo, "claim", task, agent=coder))  # both from the same integration tip
    for task, coder in (("task-1", "coder-1"), ("task-2", "coder-2")):
        wt = repo / ".worktrees" / task
        (wt / f"{task}.txt").write_text(task)
        git(wt, "add", ".")
        git(wt, "commit", "-q", "-m", task)
        ok(liza(repo, "submit", task, agent=coder))
        ok(liza(repo, "claim-review", task, agent="code-reviewer-1"))
        ok(liza(repo, "verdict", task, "approve", "--commit", git(wt, "rev-parse", "HEAD"),
                agent="code-reviewer-1"))
        ok(liza(repo, "merge", task, agent="code-reviewer-1"))
    ok(liza(repo, "materialize", agent=None))
    entries = seed.read_log((repo / ".liza" / "log.yaml").read_text())  # our reader takes it
    merged = {e["task"]: e for e in entries if e["action"] == "merged"}
    assert merged["task-1"]["drift_commits"] == "0"
    assert merged["task-2"]["drift_commits"] == "1"  # task-1's merge came in since its base
    assert list(merged["task-2"]) == ["timestamp", "agent", "action", "task", "drift_commits",
                                      "detail"]


def test_show_prints_the_handoff_and_a_heartbeat_keeps_it_pending(repo: Path) -> None:
    _vision(repo)
    ok(liza(repo, "init", "Hello", agent=None))
    ok(liza(repo, "register", "coder-1", "--role", "coder", agent=None))
    ok(liza(repo, "add", "task-1", "--desc", "d", "--spec-ref", "specs/vision.md", "--done-when",
            "w", "--scope", "s", "--ready", agent=None))
    ok(liza(repo, "claim", "task-1", agent="coder-1"))
    ok(liza(repo, "handoff", "task-1", "--summary", "parser half done", "--next-action",
            "write the tests", agent="coder-1"))
    ok(liza(repo, "heartbeat", "--task", "task-1", agent="coder-1"))  # it cleared the handoff
    out = ok(liza(repo, "show", "task-1", agent=None))
    assert "handoff by coder-1" in out and "(pending" in out
    assert "summary: parser half done" in out and "next_action: write the tests" in out
    data = json.loads(ok(liza(repo, "show", "task-1", "--json", agent=None)))
    assert data["handoff_pending"] is True and data["handoff"]["next_action"] == "write the tests"
