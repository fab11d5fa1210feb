"""`forge_merge on` (gitliza/forge/merging.py, docs/forge.md): the forge merges an approved task
whose required checks passed (the pull request's merge, PUT .../merge, validated by Prism against
GitHub's description), and the board records the forge's merge commit through its own merge op
once it is checked; the merge queue stands aside (a reviewer's merge is refused: no second
merge); a forge merge that is not the board's merge (a human merged on the forge over a base
the board never saw) is exit 4, an anomaly and the FORGE alarm, and nothing is recorded. Against
the stand-in, whose merge endpoint writes the merge commit in the bare repository."""
from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from gitliza.core import clock
from gitliza.core import forgerules as rules
from gitliza.services.api import Liza
from tests.cli.test_board import liza, ok
from tests.conftest import git
from tests.forge.standin import StandIn
from tests.forge.test_bridge_standin import forge_board, pulls_of, sync_once
from tests.team.procs import task_of


def rev(where: Path, ref: str) -> str:
    return git(where, "rev-parse", ref).strip()


def approved(repo: Path, tmp_path: Path, s: StandIn) -> tuple[int, str, str]:
    """A board with forge_merge on and a required check `ci`; t1's pull request approved by the
    human on the forge, and out of draft: (its number, the integration tip, t1's commit)."""
    forge_board(repo, tmp_path, s, "t1")
    ok(liza(repo, "config", "forge_merge", "on", agent=None))
    ok(liza(repo, "config", "forge_required_checks", "ci", agent=None))
    ok(sync_once(repo, s))  # the pull request
    n = task_of(repo, "t1")["forge_pr"]
    s.add_review(n, "APPROVED", "ship it")
    ok(sync_once(repo, s))  # the human's approval
    ok(sync_once(repo, s))  # the approved task mirrored: out of draft
    assert task_of(repo, "t1")["status"] == "APPROVED"
    return int(n), rev(repo, "integration"), task_of(repo, "t1")["review_commit"]


def sneak(tmp_path: Path, s: StandIn) -> str:
    """Someone pushes a commit no task carries to the forge's integration branch."""
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", "-b", "integration", str(s.bare), str(other)],
                   check=True, capture_output=True, timeout=60)
    (other / "sneaked.txt").write_text("not reviewed\n")
    git(other, "add", "sneaked.txt")
    git(other, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "sneaked in")
    git(other, "push", "-q", "origin", "integration")
    return rev(other, "HEAD")


def test_the_forge_merges_and_the_board_records_its_merge_commit(
        repo: Path, tmp_path: Path, github_standin: StandIn) -> None:
    s = github_standin
    _n, tip, review = approved(repo, tmp_path, s)
    # The merge queue stands aside: a reviewer's merge is refused, nothing merged.
    ok(liza(repo, "register", "reviewer-1", "--role", "code_reviewer", agent="reviewer-1"))
    ok(liza(repo, "config", "forge_required_checks", "none", agent=None))
    refused = liza(repo, "merge", "t1", agent="reviewer-1")
    assert refused.returncode == 1 and "merged by the forge" in refused.stderr, refused.stderr
    assert rev(repo, "integration") == tip
    ok(liza(repo, "config", "forge_required_checks", "ci", agent=None))
    ok(sync_once(repo, s))  # the check not reported yet: no merge
    assert task_of(repo, "t1")["status"] == "APPROVED" and rev(s.bare, "integration") == tip
    s.add_check_run(review, "ci", conclusion="success")
    r = sync_once(repo, s)
    assert r.returncode == 0, r.stderr
    t = task_of(repo, "t1")
    assert t["status"] == "MERGED", t["status"]
    merged = t["merge_commit"]
    [pr] = pulls_of(s, "liza/t1")
    assert pr["merged"] is True and pr["merge_commit_sha"] == merged
    # The forge's commit: the board's tip and the approved commit; the branches follow it.
    assert git(repo, "rev-parse", f"{merged}^1", f"{merged}^2").split() == [tip, review]
    assert rev(s.bare, "integration") == merged == rev(repo, "integration")
    assert git(repo, "rev-list", "--merges", f"{tip}..integration").split() == [merged]
    assert [h["event"] for h in t["history"]][-2:] == ["checks_passed", "merged"]
    assert ("PUT", "/repos/liza-org/project/pulls/1/merge", 200) in s.requests()
    ok(sync_once(repo, s))  # nothing again: merged once
    assert git(repo, "rev-list", "--merges", f"{tip}..integration").split() == [merged]
    ok(liza(repo, "verify", agent=None))  # the board replays: the forge's merge is its merge
    assert s.validation_errors() == []


def test_a_forge_merge_over_a_base_the_board_never_saw_is_refused(
        repo: Path, tmp_path: Path, github_standin: StandIn) -> None:
    s = github_standin
    n, tip, review = approved(repo, tmp_path, s)
    # Someone pushes to the forge's integration branch, then a human merges the pull request
    # on the forge by hand: its merge commit's first parent is a tip the board never knew.
    sneak(tmp_path, s)
    with s.world.lock:
        reply = s.world.merge_pr(n, {"sha": review, "merge_method": "merge"}, "human")
    bad = reply.body["sha"]
    s.add_check_run(review, "ci", conclusion="success")
    r = sync_once(repo, s)
    assert r.returncode == 4, (r.returncode, r.stderr)
    assert bad[:12] in r.stderr + r.stdout
    t = task_of(repo, "t1")
    assert t["status"] == "APPROVED" and not t.get("merge_commit")  # nothing recorded
    assert rev(repo, "integration") == tip  # the local branch did not follow
    board = Liza.open(repo, "human").board()
    [anomaly] = [a for a in board.values("anomalies") if a.task == "t1"]
    assert anomaly.type == "assumption_violated" and anomaly.reporter == "human"
    assert dict(anomaly.details)[rules.MISMATCH] == bad
    alarms = rules.alarms(board, clock.from_epoch(time.time()))
    assert any(tid == "t1" and bad[:12] in text for tid, text in alarms), alarms
    r = sync_once(repo, s)  # said once: the next pass waits for the human
    assert r.returncode == 0, r.stderr
    board = Liza.open(repo, "human").board()
    assert len([a for a in board.values("anomalies") if a.task == "t1"]) == 1
    assert s.validation_errors() == []


def test_the_forge_is_not_asked_to_merge_onto_a_base_the_board_never_saw(
        repo: Path, tmp_path: Path, github_standin: StandIn) -> None:
    s = github_standin
    _n, tip, review = approved(repo, tmp_path, s)
    sneaked = sneak(tmp_path, s)
    s.add_check_run(review, "ci", conclusion="success")
    r = sync_once(repo, s)
    assert r.returncode == 0, r.stderr
    assert "merge waits" in r.stdout + r.stderr and sneaked[:12] in r.stdout + r.stderr
    assert not any(m == "PUT" for m, _p, _s in s.requests())  # never asked
    t = task_of(repo, "t1")
    assert t["status"] == "APPROVED" and rev(repo, "integration") == tip
    assert rev(s.bare, "integration") == sneaked
    assert s.validation_errors() == []


@pytest.mark.slow
def test_the_board_shared_on_the_forges_remote_takes_the_forges_merge(
        repo: Path, tmp_path: Path, github_standin: StandIn) -> None:
    """The board travels on the forge's own remote (its server hook installed there): the
    record is pushed by the bridge's auto-sync, and another clone takes the forge's merge commit
    as approved work (its fast-forward refuses any other commit: docs/multi-machine.md)."""
    import sys

    from gitliza.hooks.install import install
    s = github_standin
    install(s.bare, server=True, python=sys.executable)
    forge_board(repo, tmp_path, s, "t1")
    git(repo, "config", "liza.remote", "forge")
    ok(liza(repo, "sync", agent=None))
    other = tmp_path / "b"
    subprocess.run(["git", "clone", "-q", "-b", "integration", str(s.bare), str(other)],
                   check=True, capture_output=True, timeout=60)
    ok(liza(other, "pull", agent=None))
    git(other, "config", "liza.remote", "origin")
    ok(liza(repo, "config", "forge_merge", "on", agent=None))
    ok(sync_once(repo, s))
    s.add_review(task_of(repo, "t1")["forge_pr"], "APPROVED", "ship it")
    for _ in range(3):  # the approval, out of draft, the forge's merge
        ok(sync_once(repo, s))
    merged = task_of(repo, "t1")["merge_commit"]
    assert merged and rev(s.bare, "integration") == merged == rev(repo, "integration")
    ok(liza(other, "sync", agent=None))  # the record came with the board: no refusal
    assert rev(other, "integration") == merged
    assert task_of(other, "t1")["status"] == "MERGED"
    ok(liza(other, "verify", agent=None))
    assert s.validation_errors() == []


@pytest.mark.slow
def test_a_team_whose_merges_the_forge_makes(repo: Path, tmp_path: Path,
                                             github_standin: StandIn) -> None:
    """`git liza team` alone (its bridge in it), forge_merge on, CI passing each approved commit:
    every task is merged by the forge, once, and the board records each forge merge commit."""
    from tests.forge.test_bridge_standin import forge_env, setup_forge
    from tests.forge.test_team_forge import TASKS, TEAM_WAIT, TeamProc, World, all_merged
    from tests.team.procs import add_task, make_board, until
    s = github_standin
    make_board(repo)
    setup_forge(repo, s, forge_required_checks="ci/test", forge_merge="on")
    subprocess.run(["git", "config", "liza.forgeInterval", "1"], cwd=repo, check=True)
    base = rev(repo, "integration")
    for t in TASKS:
        add_task(repo, t)
    passed: set[str] = set()

    def act(board: Any) -> None:  # CI: the check passes on each approved commit
        for t in board.tasks():
            if t.status == "APPROVED" and str(t.review_commit) not in passed:
                s.add_check_run(str(t.review_commit), "ci/test", conclusion="success")
                passed.add(str(t.review_commit))
    world = World(repo, act)
    team_ = TeamProc(repo, tmp_path, forge_env(s))
    world.start()
    try:
        until(lambda: all_merged(repo) or world.error is not None,
              lambda: "every task merged: " + team_.text(), TEAM_WAIT)
    finally:
        world.stop.set()
        out = team_.stop()
    assert world.error is None, world.error
    board = Liza.open(repo, "human").board()
    by_pr = {p["number"]: p for p in s.pulls()}
    merges = []
    for tid in TASKS:
        done = board.get("archive", tid)
        assert done is not None
        pr = by_pr[done.forge_pr]
        assert pr["merged"] and pr["merge_commit_sha"] == done.merge_commit, (tid, out)
        merges.append(done.merge_commit)
    assert rev(s.bare, "integration") == rev(repo, "integration")
    assert sorted(git(repo, "rev-list", "--merges", f"{base}..integration").split()) == \
        sorted(merges)  # each task merged once, by the forge; none by the team's reviewer
    assert "merged by the forge" in out, out
    ok(liza(repo, "verify", agent=None))
    assert s.validation_errors() == [], s.validation_errors()
