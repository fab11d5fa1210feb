"""Issue 12 through the real `git liza` executable: edit, discovery conversion, the spec gate and
the per-task lease override."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import commit_specs, git
from tests.cli.test_board import liza, ok, tip

NOW = "2030-01-01T10:00:00Z"


@pytest.fixture
def board(repo: Path) -> Path:
    commit_specs(repo, "specs/retry.md", "specs/other.md")
    ok(liza(repo, "init", "Retry logic", agent=None))
    ok(liza(repo, "register", "planner-1", "--role", "planner", agent=None))
    ok(liza(repo, "register", "coder-1", "--role", "coder", agent=None))
    ok(liza(repo, "register", "rev-1", "--role", "code_reviewer", agent=None))
    return repo


def shown(repo: Path, task: str) -> dict[str, object]:
    data: dict[str, object] = json.loads(ok(liza(repo, "show", task, "--json")))
    return data


def refused(repo: Path, *args: str, code: int = 1, agent: str | None = "planner-1") -> str:
    before = tip(repo)
    r = liza(repo, *args, agent=agent)
    assert r.returncode == code, (r.stdout, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1 and tip(repo) == before
    return r.stderr


def test_edit_refines_a_draft_until_it_can_be_finalized(board: Path) -> None:
    ok(liza(board, "add", "t-1", "--desc", "retry"))
    assert "missing spec_ref, done_when, scope" in refused(board, "finalize", "t-1")
    out = json.loads(ok(liza(board, "edit", "t-1", "--done-when", "3 retries", "--scope", "api",
                             "--spec-ref", "specs/retry.md#auth", "--priority", "1",
                             "--desc", "retry get_user ✓", "--json")))
    assert out["op"] == "edit" and (out["from"], out["to"]) == ("DRAFT", "DRAFT")
    t = shown(board, "t-1")
    assert (t["done_when"], t["scope"], t["spec_ref"], t["priority"], t["description"]) == \
        ("3 retries", "api", "specs/retry.md#auth", 1, "retry get_user ✓")
    assert t["history"][-1] == {  # type: ignore[index]
        "time": t["history"][-1]["time"], "event": "edited",  # type: ignore[index]
        "note": "description, done_when, priority, scope, spec_ref"}
    assert "nothing to change" in refused(board, "edit", "t-1", "--scope", "api")
    assert "is not allowed for coder-1" in refused(board, "edit", "t-1", "--scope", "x",
                                                   agent="coder-1")
    ok(liza(board, "finalize", "t-1"))
    ok(liza(board, "edit", "t-1", "--scope", "api and tests"))  # UNCLAIMED is still editable
    ok(liza(board, "verify"))


def test_edit_dependencies_with_the_cycle_check(board: Path) -> None:
    for tid in ("a", "b", "c"):
        ok(liza(board, "add", tid, "--desc", tid))
    ok(liza(board, "edit", "b", "--depends-on", "a"))
    ok(liza(board, "edit", "c", "--depends-on", "b"))
    assert "cycle" in refused(board, "edit", "a", "--depends-on", "c")
    assert "itself" in refused(board, "edit", "a", "--depends-on", "a")
    assert "does not exist" in refused(board, "edit", "a", "--depends-on", "zz")
    assert "not both" in refused(board, "edit", "c", "--depends-on", "a", "--no-depends")
    ok(liza(board, "edit", "c", "--depends-on", "a", "--depends-on", "b"))
    assert shown(board, "c")["depends_on"] == ["a", "b"]
    ok(liza(board, "edit", "c", "--no-depends"))
    assert "depends_on" not in shown(board, "c")
    ok(liza(board, "edit", "a", "--depends-on", "c"))  # no cycle any more
    verified = json.loads(ok(liza(board, "verify", "--json")))
    assert verified["ops"]["edit"] == 5


def test_rescope_successors_can_be_refined_and_claimed_tasks_cannot(board: Path) -> None:
    ok(liza(board, "add", "big", "--desc", "everything", "--spec-ref", "specs/retry.md",
            "--done-when", "all done", "--scope", "all", "--ready"))
    ok(liza(board, "rescope", "big", "--into", "big-a", "--into", "big-b", "--reason", "split"))
    ok(liza(board, "edit", "big-a", "--desc", "the auth half", "--scope", "auth"))
    ok(liza(board, "edit", "big-b", "--desc", "the rest", "--spec-ref", "specs/other.md"))
    assert shown(board, "big-a")["description"] == "the auth half"
    ok(liza(board, "finalize", "big-a"))
    ok(liza(board, "claim", "big-a", agent="coder-1"))
    assert "task is CLAIMED" in refused(board, "edit", "big-a", "--scope", "x")
    assert "SUPERSEDED" in refused(board, "edit", "big", "--scope", "x")


def test_spec_gate_on_finalize_add_ready_and_edit(board: Path) -> None:
    err = refused(board, "add", "t-1", "--desc", "d", "--spec-ref", "specs/missing.md",
                  "--done-when", "w", "--scope", "s", "--ready")
    assert "specs/missing.md does not exist on the integration branch 'integration'" in err
    ok(liza(board, "add", "t-1", "--desc", "d", "--spec-ref", "specs/missing.md#part",
            "--done-when", "w", "--scope", "s"))  # a DRAFT may name a spec still to be written
    assert "does not exist" in refused(board, "finalize", "t-1")
    # The spec lands on the integration branch (on main only is not enough).
    commit_specs(board, "specs/missing.md")
    assert "does not exist" in refused(board, "finalize", "t-1")
    git(board, "branch", "-f", "integration", "main")
    ok(liza(board, "finalize", "t-1"))
    assert "does not exist" in refused(board, "edit", "t-1", "--spec-ref", "nope.md")
    assert "not a relative path" in refused(board, "edit", "t-1", "--spec-ref", "../x.md")
    ok(liza(board, "edit", "t-1", "--spec-ref", "specs/retry.md#auth"))
    ok(liza(board, "add", "t-2", "--desc", "d", "--spec-ref", "specs", "--done-when", "w",
            "--scope", "s"))
    assert "is a tree, not a file" in refused(board, "finalize", "t-2")
    # Replay never re-checks the gate: deleting the spec later keeps the history verifiable.
    git(board, "rm", "-q", "specs/missing.md")
    git(board, "commit", "-q", "-m", "drop spec")
    git(board, "branch", "-f", "integration", "main")
    ok(liza(board, "verify"))


def test_convert_a_discovery_into_a_task(board: Path) -> None:
    ok(liza(board, "add", "t-1", "--desc", "d"))
    ok(liza(board, "discover", "auth refresh needed", "--severity", "critical", "--urgency",
            "immediate", agent="coder-1"))
    assert "allowed: human, planner" in refused(board, "convert", "disc-1", "--task", "t-1",
                                           agent="coder-1")
    assert "no discovery" in refused(board, "convert", "disc-9", "--task", "t-1")
    assert "no task" in refused(board, "convert", "disc-1", "--task", "t-9")
    out = json.loads(ok(liza(board, "convert", "disc-1", "--task", "t-1", "--json")))
    assert out["task"] == "t-1"
    [d] = json.loads(ok(liza(board, "status", "--json")))["discovered"]
    assert d["converted_to_task"] == "t-1" and d["urgency"] == "immediate"
    assert "already converted to t-1" in refused(board, "convert", "disc-1", "--task", "t-1")
    ok(liza(board, "verify"))


def test_lease_duration_override_sets_claim_heartbeat_and_review_leases(board: Path) -> None:
    at = {"LIZA_NOW": NOW}
    assert "at most 604800" in refused(board, "add", "t-0", "--desc", "d",
                                       "--lease-duration-override", "604801")
    assert "positive" in refused(board, "add", "t-0", "--desc", "d",
                                 "--lease-duration-override", "0")
    ok(liza(board, "add", "long", "--desc", "slow build", "--spec-ref", "specs/retry.md",
            "--done-when", "w", "--scope", "s", "--ready", "--lease-duration-override", "3600"))
    ok(liza(board, "edit", "long", "--lease-duration-override", "7200"))
    claimed = json.loads(ok(liza(board, "claim", "long", "--json", agent="coder-1", env=at)))
    assert claimed["task_record"]["lease_expires"] == "2030-01-01T12:00:00Z"
    hb = json.loads(ok(liza(board, "heartbeat", "--json", agent="coder-1",
                            env={"LIZA_NOW": "2030-01-01T11:00:00Z"})))
    assert hb["lease_expires"] == "2030-01-01T13:00:00Z"  # a renewal off the chain
    wt = board / ".worktrees" / "long"
    (wt / "slow.txt").write_text("built\n")
    git(wt, "add", "slow.txt")
    git(wt, "commit", "-q", "-m", "slow build")
    ok(liza(board, "submit", "long", agent="coder-1", env={"LIZA_NOW": "2030-01-01T11:10:00Z"}))
    rv = json.loads(ok(liza(board, "claim-review", "long", "--json", agent="rev-1",
                            env={"LIZA_NOW": "2030-01-01T11:20:00Z"})))
    assert rv["task_record"]["review_lease_expires"] == "2030-01-01T13:20:00Z"
    # Another task keeps the config lease (300 s).
    ok(liza(board, "add", "short", "--desc", "d", "--spec-ref", "specs/retry.md",
            "--done-when", "w", "--scope", "s", "--ready"))
    ok(liza(board, "register", "coder-2", "--role", "coder", agent=None))
    c2 = json.loads(ok(liza(board, "claim", "short", "--json", agent="coder-2", env=at)))
    assert c2["task_record"]["lease_expires"] == "2030-01-01T10:05:00Z"
    ok(liza(board, "verify"))


def test_validate_without_a_board_is_exit_1_not_valid(repo: Path) -> None:
    r = liza(repo, "validate", agent=None)
    assert r.returncode == 1 and "no board here" in r.stderr and "VALID" not in r.stdout
    (repo / ".liza").mkdir()
    (repo / ".liza" / "state.yaml").write_text("version: 1\n")
    r = liza(repo, "validate", agent=None)
    assert r.returncode == 1 and r.stdout == ""
    assert "state.yaml was not read" in r.stderr and "validate .liza/state.yaml" in r.stderr


def test_validate_file_checks_a_seed_schema_file(board: Path) -> None:
    ok(liza(board, "add", "t-0", "--desc", "old"))
    ok(liza(board, "add", "t-1", "--desc", "d", "--depends-on", "t-0"))
    ok(liza(board, "abandon", "t-0", "--reason", "gone"))
    ok(liza(board, "materialize"))
    # t-0 is in .liza/archive/, and in state.yaml too: the live t-1 names it (so the file alone
    # is a whole board, as liza-validate.sh reads it).
    assert ok(liza(board, "validate", ".liza/state.yaml")).strip() == "VALID"
    (board / "alone.yaml").write_text((board / ".liza" / "state.yaml").read_text())
    assert ok(liza(board, "validate", "alone.yaml")).strip() == "VALID"
    gone = (board / "alone.yaml").read_text().replace("- id: t-0", "- id: t-9")
    (board / "gone.yaml").write_text(gone)
    r = liza(board, "validate", "gone.yaml")
    assert r.returncode == 1 and "'t-0' does not exist" in r.stderr
    bad = (board / ".liza" / "state.yaml").read_text().replace("status: DRAFT", "status: DONE")
    (board / "bad.yaml").write_text(bad)
    r = liza(board, "validate", "bad.yaml")
    assert r.returncode == 1 and "DONE" in r.stderr
