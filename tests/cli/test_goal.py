"""Issue 12 through the real `git liza` executable: anomaly details replay, legacy anomaly commits,
the goal lifecycle (complete, abort, the next goal) and human notes in `show`."""
from __future__ import annotations

import dataclasses
import json
import tomllib
from pathlib import Path

import pytest

from gitliza.services.api import Liza, now_utc
from gitliza.core.board import journal_key
from gitliza.core.ops.engine import apply
from gitliza.core.ops.journal import AnomalyOp
from tests.conftest import git
from tests.cli.test_board import liza, ok, tip

SEED_ORDER = ("--detail", "what=flatten", "--detail", "why=unblock", "--detail",
              "debt_created=true")


@pytest.fixture
def board(repo: Path) -> Path:
    ok(liza(repo, "init", "Retry logic for all API calls", agent=None))
    ok(liza(repo, "register", "planner-1", "--role", "planner", agent=None))
    ok(liza(repo, "register", "coder-1", "--role", "coder", agent=None))
    ok(liza(repo, "add", "t-1", "--desc", "retry get_user"))
    return repo


def _anomaly_blobs(repo: Path) -> list[dict[str, object]]:
    names = git(repo, "ls-tree", "-r", "--name-only", "refs/liza/state", "anomalies").split()
    return [tomllib.loads(git(repo, "show", f"refs/liza/state:{n}")) for n in names]


def test_anomaly_in_the_seeds_detail_order_verifies(board: Path) -> None:
    ok(liza(board, "anomaly", "trade_off", "--task", "t-1", *SEED_ORDER, agent="coder-1"))
    ok(liza(board, "verify"))
    [entry] = _anomaly_blobs(board)
    assert entry["details"] == {"what": "flatten", "why": "unblock", "debt_created": True}
    assert list(entry["details"]) == ["debt_created", "what", "why"]  # type: ignore[call-overload]
    # The same details in another order are the same entry: refused as already recorded only if
    # in the same second, so just check the ref replays after a second anomaly too.
    ok(liza(board, "anomaly", "retry_loop", "--detail", "error_pattern=ünïcode \"q\"",
            "--detail", "count=3", "--detail", "zeta=1", "--detail", "alpha=x", agent="coder-1"))
    assert json.loads(ok(liza(board, "verify", "--json")))["legacy"] == []


def test_duplicate_detail_key_is_refused_and_nothing_changes(board: Path) -> None:
    before = tip(board)
    r = liza(board, "anomaly", "trade_off", *SEED_ORDER, "--detail", "what=again")
    assert r.returncode == 1 and "given twice" in r.stderr and len(r.stderr.splitlines()) == 1
    assert tip(board) == before


def _legacy_anomaly_commit(repo: Path, value: str = "flatten") -> str:
    """What gitliza before the fix wrote: the details in typed order, keyed by those bytes."""
    lz = Liza.open(repo)
    store = lz.store
    parent = store.commit(store.tip())
    board = store.board_at(parent)
    typed = (("what", "flatten"), ("why", "unblock"), ("debt_created", True))
    op = AnomalyOp(actor="human", time=now_utc(), type="trade_off", task="t-1", details=typed)
    outcome = apply(board, op)
    [(key, entry)] = outcome.changes.items()
    old = dataclasses.replace(entry, details=(("what", value),) + typed[1:])
    written = dataclasses.replace(outcome, changes={("anomalies", journal_key(old, op.time)): old})
    oid = store.write_commit(parent, written, op)
    git(repo, "update-ref", "refs/liza/state", str(oid), str(parent.id))
    return str(oid)


def test_legacy_anomaly_commit_is_accepted_by_name_and_doctor_explains_it(board: Path) -> None:
    legacy = _legacy_anomaly_commit(board)
    ok(liza(board, "note", "after the legacy commit", "--for", "t-1", agent=None))
    r = liza(board, "verify")
    assert r.returncode == 0, r.stderr
    assert f"state commit {legacy[:12]} (anomaly) accepted in a legacy encoding" in r.stderr
    assert json.loads(ok(liza(board, "verify", "--json")))["legacy"] == [legacy]
    doc = json.loads(ok(liza(board, "doctor", "--json")))
    assert len(doc["legacy"]) == 1 and "legacy-anomaly anomalies/" in doc["legacy"][0]
    assert "legacy-anomaly" in ok(liza(board, "doctor"))


def test_a_legacy_lookalike_with_other_content_still_fails(board: Path) -> None:
    bad = _legacy_anomaly_commit(board, value="something else")
    r = liza(board, "verify")
    assert r.returncode == 4 and bad[:12] in r.stderr and "not what the op writes" in r.stderr


def test_goal_complete_then_a_new_goal_on_the_same_board(board: Path) -> None:
    r = liza(board, "complete-goal")
    assert r.returncode == 1 and "t-1 (DRAFT)" in r.stderr
    r = liza(board, "complete-goal", agent="coder-1")
    assert r.returncode == 1 and "allowed: human, planner" in r.stderr
    ok(liza(board, "abandon", "t-1", "--reason", "not needed"))
    before = tip(board)
    r = liza(board, "abort-goal", "--reason", "  ")
    assert r.returncode == 1 and tip(board) == before
    out = json.loads(ok(liza(board, "complete-goal", "--summary", "retries everywhere", "--json")))
    assert out["op"] == "complete-goal"
    st = json.loads(ok(liza(board, "status", "--json")))
    assert st["goal"]["status"] == "COMPLETED" and st["sprint"]["status"] == "COMPLETED"
    assert st["sprint"]["timeline"]["ended"] == st["goal"]["alignment_history"][-1]["timestamp"]
    assert st["goal"]["alignment_history"][-1] == {
        "timestamp": st["sprint"]["timeline"]["ended"], "event": "goal_completed",
        "summary": "retries everywhere"}
    assert liza(board, "complete-goal").returncode == 1  # already COMPLETED
    r = liza(board, "add", "t-2", "--desc", "more")
    assert r.returncode == 1 and "COMPLETED" in r.stderr
    ok(liza(board, "init", "Second goal: circuit breakers"))
    st = json.loads(ok(liza(board, "status", "--json")))
    assert (st["goal"]["id"], st["sprint"]["id"]) == ("goal-2", "sprint-2")
    assert st["goal"]["status"] == "IN_PROGRESS" and st["sprint"]["goal_ref"] == "goal-2"
    first = st["goal"]["alignment_history"][0]
    assert first["event"] == "previous_goal" and first["summary"].startswith("goal-1 COMPLETED")
    assert st["archived"] == 1 and [a["id"] for a in st["agents"]] == ["coder-1", "planner-1"]
    assert json.loads(ok(liza(board, "show", "t-1", "--json")))["status"] == "ABANDONED"
    assert liza(board, "add", "t-1", "--desc", "reuse").returncode == 1  # ids stay unique
    ok(liza(board, "add", "t-2", "--desc", "breaker"))
    r = liza(board, "init", "Third goal")
    assert r.returncode == 1 and "goal-2 in progress" in r.stderr
    ok(liza(board, "abort-goal", "--reason", "priorities changed"))
    r = liza(board, "init", "Third goal")
    assert r.returncode == 1 and "live task(s) t-2" in r.stderr
    ok(liza(board, "abandon", "t-2", "--reason", "goal aborted"))
    ok(liza(board, "init", "Third goal"))
    st = json.loads(ok(liza(board, "status", "--json")))
    assert st["goal"]["id"] == "goal-3"
    assert st["goal"]["alignment_history"][0]["summary"].startswith("goal-2 ABORTED")
    verified = json.loads(ok(liza(board, "verify", "--json")))
    assert verified["ops"]["init"] == 3 and verified["ops"]["abort-goal"] == 1
    assert ok(liza(board, "validate")).strip() == "VALID"


def test_show_displays_the_notes_for_the_task(board: Path) -> None:
    # Notes carry second-resolution timestamps (the seed's schema); "oldest first" is only
    # defined between different seconds, so the two notes for t-1 are a minute apart.
    later = {"LIZA_NOW": "2099-01-01T00:01:00Z"}
    ok(liza(board, "note", "use src/utils/retry.py", "--for", "t-1", agent=None,
            env={"LIZA_NOW": "2099-01-01T00:00:00Z"}))
    ok(liza(board, "note", "general remark", agent=None, env=later))
    ok(liza(board, "add", "t-2", "--desc", "other", env=later))
    ok(liza(board, "note", "only for t-2", "--for", "t-2", agent=None, env=later))
    ok(liza(board, "note", "second for t-1: ünïcode", "--for", "t-1", env=later))
    text = ok(liza(board, "show", "t-1"))
    assert "human notes" in text and "human: use src/utils/retry.py" in text
    assert "planner-1: second for t-1: ünïcode" in text
    assert "general remark" not in text and "only for t-2" not in text
    assert text.index("use src/utils") < text.index("second for t-1")
    shown = json.loads(ok(liza(board, "show", "t-1", "--json")))
    assert [n["message"] for n in shown["human_notes"]] == ["use src/utils/retry.py",
                                                           "second for t-1: ünïcode"]
    assert shown["human_notes"][0]["for"] == "t-1"


def _commit_on_head(repo: Path, name: str) -> str:
    (repo / name).write_text(name)
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", name)
    return git(repo, "rev-parse", "HEAD")


def test_the_next_goals_init_brings_mains_new_commits_to_integration(board: Path) -> None:
    """Issue 36: a next goal's spec committed on main reaches integration (a fast-forward, the
    human's base recorded), or `init` says in one line what to type; an agent's init never moves
    the branch (its base is the human's)."""
    ok(liza(board, "abandon", "t-1", "--reason", "not needed"))
    ok(liza(board, "complete-goal"))
    head = _commit_on_head(board, "next.md")
    r = liza(board, "init", "Second goal", agent=None)
    assert r.returncode == 0 and "integration fast-forwarded to main (1 new commit(s)" in r.stderr
    assert git(board, "rev-parse", "integration") == head
    assert ok(liza(board, "config", "integration_base")).strip() == head
    # a planner's init of the next goal: nothing moves, one line says how
    ok(liza(board, "abort-goal", "--reason", "again"))
    before = git(board, "rev-parse", "integration")
    _commit_on_head(board, "third.md")
    r = liza(board, "init", "Third goal")
    assert r.returncode == 0 and git(board, "rev-parse", "integration") == before
    [line] = [x for x in r.stderr.splitlines() if "integration lacks" in x]
    assert "git branch -f integration main" in line and "integration_base" in line
    # diverged (integration has work main lacks): no fast-forward, the merge named first
    ok(liza(board, "abort-goal", "--reason", "again"))
    git(board, "checkout", "-q", "integration")
    _commit_on_head(board, "merged-work.py")
    git(board, "checkout", "-q", "main")
    integ = git(board, "rev-parse", "integration")
    r = liza(board, "init", "Fourth goal", agent=None)
    assert r.returncode == 0 and git(board, "rev-parse", "integration") == integ
    [line] = [x for x in r.stderr.splitlines() if "cannot fast-forward" in x]
    assert "`git merge integration` on main" in line


def _two_goals_merged(repo: Path) -> Liza:
    """goal-1 merged t1 and completed; goal-2 merged t2 and is ready to complete. The human's
    `Liza`, its clock ten seconds an op."""
    import itertools

    from gitliza.core import clock
    from gitliza.core.ops import Add, Claim, ClaimReview, Init, Merge, Register, Submit, Verdict
    from gitliza.core.ops.goal import CompleteGoal
    ticks = itertools.count()
    start = clock.to_epoch("2025-01-17T14:00:00Z")

    def now() -> str:
        return clock.from_epoch(start + 10 * next(ticks))
    sha = git(repo, "rev-parse", "HEAD")
    human, planner, coder, reviewer = (Liza.open(repo, a, now=now, sync=False)
                                       for a in ("human", "planner-1", "coder-1", "rev-1"))
    human.do(Init, goal="first")
    for agent, role in (("planner-1", "planner"), ("coder-1", "coder"), ("rev-1", "code_reviewer")):
        human.do(Register, agent=agent, role=role)
    for goal, task in ((1, "t1"), (2, "t2")):
        if goal == 2:
            human.do(CompleteGoal)
            human.do(Init, goal="second", goal_id="goal-2", sprint_id="sprint-2")
        planner.do(Add, task=task, description="d", spec_ref="README.md", done_when="done",
                   scope="s", ready=True)
        coder.do(Claim, task=task, worktree=f".worktrees/{task}", base_commit=sha)
        coder.do(Submit, task=task, commit=sha)
        reviewer.do(ClaimReview, task=task)
        reviewer.do(Verdict, task=task, verdict="approve", commit=sha)
        reviewer.do(Merge, task=task, result="merged", merge_commit=sha)
    return human


def _legacy_complete_goal(repo: Path, merged: int) -> str:
    """A complete-goal commit whose default summary says `merged` (gitliza before the fix wrote
    every goal's merges there), on the state ref's tip."""
    from gitliza.core.model import Alignment
    from gitliza.core.ops.goal import CompleteGoal
    human = _two_goals_merged(repo)
    store = human.store
    parent = store.commit(store.tip())
    op = CompleteGoal(actor="human", time=human.now())
    outcome = apply(store.board_at(parent), op)
    goal = outcome.changes[("goal", "")]
    last = goal.alignment_history[-1]
    assert last.summary == "Goal completed: 1 task(s) merged"  # what gitliza writes now
    old = dataclasses.replace(goal, alignment_history=goal.alignment_history[:-1] + (
        Alignment(last.timestamp, last.event, f"Goal completed: {merged} task(s) merged"),))
    written = dataclasses.replace(outcome, changes={**outcome.changes, ("goal", ""): old})
    oid = store.write_commit(parent, written, op)
    git(repo, "update-ref", "refs/liza/state", str(oid), str(parent.id))
    return str(oid)


def test_a_goal_summary_counting_every_goals_merges_verifies_as_legacy(repo: Path) -> None:
    """Older gitliza's complete-goal counted every goal's merges (2 here, for a goal that merged
    one): such a commit no longer replays byte for byte, and verify accepts it by name."""
    legacy = _legacy_complete_goal(repo, merged=2)
    r = liza(repo, "verify", agent=None)
    assert r.returncode == 0, r.stderr
    assert f"state commit {legacy[:12]} (complete-goal) accepted in a legacy encoding" in r.stderr
    assert "every goal's merges" in r.stderr
    assert json.loads(ok(liza(repo, "verify", "--json", agent=None)))["legacy"] == [legacy]
    # `status` shows what was recorded
    assert "Goal completed: 2 task(s) merged" in ok(liza(repo, "status", agent=None))


def test_a_goal_summary_with_any_other_count_still_fails(repo: Path) -> None:
    bad = _legacy_complete_goal(repo, merged=5)
    r = liza(repo, "verify", agent=None)
    assert r.returncode == 4 and bad[:12] in r.stderr
