"""Issue 40 through the real CLI: a quorum of two reviewers, evidence read from the reviewed
commit, the votes in show and status, the root-cause gate, criteria from `add` and `add --from`;
and the reviewer's CLI recorded from the environment the supervisor gives the broker."""
from __future__ import annotations

import hashlib
from pathlib import Path

from gitliza.core.ops import Register
from gitliza.services.api import Liza
from tests.conftest import git
from tests.services.test_lifecycle import (claimed, commit_file, fails, ok, run, setup_board,
                                           task, tip)

DONE = "- hello.py prints hello\n- the test passes"


def _board(repo: Path) -> None:
    setup_board(repo, tasks=())
    Liza.open(repo, "human").do(Register, agent="r3", role="code_reviewer")
    ok(repo, "add", "t1", "--desc", "hello", "--spec-ref", "spec.md", "--done-when", DONE,
       "--scope", "src", "--label", "security", "--ready", agent="p1")
    ok(repo, "config", "quorum_rules", "label:security=2")


def test_a_quorum_of_two_with_evidence_through_the_cli(repo: Path) -> None:
    _board(repo)
    t = task(repo, "t1")
    assert t.criteria == ("hello.py prints hello", "the test passes") and t.labels == ("security",)
    wt = Path(claimed(repo, "t1", "c1")["worktree"])
    sha = commit_file(wt, "hello.py", "import sys\nprint('hello')\n")
    ok(repo, "submit", "t1", agent="c1")
    ok(repo, "claim-review", "t1", agent="r1", env={"LIZA_AGENT_CLI": "claude"})
    digest = "sha256:" + hashlib.sha256(b"hello\n").hexdigest()
    # Evidence the commit does not bear out, or a criterion without any: refused, nothing moves.
    assert "hello.py has 2 lines" in fails(repo, 1, "verdict", "t1", "approve", "--evidence",
                                           "1=path:hello.py:3", "--evidence",
                                           "2=test:test_hello", agent="r1")
    assert "no evidence for acceptance criterion 2" in fails(
        repo, 1, "verdict", "t1", "approve", "--evidence", "1=path:hello.py:2", agent="r1")
    out = ok(repo, "verdict", "t1", "approve", "--evidence", "1=path:hello.py:2",
             "--evidence", f"2=command:python hello.py@{digest}", agent="r1",
             env={"LIZA_AGENT_CLI": "claude", "LIZA_AGENT_MODEL": "m-1"})
    assert out["to"] == "READY_FOR_REVIEW" and out["votes"] == "1/2 (r1)"
    t = task(repo, "t1")
    assert (t.review_votes[0].cli, t.review_votes[0].model) == ("claude", "m-1")
    assert t.review_votes[0].evidence[1].digest == digest
    status = run(repo, "status").stdout
    assert "READY_FOR_REVIEW 1/2" in status
    show = run(repo, "show", "t1").stdout
    assert "review quorum: 1/2 (r1)" in show and "criterion 1: path hello.py:2" in show
    shown = ok(repo, "show", "t1")
    assert shown["review_quorum"] == 2 and shown["approvals"] == ["r1"]
    assert shown["review_votes"][0]["evidence"][0] == {"criterion": 1, "kind": "path",
                                                       "ref": "hello.py:2"}
    # r1 voted: `claim-review` without a task does not offer it t1 again.
    assert "already approved" in fails(repo, 1, "claim-review", "t1", agent="r1")
    ok(repo, "claim-review", agent="r2")
    out = ok(repo, "verdict", "t1", "approve", "--evidence", "1=path:hello.py",
             "--evidence", "2=test:tests/test_hello.py::test_prints", agent="r2")
    assert out["to"] == "APPROVED"
    m = ok(repo, "merge", "t1", agent="r2")
    assert m["result"] == "merged" and git(repo, "rev-parse", "integration") == sha
    v = ok(repo, "verify")
    assert v["ok"] and v["evidence_unread"] == []


def test_the_root_cause_gate_through_the_cli(repo: Path) -> None:
    setup_board(repo, tasks=("t1",))
    ok(repo, "config", "rca_after_rejections", "1")
    assert "allowed: human (the human's key" in fails(repo, 1, "config", "rca_after_rejections", "9", agent="p1")
    wt = Path(claimed(repo, "t1", "c1")["worktree"])
    commit_file(wt, "a.txt", "a\n")
    ok(repo, "submit", "t1", agent="c1")
    ok(repo, "claim-review", "t1", agent="r1")
    out = ok(repo, "verdict", "t1", "reject", "--reason", "no tests", agent="r1")
    assert out["to"] == "BLOCKED" and task(repo, "t1").needs_root_cause
    before = tip(repo)
    assert "root-cause note" in fails(repo, 1, "unblock", "t1", agent="p1")
    assert tip(repo) == before
    fails(repo, 1, "root-cause", "t1", "it was me", agent="c1")
    out = ok(repo, "root-cause", "t1", "done_when never said which tests", agent="p1")
    assert out["to"] == "UNCLAIMED"
    assert task(repo, "t1").root_cause == "done_when never said which tests"


def test_add_from_a_file_takes_a_list_of_criteria_and_labels(repo: Path) -> None:
    setup_board(repo, tasks=())
    (repo / "tasks.yaml").write_text(
        "- id: t5\n  description: d\n  spec_ref: spec.md\n  scope: s\n  labels: [security, db]\n"
        "  done_when:\n    - it retries\n    - it logs\n- id: t6\n  description: d\n"
        "  done_when: one line\n")
    ok(repo, "add", "--from", "tasks.yaml", agent="p1")
    t5, t6 = task(repo, "t5"), task(repo, "t6")
    assert t5.criteria == ("it retries", "it logs") and t5.labels == ("security", "db")
    assert t5.done_when == "- it retries\n- it logs"
    assert t6.criteria == () and t6.done_when == "one line"
    ok(repo, "edit", "t6", "--done-when", "- a\n- b", agent="p1")
    assert task(repo, "t6").criteria == ("a", "b")


def test_two_reviewers_review_at_once_through_the_cli(repo: Path) -> None:
    setup_board(repo, tasks=("t1",))
    Liza.open(repo, "human").do(Register, agent="r3", role="code_reviewer")
    ok(repo, "config", "review_quorum", "2")
    wt = Path(claimed(repo, "t1", "c1")["worktree"])
    commit_file(wt, "a.txt", "a\n")
    ok(repo, "submit", "t1", agent="c1")
    ok(repo, "claim-review", agent="r1")
    assert ok(repo, "claim-review", agent="r2")["task"] == "t1"  # beside r1, no takeover
    assert "nothing to review" in fails(repo, 1, "claim-review", agent="r3")
    hb = ok(repo, "heartbeat", "--task", "t1", agent="r2")  # off the chain, the co-lease renewed
    assert hb["lease_expires"]
    ok(repo, "verdict", "t1", "approve", agent="r2")
    assert task(repo, "t1").reviewing_by == "r1"
    assert ok(repo, "verdict", "t1", "approve", agent="r1")["to"] == "APPROVED"
    assert ok(repo, "verify")["ok"]
