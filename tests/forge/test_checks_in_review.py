"""A required check that fails while the task waits for its review (or is being reviewed) sends it
back to its coder at once, as one failing on the approved commit does (the transition table's
row `merge READY_FOR_REVIEW -> INTEGRATION_FAILED`, the human's: the bridge's), with the check's
name, conclusion and log URL, counted as an integration failure; a passing one in review records
nothing (the approval is still to come). Against the stand-in through Prism's validating proxy."""
from __future__ import annotations

from pathlib import Path

from tests.cli.test_board import liza, ok
from tests.forge.standin import StandIn
from tests.forge.test_bridge_standin import forge_board, sync_once
from tests.team.procs import task_of

LOG = "https://ci.example.com/runs/7/log"


def test_a_check_failing_in_review_sends_the_task_back_with_its_name_and_log(
        repo: Path, tmp_path: Path, github_standin: StandIn) -> None:
    s = github_standin
    forge_board(repo, tmp_path, s, "t1", "t2")
    ok(liza(repo, "config", "forge_required_checks", "build, lint", agent=None))
    ok(sync_once(repo, s))
    t1, t2 = task_of(repo, "t1"), task_of(repo, "t2")
    s.add_check_run(t1["review_commit"], "build", conclusion="success")
    s.add_check_run(t1["review_commit"], "lint", conclusion="failure", details_url=LOG)
    s.add_check_run(t2["review_commit"], "build", conclusion="success")
    s.add_check_run(t2["review_commit"], "lint", conclusion="success")
    ok(sync_once(repo, s))
    t1 = task_of(repo, "t1")
    assert t1["status"] == "INTEGRATION_FAILED"
    assert "'lint'" in t1["integration_failure"] and "failure" in t1["integration_failure"]
    assert LOG in t1["integration_failure"]
    last = t1["history"][-1]
    assert last["event"] == "integration_failed" and last["agent"] == "human"
    # All passed in review: nothing to record until a reviewer approves.
    t2 = task_of(repo, "t2")
    assert t2["status"] == "READY_FOR_REVIEW" and t2.get("checks_passed") is None
    ok(sync_once(repo, s))  # taken once
    events = [h["event"] for h in task_of(repo, "t1")["history"]]
    assert events.count("integration_failed") == 1
    assert s.validation_errors() == []
