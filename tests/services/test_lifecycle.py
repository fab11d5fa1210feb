"""The task lifecycle through the real CLI (`git liza ...` subprocesses, one agent id per role):
claim into a worktree, submit, review, merge, leases, recovery. Every test checks git state (refs,
worktrees on disk) as well as the board."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gitliza.services.api import Liza
from gitliza.core import clock
from gitliza.errors import ConcurrencyConflict, InconsistentState, ValidationError
from gitliza.core.ops import Add, Init, Register
from gitliza.services.lifecycle.integration import ensure_integration_branch
from gitliza.services.locations import task_dir
from gitliza.services.lifecycle.merge import merge
from tests.conftest import commit_specs, git

VENV_BIN = str(Path(sys.executable).parent)
STATE = "refs/liza/state"


def run(repo: Path, *args: str, agent: str | None = None, now: str | None = None,
        cwd: Path | None = None, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    """`git liza ARGS` as agent `agent` (the real git dispatching to git-liza on PATH)."""
    e = {**os.environ, "PATH": VENV_BIN + os.pathsep + os.environ.get("PATH", "")}
    e.pop("LIZA_AGENT_ID", None)
    e.pop("LIZA_NOW", None)
    if agent:
        e["LIZA_AGENT_ID"] = agent
    if now:
        e["LIZA_NOW"] = now
    e.update(env or {})
    return subprocess.run(["git", "liza", *args], cwd=cwd or repo, env=e, capture_output=True,
                          text=True, timeout=120)


def ok(repo: Path, *args: str, **kw: Any) -> dict[str, Any]:
    r = run(repo, *args, "--json", **kw)
    assert r.returncode == 0, f"git liza {' '.join(args)}: {r.returncode} {r.stderr}"
    data: dict[str, Any] = json.loads(r.stdout)
    return data


def fails(repo: Path, code: int, *args: str, **kw: Any) -> str:
    before = tip(repo)
    r = run(repo, *args, **kw)
    assert r.returncode == code, f"git liza {' '.join(args)}: {r.returncode} {r.stderr}"
    if code in (1, 2):  # "nothing changed"
        assert tip(repo) == before
    return r.stderr


def tip(repo: Path, ref: str = STATE) -> str:
    return git(repo, "rev-parse", "--verify", "-q", ref, check=False)


def task(repo: Path, tid: str) -> Any:
    return Liza.open(repo).board().task(tid)


def commit_file(path: Path, name: str, text: str, msg: str = "work") -> str:
    (path / name).parent.mkdir(parents=True, exist_ok=True)
    (path / name).write_text(text)
    git(path, "add", name)
    git(path, "commit", "-q", "-m", msg)
    return git(path, "rev-parse", "HEAD")


def later(seconds: int) -> str:
    return clock.plus(clock.from_epoch(time.time()), seconds)


def setup_board(repo: Path, tasks: tuple[str, ...] = ("t1", "t2"), **task_args: Any) -> None:
    """Planner p1, coders c1 c2, reviewers r1 r2 and ready tasks, written in-process (the CLI
    costs a process start per call; the lifecycle itself is driven through the CLI)."""
    commit_specs(repo, "spec.md", "s")
    human = Liza.open(repo, "human")
    done = human.do(Init, goal="build it")
    ensure_integration_branch(human, done.outcome.board.config.integration_branch)
    for agent, role in (("p1", "planner"), ("c1", "coder"), ("c2", "coder"),
                        ("r1", "code_reviewer"), ("r2", "code_reviewer")):
        human.do(Register, agent=agent, role=role)
    planner = Liza.open(repo, "p1")
    for tid in tasks:
        planner.do(Add, task=tid, description=f"do {tid}", spec_ref="spec.md",
                   done_when="it works", scope="src", ready=True, **task_args)


@pytest.fixture
def board(repo: Path) -> Path:
    setup_board(repo)
    return repo


def claimed(repo: Path, tid: str | None, agent: str, **kw: Any) -> dict[str, Any]:
    data = ok(repo, "claim", *([tid] if tid else []), agent=agent, **kw)
    assert data["to"] == "CLAIMED"
    return data


def to_review(repo: Path, tid: str, coder: str, reviewer: str, text: str = "x\n") -> str:
    wt = Path(claimed(repo, tid, coder)["worktree"])
    sha = commit_file(wt, f"{tid}.txt", text)
    ok(repo, "submit", tid, agent=coder)
    ok(repo, "claim-review", tid, agent=reviewer)
    return sha


# -- the whole lifecycle --------------------------------------------------------------------------
def test_whole_lifecycle_reject_then_approve_then_merge(repo: Path) -> None:
    commit_specs(repo, "spec.md")
    ok(repo, "init", "build it")
    for agent, role in (("p1", "planner"), ("c1", "coder"), ("r1", "code_reviewer")):
        ok(repo, "register", agent, "--role", role)
    for tid in ("t1", "t2"):
        ok(repo, "add", tid, "--desc", f"do {tid}", "--spec-ref", "spec.md", "--done-when",
           "it works", "--scope", "src", "--ready", agent="p1")
    assert git(repo, "rev-parse", "integration") == git(repo, "rev-parse", "main")
    base = git(repo, "rev-parse", "integration")

    c = claimed(repo, None, "c1")  # best claimable: t1 (same priority, older)
    wt = Path(c["worktree"])
    assert c["task"] == "t1" and c["branch"] == "liza/t1" and c["base_commit"] == base
    assert wt == (repo / ".worktrees" / "t1").resolve() and wt.is_dir()
    assert c["state"] == tip(repo)
    assert git(wt, "rev-parse", "--abbrev-ref", "HEAD") == "liza/t1"
    assert "/.worktrees/" in (repo / ".git" / "info" / "exclude").read_text()
    assert git(repo, "status", "--porcelain") == ""  # the main worktree does not see it

    first = commit_file(wt, "feature.py", "v1\n")
    s = ok(repo, "submit", "t1", agent="c1", cwd=wt)  # agents run from inside their worktree
    assert s["task_record"]["review_commit"] == first
    r = ok(repo, "claim-review", agent="r1")
    assert r["task"] == "t1" and r["review_commit"] == first and r["worktree"] == str(wt)
    ok(repo, "verdict", "t1", "reject", "--reason", "needs tests", agent="r1")
    assert task(repo, "t1").status == "REJECTED"

    again = claimed(repo, "t1", "c1")  # same coder: same worktree, same base, next iteration
    assert again["reused"] and again["worktree"] == str(wt) and again["base_commit"] == base
    assert git(wt, "rev-parse", "HEAD") == first
    t = task(repo, "t1")
    assert t.iteration == 2 and t.review_cycles_current == 1

    second = commit_file(wt, "test_feature.py", "assert True\n")
    ok(repo, "submit", "t1", "--commit", second[:10], agent="c1")
    ok(repo, "claim-review", "t1", agent="r1")
    ok(repo, "verdict", "t1", "approve", agent="r1")
    assert task(repo, "t1").status == "APPROVED" and wt.is_dir()

    m = ok(repo, "merge", "t1", agent="r1")
    assert m["result"] == "merged" and m["kind"] == "fast-forward"
    assert git(repo, "rev-parse", "integration") == second == m["merge_commit"]
    assert not wt.exists() and git(repo, "branch", "--list", "liza/t1") == ""
    assert "t1" not in git(repo, "worktree", "list")
    t = task(repo, "t1")
    assert t.status == "MERGED" and t.merge_commit == second and t.worktree is None
    trailers = git(repo, "log", "-1", "--format=%(trailers:key=Liza-Op,valueonly)", STATE)
    assert trailers.strip() == "merge"
    assert run(repo, "doctor").returncode == 0


def test_merge_of_a_diverged_branch_makes_a_merge_commit_without_touching_worktrees(
        board: Path) -> None:
    repo = board
    to_review(repo, "t1", "c1", "r1")
    ok(repo, "verdict", "t1", "approve", agent="r1")
    ok(repo, "merge", "t1", agent="r1")
    sha = to_review(repo, "t2", "c2", "r2")  # based on the old tip? no: t2 was claimed after
    ok(repo, "verdict", "t2", "approve", agent="r2")
    # Move integration on by hand so that t2's review commit is not a descendant of it.
    git(repo, "checkout", "-q", "integration")
    commit_file(repo, "other.txt", "o\n", "hotfix")
    git(repo, "checkout", "-q", "main")
    old = git(repo, "rev-parse", "integration")
    m = ok(repo, "merge", "t2", agent="r2")
    assert m["kind"] == "merge"
    new = git(repo, "rev-parse", "integration")
    assert git(repo, "rev-parse", f"{new}^1") == old and git(repo, "rev-parse", f"{new}^2") == sha
    assert git(repo, "status", "--porcelain") == ""
    assert task(repo, "t2").merge_commit == new


def test_claim_prints_task_and_worktree_path(board: Path) -> None:
    r = run(board, "claim", "t2", agent="c1")
    assert r.returncode == 0, r.stderr
    assert "claim t2 (UNCLAIMED -> CLAIMED) by c1" in r.stdout
    assert f"worktree {(board / '.worktrees' / 't2').resolve()}" in r.stdout


# -- submit: clean sync ---------------------------------------------------------------------------
@pytest.mark.parametrize("dirt", ["modified", "staged", "untracked"])
def test_submit_refuses_a_dirty_worktree(board: Path, dirt: str) -> None:
    wt = Path(claimed(board, "t1", "c1")["worktree"])
    commit_file(wt, "a.txt", "1\n")
    if dirt == "modified":
        (wt / "a.txt").write_text("2\n")
    elif dirt == "staged":
        (wt / "b.txt").write_text("new\n")
        git(wt, "add", "b.txt")
    else:
        (wt / "notes.txt").write_text("scratch\n")
    err = fails(board, 1, "submit", "t1", agent="c1")
    assert "not clean" in err and dirt in err
    assert task(board, "t1").status == "CLAIMED"


def test_submit_refuses_nothing_committed_and_a_foreign_commit(board: Path) -> None:
    wt = Path(claimed(board, "t1", "c1")["worktree"])
    assert "nothing committed" in fails(board, 1, "submit", "t1", agent="c1")
    commit_file(wt, "a.txt", "1\n")
    main = git(board, "rev-parse", "main")
    assert "is not the worktree HEAD" in fails(board, 1, "submit", "t1", "--commit", main,
                                               agent="c1")
    # A history that does not descend from the base (the coder replaced it): refused.
    git(wt, "checkout", "-q", "--orphan", "other")
    git(wt, "commit", "-q", "-m", "rewritten")
    assert "does not descend from base_commit" in fails(board, 1, "submit", "t1", agent="c1")


# -- review ---------------------------------------------------------------------------------------
def test_verdict_refused_when_the_worktree_head_moved(board: Path) -> None:
    repo = board
    sha = to_review(repo, "t1", "c1", "r1")
    wt = repo / ".worktrees" / "t1"
    commit_file(wt, "late.txt", "sneaked in\n")
    err = fails(repo, 1, "verdict", "t1", "approve", agent="r1")
    assert "is not the submitted review_commit" in err
    # Naming the right commit does not help while HEAD is elsewhere; HEAD back: accepted.
    fails(repo, 1, "verdict", "t1", "approve", "--commit", sha, agent="r1")
    git(wt, "checkout", "-q", sha)
    ok(repo, "verdict", "t1", "approve", "--commit", sha, agent="r1")
    assert task(repo, "t1").status == "APPROVED"


def test_verdict_with_a_wrong_reviewed_sha_is_refused(board: Path) -> None:
    to_review(board, "t1", "c1", "r1")
    main = git(board, "rev-parse", "main")
    assert "is not t1's review_commit" in fails(board, 1, "verdict", "t1", "approve",
                                                 "--commit", main, agent="r1")


def test_roles_coder_cannot_review_and_nobody_reviews_own_work(board: Path) -> None:
    repo = board
    wt = Path(claimed(repo, "t1", "c1")["worktree"])
    commit_file(wt, "a.txt", "1\n")
    ok(repo, "submit", "t1", agent="c1")
    # The task's own coder (agents have one role) cannot take the review, nor give a verdict.
    assert "not allowed" in fails(repo, 1, "claim-review", "t1", agent="c1")
    assert "not allowed" in fails(repo, 1, "verdict", "t1", "approve", agent="c1")
    # Another coder cannot approve either.
    fails(repo, 1, "claim-review", "t1", agent="c2")
    fails(repo, 1, "verdict", "t1", "approve", agent="c2")
    # A reviewer cannot claim coding work, and a verdict needs the review lease first.
    assert "not allowed" in fails(repo, 1, "claim", "t2", agent="r1")
    assert "claim-review" in fails(repo, 1, "verdict", "t1", "approve", agent="r1")
    ok(repo, "claim-review", "t1", agent="r1")
    # The second reviewer is refused while r1's lease is live, and cannot give the verdict.
    assert "already being reviewed by r1" in fails(repo, 1, "claim-review", "t1", agent="r2")
    assert "stand down" in fails(repo, 1, "verdict", "t1", "approve", agent="r2")
    # Nobody may merge what is not approved; a coder may not merge at all.
    fails(repo, 1, "merge", "t1", agent="r1")
    ok(repo, "verdict", "t1", "approve", agent="r1")
    assert "not allowed" in fails(repo, 1, "merge", "t1", agent="c1")
    integ = git(repo, "rev-parse", "integration")
    assert integ == git(repo, "rev-parse", "main")


def test_claim_review_without_task_when_nothing_waits(board: Path) -> None:
    assert "nothing to review" in fails(board, 1, "claim-review", agent="r1")


# -- leases ---------------------------------------------------------------------------------------
def test_expired_lease_is_taken_over_and_the_first_coder_must_stand_down(board: Path) -> None:
    repo = board
    wt = Path(claimed(repo, "t1", "c1")["worktree"])
    commit_file(wt, "c1.txt", "c1's attempt\n")
    lease = task(repo, "t1").lease_expires
    soon = later(60)
    ok(repo, "heartbeat", agent="c1", now=soon)  # a live lease is extended
    assert task(repo, "t1").lease_expires > lease
    fails(repo, 1, "claim", "t1", agent="c2", now=soon)  # not claimable while the lease lives

    gone = later(3600)
    assert "expired" in fails(repo, 1, "heartbeat", agent="c1", now=gone)
    c = claimed(repo, "t1", "c2", now=gone)
    assert not c["reused"]
    assert c["base_commit"] == git(repo, "rev-parse", "integration")
    assert not (wt / "c1.txt").exists()  # a fresh checkout for the new coder
    t = task(repo, "t1")
    assert t.assigned_to == "c2" and t.iteration == 1 and t.failed_by == ()  # a fault, not a failure
    for args in (("submit", "t1"), ("release", "t1")):
        assert "stand down" in fails(repo, 1, *args, agent="c1", now=gone)
    # c1 was freed by the takeover: its heartbeat is now a plain idle one and says so.
    assert ok(repo, "heartbeat", agent="c1", now=gone)["task"] is None
    assert wt.is_dir() and task(repo, "t1").assigned_to == "c2"


def test_rejected_task_claimed_by_another_coder_starts_fresh(board: Path) -> None:
    repo = board
    to_review(repo, "t1", "c1", "r1")
    ok(repo, "verdict", "t1", "reject", "--reason", "wrong approach", agent="r1")
    c = claimed(repo, "t1", "c2")
    assert not c["reused"] and c["base_commit"] == git(repo, "rev-parse", "integration")
    assert not (Path(c["worktree"]) / "t1.txt").exists()
    assert git(Path(c["worktree"]), "rev-parse", "HEAD") == c["base_commit"]
    t = task(repo, "t1")
    # One rejection, then another coder: c1 left the task, it did not fail it (issue 38).
    assert t.assigned_to == "c2" and t.failed_by == () and t.review_cycles_current == 0


def test_release_removes_the_worktree_and_branch(board: Path) -> None:
    wt = Path(claimed(board, "t1", "c1")["worktree"])
    work = commit_file(wt, "a.txt", "1\n")
    out = ok(board, "release", "t1", agent="c1")
    assert not wt.exists() and git(board, "branch", "--list", "liza/t1") == ""
    # the given-back commits are not left dangling: the attic keeps them
    assert git(board, "rev-parse", f"refs/liza-attic/t1/{work}^{{commit}}") == work
    assert any("liza-attic" in n for n in out["notices"])
    t = task(board, "t1")
    assert t.status == "UNCLAIMED" and t.worktree is None
    again = claimed(board, "t1", "c2")  # from scratch, at the integration tip
    assert not again["reused"] and not (wt / "a.txt").exists()


def test_a_dirty_worktree_kept_on_release_is_said_once(board: Path) -> None:
    wt = Path(claimed(board, "t1", "c1")["worktree"])
    (wt / "wip.txt").write_text("unsaved\n")
    r = run(board, "release", "t1", agent="c1")
    assert r.returncode == 0
    assert (r.stdout + r.stderr).count(f"kept {wt}") == 1, r.stdout + r.stderr


def test_the_human_frees_a_claimed_task_and_its_worktree_stays(board: Path) -> None:
    wt = Path(claimed(board, "t1", "c1")["worktree"])
    work = commit_file(wt, "a.txt", "1\n")
    r = run(board, "release", "t1")  # as the human: no LIZA_AGENT_ID
    assert r.returncode == 0, r.stderr
    assert "release t1: freed from c1 by the human" in r.stdout
    assert r.stderr.count("worktree kept") == 1
    t = task(board, "t1")
    assert t.status == "UNCLAIMED" and t.assigned_to is None
    assert t.history[-1].event == "released" and t.history[-1].agent == "human"
    assert Liza.open(board).board().agent("c1").status == "IDLE"
    assert git(wt, "rev-parse", "HEAD") == work  # the coder's work is where it was
    log = json.loads(run(board, "log", "--json", "-n", "1").stdout)
    assert (log[0]["op"], log[0]["actor"]) == ("release", "human")
    # c1 learns it at its next write: it no longer holds t1.
    fails(board, 1, "submit", "t1", agent="c1")
    again = claimed(board, "t1", "c2")
    assert git(board, "rev-parse", f"refs/liza-attic/t1/{work}^{{commit}}") == work or again["reused"]


def test_the_human_requeues_a_rejected_task_and_frees_a_review_lease(board: Path) -> None:
    to_review(board, "t1", "c1", "r1")
    ok(board, "verdict", "t1", "reject", "--reason", "wrong approach", agent="r1")
    r = run(board, "release", "t1")
    assert r.returncode == 0, r.stderr
    t = task(board, "t1")
    assert t.status == "UNCLAIMED" and t.failed_by == () and t.assigned_to is None
    to_review(board, "t2", "c2", "r2")
    assert task(board, "t2").reviewing_by == "r2"
    r = run(board, "release", "t2")
    assert r.returncode == 0 and "review lease of r2 freed by the human" in r.stdout
    t = task(board, "t2")
    assert t.status == "READY_FOR_REVIEW" and t.reviewing_by is None
    assert Liza.open(board).board().agent("r2").status == "IDLE"
    # Nothing to free: refused, nothing written.
    assert "nothing to release" in fails(board, 1, "release", "t2")
    # A coder still may not free another coder's task, nor a task in review.
    claimed(board, "t1", "c1")
    assert "claimed by c1, not c2" in fails(board, 1, "release", "t1", agent="c2")
    assert "task is READY_FOR_REVIEW" in fails(board, 1, "release", "t2", agent="c1")


# -- merge failures -------------------------------------------------------------------------------
def test_merge_conflict_leaves_the_branch_and_records_integration_failed(board: Path) -> None:
    repo = board
    to_review(repo, "t1", "c1", "r1", text="one\n")
    wt2 = Path(claimed(repo, "t2", "c2")["worktree"])  # claimed before t1 merges: same base
    commit_file(wt2, "t1.txt", "two\n")  # the same file, other content
    ok(repo, "submit", "t2", agent="c2")
    ok(repo, "claim-review", "t2", agent="r2")
    ok(repo, "verdict", "t2", "approve", agent="r2")
    # The integration branch moves under t2 without gitliza (another machine's merge, a
    # human's commit): the merge itself finds the conflict.
    integ = git(repo, "rev-parse", "integration")
    (repo.parent / "elsewhere.txt").write_text("one\n")
    blob = git(repo, "hash-object", "-w", str(repo.parent / "elsewhere.txt"))
    index = {"GIT_INDEX_FILE": str(repo.parent / "elsewhere.index")}
    git(repo, "read-tree", integ, env=index)
    git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},t1.txt", env=index)
    tree = git(repo, "write-tree", env=index)
    moved = git(repo, "commit-tree", tree, "-p", integ, "-m", "elsewhere")
    git(repo, "update-ref", "refs/heads/integration", moved)
    integ = moved
    before = tip(repo)
    err = fails(repo, 3, "merge", "t2", agent="r2")
    assert "conflicts in: t1.txt" in err and err.count("\n") == 1  # one line
    assert git(repo, "rev-parse", "integration") == integ
    assert tip(repo) != before  # the transition was recorded
    t = task(repo, "t2")
    assert t.status == "INTEGRATION_FAILED" and "t1.txt" in t.integration_failure
    assert wt2.is_dir()
    # The same coder fixes it in the same worktree (same base), and it merges.
    again = claimed(repo, "t2", "c2")
    assert again["reused"] and task(repo, "t2").integration_fix
    git(wt2, "merge", "-q", "integration", check=False)
    (wt2 / "t1.txt").write_text("one\ntwo\n")
    git(wt2, "add", "t1.txt")
    git(wt2, "commit", "-q", "--no-edit")
    ok(repo, "submit", "t2", agent="c2")
    ok(repo, "claim-review", "t2", agent="r2")
    ok(repo, "verdict", "t2", "approve", agent="r2")
    assert ok(repo, "merge", "t2", agent="r2")["kind"] == "fast-forward"
    assert (repo / ".worktrees").is_dir() and not wt2.exists()


def test_failing_integration_test_leaves_the_branch_and_records_integration_failed(
        board: Path) -> None:
    repo = board
    wt = Path(claimed(repo, "t1", "c1")["worktree"])
    commit_file(wt, "scripts/integration-test.sh", "echo running suite\necho 3 failed >&2\n"
                "exit 7\n")
    ok(repo, "submit", "t1", agent="c1")
    ok(repo, "claim-review", "t1", agent="r1")
    ok(repo, "verdict", "t1", "approve", agent="r1")
    integ = git(repo, "rev-parse", "integration")
    r = run(repo, "merge", "t1", "--json", agent="r1")
    assert r.returncode == 3
    assert "exited 7" in r.stderr and "3 failed" in r.stderr
    assert json.loads(r.stdout)["to"] == "INTEGRATION_FAILED"
    assert git(repo, "rev-parse", "integration") == integ
    failed = task(repo, "t1")
    assert failed.status == "INTEGRATION_FAILED"
    # The whole output is kept under .liza/, as wt-merge.sh keeps it; the reason names the file.
    [log] = list((repo / ".liza").glob("integration-test-t1-*.log"))
    assert log.read_text() == "running suite\n3 failed\n" or "3 failed" in log.read_text()
    assert failed.integration_failure is not None
    assert f"(full output: .liza/{log.name})" in failed.integration_failure
    assert git(repo, "status", "--porcelain") == ""  # .liza/ is excluded
    # Another coder takes it over from the failed work itself (liza-claim-task.sh keeps that
    # worktree), not from a fresh checkout with the work only in the attic.
    failed_head = git(wt, "rev-parse", "HEAD")
    data = claimed(repo, "t1", "c2")
    assert Path(data["worktree"]) == wt and git(wt, "rev-parse", "HEAD") == failed_head
    assert task(repo, "t1").integration_fix
    # A passing test lets it through (the fix commit changes the script).
    commit_file(wt, "scripts/integration-test.sh", "exit 0\n")
    ok(repo, "submit", "t1", agent="c2")
    ok(repo, "claim-review", "t1", agent="r1")
    ok(repo, "verdict", "t1", "approve", agent="r1")
    assert ok(repo, "merge", "t1", agent="r1")["integration_tested"] is True


# -- exhaustion, cleanup --------------------------------------------------------------------------
def test_claim_past_max_iterations_blocks_and_keeps_the_worktree(board: Path) -> None:
    repo = board
    ok(repo, "add", "t3", "--desc", "d", "--spec-ref", "s", "--done-when", "w", "--scope", "x",
       "--ready", "--max-iterations", "1", agent="p1")
    to_review(repo, "t3", "c1", "r1")
    ok(repo, "verdict", "t3", "reject", "--reason", "no", agent="r1")
    r = run(repo, "claim", "t3", "--json", agent="c1")
    assert r.returncode == 1 and "t3 was not claimed: it moved to BLOCKED" in r.stderr
    data = json.loads(r.stdout)  # the recorded transition is still reported
    assert data["to"] == "BLOCKED" and data["worktree"] is None
    assert task(repo, "t3").status == "BLOCKED"
    assert (repo / ".worktrees" / "t3").is_dir()  # BLOCKED keeps it for the diagnosis
    assert run(repo, "doctor").returncode == 0
    ok(repo, "unblock", "t3", agent="p1")  # the reset drops it
    assert not (repo / ".worktrees" / "t3").exists()


def test_abandon_removes_clean_worktrees_and_keeps_dirty_ones(board: Path) -> None:
    repo = board
    for tid, coder, reviewer in (("t1", "c1", "r1"), ("t2", "c2", "r2")):
        to_review(repo, tid, coder, reviewer)
        ok(repo, "verdict", tid, "reject", "--reason", "wrong approach", agent=reviewer)
    (repo / ".worktrees" / "t2" / "wip.txt").write_text("unsaved\n")
    ok(repo, "abandon", "t1", "--reason", "not needed", agent="p1")
    assert not (repo / ".worktrees" / "t1").exists()
    assert git(repo, "branch", "--list", "liza/t1") == ""
    r = run(repo, "rescope", "t2", "--into", "t2a", "--reason", "split", agent="p1")
    assert r.returncode == 0 and "kept" in r.stderr and "wip.txt" in r.stderr
    assert (repo / ".worktrees" / "t2" / "wip.txt").exists()
    d = run(repo, "doctor", "--fix", "--json")  # doctor will not delete unsaved work either
    assert d.returncode == 4
    (problem,) = json.loads(d.stdout)["problems"]
    assert problem["kind"] == "stray-worktree" and not problem["fixed"]


# -- doctor ---------------------------------------------------------------------------------------
def test_merged_branch_but_failed_board_write_exits_4(board: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    repo = board
    sha = to_review(repo, "t1", "c1", "r1")
    ok(repo, "verdict", "t1", "approve", agent="r1")
    liza = Liza.open(repo, "r1")
    real = liza.store.transact

    def lose_merged(make_op: Any, now: Any, **kw: Any) -> Any:
        op = make_op(liza.board(), now())
        if op.NAME == "merge":
            raise ConcurrencyConflict("refs/liza/state kept moving under us")
        return real(make_op, now, **kw)
    monkeypatch.setattr(liza.store, "transact", lose_merged)
    with pytest.raises(InconsistentState, match="doctor --fix") as e:
        merge(liza, "t1")
    assert e.value.exit_code == 4
    assert git(repo, "rev-parse", "integration") == sha
    assert task(repo, "t1").status == "APPROVED"


@pytest.mark.parametrize("fixer", ["doctor", "merge"])
def test_doctor_finishes_a_merge_whose_board_write_failed(board: Path, fixer: str) -> None:
    repo = board
    sha = to_review(repo, "t1", "c1", "r1")
    ok(repo, "verdict", "t1", "approve", agent="r1")
    git(repo, "branch", "-f", "integration", sha)  # the branch moved, MERGED never recorded
    d = run(repo, "doctor", "--json")
    assert d.returncode == 4
    assert [p["kind"] for p in json.loads(d.stdout)["problems"]] == ["approved-merged"]
    if fixer == "merge":  # merging again is harmless: up-to-date, and MERGED is recorded
        assert ok(repo, "merge", "t1", agent="r1")["kind"] == "up-to-date"
    else:
        assert run(repo, "doctor", "--fix").returncode == 0
    t = task(repo, "t1")
    assert t.status == "MERGED" and t.merge_commit == sha
    assert not (repo / ".worktrees" / "t1").exists()
    assert run(repo, "doctor").returncode == 0


def test_doctor_stale_lock_missing_worktree_and_strays(board: Path) -> None:
    repo = board
    wt = Path(claimed(repo, "t1", "c1")["worktree"])
    sha = commit_file(wt, "a.txt", "1\n")
    git(repo, "worktree", "remove", "--force", str(wt))  # CLAIMED, worktree gone, branch kept
    lock = repo / ".git" / "refs" / "liza" / "state.lock"
    lock.write_text("")
    os.utime(lock, (time.time() - 60, time.time() - 60))
    git(repo, "branch", "liza/ghost", "main")  # a branch no task explains, holding no work
    git(repo, "branch", "liza/keep", sha)  # one holding work outside integration: left alone
    d = json.loads(run(repo, "doctor", "--json").stdout)
    kinds = sorted((p["kind"], p["fixable"]) for p in d["problems"])
    assert kinds == [("missing-worktree", True), ("stale-lock", True), ("stray-branch", False),
                     ("stray-branch", True)]
    r = run(repo, "doctor", "--fix")
    assert r.returncode == 4 and "liza/keep" in r.stdout  # the unsafe one remains
    assert not lock.exists() and (wt / "a.txt").read_text() == "1\n"
    assert git(wt, "rev-parse", "HEAD") == sha
    assert git(repo, "branch", "--list", "liza/ghost") == ""
    git(repo, "branch", "-D", "liza/keep")
    assert run(repo, "doctor").returncode == 0
    ok(repo, "submit", "t1", agent="c1")  # the recreated worktree is usable


# -- containment ----------------------------------------------------------------------------------
def test_paths_stay_inside_the_repository(board: Path, tmp_path: Path) -> None:
    repo = board
    liza = Liza.open(repo)
    for bad in ("../x", "/abs", "a/b", ".."):
        with pytest.raises(ValidationError):
            task_dir(liza.repo, bad)
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / ".worktrees").symlink_to(outside)  # a symlinked .worktrees must not be followed
    err = fails(repo, 1, "claim", "t1", agent="c1")
    assert "outside" in err
    assert list(outside.iterdir()) == []
    (repo / ".worktrees").unlink()
    (repo / ".worktrees").mkdir()
    (repo / ".worktrees" / "t1").symlink_to(outside)
    fails(repo, 1, "claim", "t1", agent="c1")
    assert list(outside.iterdir()) == [] and task(repo, "t1").status == "UNCLAIMED"


def test_fresh_claim_keeps_leftover_work_in_the_attic(tmp_path: Path) -> None:
    """A takeover after a crash: coder-1's commits and its uncommitted edits survive under
    refs/liza-attic/<task>/ while coder-2 gets a fresh worktree from the integration tip."""
    import subprocess as sp

    import pygit2

    from gitliza.services.api import Liza
    from gitliza.core.ops import Add, Register
    from gitliza.services.lifecycle.claim import claim

    repo = tmp_path / "r"
    repo.mkdir()
    sp.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    (repo / "a.txt").write_text("a\n")
    sp.run(["git", "add", "."], cwd=repo, check=True)
    sp.run(["git", "commit", "-qm", "init"], cwd=repo, check=True)
    from gitliza.core.ops import Init
    human = Liza.open(repo, "human", now=lambda: "2025-01-17T14:00:00Z")
    human.do(Init, goal="g")
    ensure_integration_branch(human, "integration")
    for a, role in (("planner-1", "planner"), ("coder-1", "coder"), ("coder-2", "coder")):
        human.do(Register, agent=a, role=role)
    Liza.open(repo, "planner-1", now=lambda: "2025-01-17T14:00:00Z").do(
        Add, task="task-1", description="d", spec_ref="s", done_when="w", scope="x", ready=True)
    c1 = claim(Liza.open(repo, "coder-1", now=lambda: "2025-01-17T14:01:00Z"), "task-1")
    wt = Path(c1.worktree)
    (wt / "a.txt").write_text("committed work\n")
    sp.run(["git", "commit", "-qam", "coder-1 work"], cwd=wt, check=True)
    committed = sp.run(["git", "rev-parse", "HEAD"], cwd=wt, capture_output=True, text=True,
                       check=True).stdout.strip()
    (wt / "a.txt").write_text("uncommitted edit\n")
    (wt / "new.txt").write_text("untracked\n")
    # coder-1's lease (300 s) has long expired: coder-2 takes over with a fresh worktree
    c2 = claim(Liza.open(repo, "coder-2", now=lambda: "2025-01-17T15:00:00Z"), "task-1")
    assert (Path(c2.worktree) / "a.txt").read_text() == "a\n" and not c2.reused
    r = pygit2.Repository(str(repo))
    attic = [n for n in r.references if n.startswith("refs/liza-attic/task-1/")]
    # One entry: the snapshot, whose parent is the committed work (both kept by one ref).
    assert len(attic) == 1
    snap = r[r.references[attic[0]].target].peel(pygit2.Commit)
    assert snap.parents[0].id == pygit2.Oid(hex=committed)
    assert any(attic[0] in n for n in c2.notices)  # the claim's line names it
    assert snap.tree["a.txt"].data == b"uncommitted edit\n"  # type: ignore[union-attr]
    assert snap.tree["new.txt"].data == b"untracked\n"  # type: ignore[union-attr]


def test_a_fresh_claim_refuses_to_delete_foreign_files(board: Path) -> None:
    foreign = board / ".worktrees" / "t2"
    foreign.mkdir(parents=True)
    (foreign / "notes.txt").write_text("mine\n")
    assert "not a gitliza worktree" in fails(board, 1, "claim", "t2", agent="c1")
    assert (foreign / "notes.txt").read_text() == "mine\n"
