"""`.liza/state.yaml` and `.liza/log.yaml` materialized from refs/liza/state, in real repositories:
the spec's shape, the log's one entry per commit, the cache, the incremental log, `--at`, and the
safety rules (no write through a symlinked `.liza`, `.liza/` ignored, a clean main worktree)."""
from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pygit2
import pytest
from ruamel.yaml import YAML

from gitliza.services.api import Liza
from gitliza.core import clock
from gitliza.core.encoding import yamlview
from gitliza.core.ops import (Abandon, Add, Claim, ClaimReview, Init, Merge, Register, Submit,
                              Verdict)
from gitliza.core.ops.journal import Note
from gitliza.core.ops.goal import ConfigSet
from gitliza.core.ops.planning import Edit
from gitliza.errors import ValidationError
from gitliza.git.store import Store
from gitliza.services.views.materialize import main_worktree, materialize
from tests.conftest import git

VENV_BIN = str(Path(sys.executable).parent)
STATE = "refs/liza/state"
SPEC_TOP = ["version", "goal", "tasks", "agents", "discovered", "handoff", "human_notes",
            "spec_changes", "anomalies", "sprint", "circuit_breaker", "config"]


def _clock() -> Callable[[], str]:
    """Ten seconds per op from a fixed start: distinct, ordered, reproducible timestamps."""
    ticks = itertools.count()
    start = clock.to_epoch("2025-01-17T14:00:00Z")
    return lambda: clock.from_epoch(start + 10 * next(ticks))


def _as(repo: Path, agent: str, now: Callable[[], str]) -> Liza:
    return Liza.open(repo, agent, now=now, sync=False)


@pytest.fixture
def board(repo: Path) -> Path:
    """A small lifecycle: t1 rejected once, then approved and merged; t2 DRAFT; t3 CLAIMED."""
    now = _clock()
    sha = git(repo, "rev-parse", "HEAD")
    human, planner = _as(repo, "human", now), _as(repo, "planner-1", now)
    coder, reviewer = _as(repo, "coder-1", now), _as(repo, "rev-1", now)
    human.do(Init, goal="Retry logic for all API calls")
    for agent, role in (("planner-1", "planner"), ("coder-1", "coder"), ("rev-1", "code_reviewer")):
        human.do(Register, agent=agent, role=role)
    planner.do(Add, task="t1", description="retry get_user", spec_ref="specs/r.md",
               done_when="retries 3x", scope="UserAPI", priority=1, ready=True)
    planner.do(Add, task="t2", description="retry orders", depends_on=("t1",))
    planner.do(Add, task="t3", description="rate limits", spec_ref="specs/r.md#rl",
               done_when="429 honoured", scope="client", ready=True)
    coder.do(Claim, task="t1", worktree=".worktrees/t1", base_commit=sha)
    coder.do(Submit, task="t1", commit=sha)
    reviewer.do(ClaimReview, task="t1")
    reviewer.do(Verdict, task="t1", verdict="reject", commit=sha, reason="no tests\nat all")
    coder.do(Claim, task="t1", worktree=".worktrees/t1", base_commit=sha)
    coder.do(Submit, task="t1", commit=sha)
    reviewer.do(ClaimReview, task="t1")
    reviewer.do(Verdict, task="t1", verdict="approve", commit=sha)
    reviewer.do(Merge, task="t1", result="merged", merge_commit=sha)
    coder.do(Claim, task="t3", worktree=".worktrees/t3", base_commit=sha)
    human.do(Note, message="Consider src/utils/retry.py", for_task="t3")
    return repo


def _load(path: Path) -> Any:
    return YAML(typ="rt").load(path.read_text())


def _mat(repo: Path, at: str | None = None) -> Any:
    return materialize(Store.discover(repo), at)


def _commits(repo: Path, rev: str = STATE) -> int:
    return int(git(repo, "rev-list", "--count", rev))


def _mtimes(liza: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in liza.iterdir()}


def test_state_yaml_has_the_spec_shape(board: Path) -> None:
    done = _mat(board)
    assert not done.cached and done.log_rewritten
    text = (board / ".liza" / "state.yaml").read_text()
    state = _load(board / ".liza" / "state.yaml")
    assert list(state) == SPEC_TOP
    assert state["version"] == 1
    assert state["goal"]["id"] == "goal-1" and state["goal"]["status"] == "IN_PROGRESS"
    assert isinstance(state["goal"]["created"], str)  # quoted: a string for every reader
    assert f'created: "{state["goal"]["created"]}"' in text
    assert done.state in text.splitlines()[0]

    tasks = {t["id"]: t for t in state["tasks"]}
    # Live tasks in state-machine order, then priority, then the merged task: it is archived,
    # and listed too, since it ended less than config.archive_after ago and t2 depends on it.
    assert [t["id"] for t in state["tasks"]] == ["t2", "t3", "t1"]
    assert sorted(p.name for p in (board / ".liza" / "archive").iterdir()) == [
        ".index.json", "t1.yaml"]
    t1 = _load(board / ".liza" / "archive" / "t1.yaml")
    t2, t3 = tasks["t2"], tasks["t3"]
    assert list(t1)[:4] == ["id", "description", "status", "priority"]
    assert list(t1)[-2:] == ["created", "history"]
    assert t1["status"] == "MERGED" and t1["worktree"] is None and "worktree" in t1
    assert t1["merge_commit"] == git(board, "rev-parse", "HEAD")
    assert [h["event"] for h in t1["history"]] == [
        "created", "claimed", "ready_for_review", "review_claimed", "rejected", "claimed",
        "ready_for_review", "review_claimed", "approved", "merged"]
    assert t1["review_cycles_total"] == 1 and t1["rejection_reason"] == "no tests\nat all"
    assert "{time: " in text or "{ time: " in text  # history entries inline, as in the spec
    assert t2["status"] == "DRAFT" and "worktree" in t2 and t2["worktree"] is None
    assert t2["depends_on"] == ["t1"] and "assigned_to" not in t2
    assert t3["status"] == "CLAIMED"
    for key in ("assigned_to", "worktree", "base_commit", "lease_expires", "iteration",
                "spec_ref", "done_when", "handoff_pending"):
        assert key in t3, key
    assert t3["assigned_to"] == "coder-1" and t3["iteration"] == 1
    assert t3["handoff_pending"] is False and "review_cycles_current" not in t3

    agents = state["agents"]
    assert set(agents) == {"planner-1", "coder-1", "rev-1"}
    assert "id" not in agents["coder-1"]
    assert agents["coder-1"]["status"] == "WORKING" and agents["coder-1"]["current_task"] == "t3"
    assert agents["coder-1"]["iterations_total"] == 3
    assert agents["rev-1"]["current_task"] is None and "iterations_total" not in agents["rev-1"]

    assert state["human_notes"][0]["for"] == "t3"
    assert state["discovered"] == [] and state["handoff"] == {}
    assert state["config"]["escalation_webhook"] is None
    assert state["circuit_breaker"]["status"] == "OK"
    sprint = state["sprint"]
    assert list(sprint) == ["id", "goal_ref", "scope", "timeline", "status", "metrics",
                            "retrospective"]
    assert sprint["timeline"]["ended"] is None and sprint["retrospective"] is None
    assert dict(sprint["metrics"]) == {
        "tasks_done": 1, "tasks_in_progress": 1, "tasks_blocked": 0, "iterations_total": 3,
        "review_cycles_total": 1, "review_verdict_approvals": 1, "review_verdict_rejections": 1,
        "review_verdict_count": 2, "review_verdict_approval_rate_percent": 50,
        "task_submitted_for_review_count": 2, "task_outcome_approval_rate_percent": 50}


def test_log_yaml_one_entry_per_commit(board: Path) -> None:
    _mat(board)
    log = _load(board / ".liza" / "log.yaml")
    assert len(log) == _commits(board)
    assert [e["action"] for e in log] == [
        "goal_created", "agent_registered", "agent_registered", "agent_registered",
        "task_created", "task_created", "task_created", "claimed", "ready_for_review",
        "review_claimed", "rejected", "claimed", "ready_for_review", "review_claimed",
        "approved", "merged", "claimed", "human_note"]
    times = [e["timestamp"] for e in log]
    assert times == sorted(times) and all(isinstance(t, str) for t in times)
    for e in log:
        keys = list(e)
        assert keys in (["timestamp", "agent", "action", "detail"],
                        ["timestamp", "agent", "action", "task", "detail"]), keys
        assert e["detail"] and "\n" not in e["detail"]
    assert "task" not in log[0] and log[0]["agent"] == "human"
    # detail: what happened, as the seed's log shows it (not the commit subject).
    assert log[7] == {"timestamp": log[7]["timestamp"], "agent": "coder-1", "action": "claimed",
                      "task": "t1", "detail": "iteration 1: retry get_user"}
    assert log[0]["detail"] == "Retry logic for all API calls"
    assert log[8]["detail"].startswith("Iteration 1, commit ")
    assert log[10]["detail"] == "no tests at all"  # the reviewer's reason, on one line
    assert log[15]["detail"].startswith("merged ") and log[-1]["detail"] == "Consider src/utils/retry.py"
    first = git(board, "log", "--reverse", "--format=%(trailers:key=Liza-Time,valueonly)", STATE)
    assert log[0]["timestamp"] == first.splitlines()[0].strip()


def test_second_run_is_cached_and_writes_nothing(board: Path) -> None:
    _mat(board)
    liza = board / ".liza"
    before = _mtimes(liza)
    again = _mat(board)
    assert again.cached and again.log_appended == 0
    assert _mtimes(liza) == before
    stamp = json.loads((liza / ".materialized").read_text())
    assert stamp["state"] == git(board, "rev-parse", STATE) == again.state


def test_log_is_appended_incrementally(board: Path) -> None:
    _mat(board)
    log_path = board / ".liza" / "log.yaml"
    old = log_path.read_bytes()
    _as(board, "human", lambda: "2025-02-01T00:00:00Z").do(Note, message="second note")
    done = _mat(board)
    assert not done.cached and not done.log_rewritten and done.log_appended == 1
    new = log_path.read_bytes()
    assert new.startswith(old)  # old entries untouched, byte for byte
    log = _load(log_path)
    assert len(log) == _commits(board) == done.log_entries
    assert log[-1]["action"] == "human_note" and log[-1]["timestamp"] == "2025-02-01T00:00:00Z"


def test_at_a_past_revision_then_catching_up(board: Path) -> None:
    past = _mat(board, f"{STATE}~3")
    assert past.state == git(board, "rev-parse", f"{STATE}~3")
    state = _load(board / ".liza" / "state.yaml")
    assert {t["id"]: t["status"] for t in state["tasks"]}["t1"] == "APPROVED"
    assert len(_load(board / ".liza" / "log.yaml")) == _commits(board) - 3
    tip = _mat(board)
    assert tip.log_appended == 3 and not tip.log_rewritten
    incremental = (board / ".liza" / "log.yaml").read_text()
    (board / ".liza" / ".materialized").unlink()  # forget the cache: a full rewrite
    full = _mat(board)
    assert full.log_rewritten and (board / ".liza" / "log.yaml").read_text() == incremental


def test_edited_files_are_rebuilt(board: Path) -> None:
    _mat(board)
    log_path = board / ".liza" / "log.yaml"
    log_path.write_text("- garbage\n")
    done = _mat(board)
    assert not done.cached and done.log_rewritten
    assert len(_load(log_path)) == _commits(board)
    (board / ".liza" / "state.yaml").unlink()
    again = _mat(board)
    assert not again.cached and not again.log_rewritten and again.log_appended == 0
    assert _load(board / ".liza" / "state.yaml")["version"] == 1


def test_symlinked_liza_dir_is_refused(board: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (board / ".liza").symlink_to(outside)
    with pytest.raises(ValidationError, match="symlink"):
        _mat(board)
    assert list(outside.iterdir()) == []
    r = _cli(board, "materialize")
    assert r.returncode == 1 and "symlink" in r.stderr and len(r.stderr.splitlines()) == 1
    assert list(outside.iterdir()) == []


def test_liza_file_not_directory_is_refused(board: Path) -> None:
    (board / ".liza").write_text("not a dir")
    with pytest.raises(ValidationError, match="not a directory"):
        _mat(board)


def test_exclude_line_added_once_and_main_worktree_stays_clean(board: Path) -> None:
    exclude = Path(git(board, "rev-parse", "--git-common-dir"))
    exclude = (exclude if exclude.is_absolute() else board / exclude) / "info" / "exclude"
    _mat(board)
    _as(board, "human", lambda: "2025-02-01T00:00:00Z").do(Note, message="more")
    _mat(board)
    (board / ".liza" / ".materialized").unlink()
    _mat(board)
    lines = exclude.read_text().splitlines()
    assert lines.count("/.liza/") == 1
    assert git(board, "status", "--porcelain", "--untracked-files=all") == ""


def test_existing_exclude_entry_is_respected(board: Path) -> None:
    exclude = board / ".git" / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    exclude.write_text("*.log\n.liza/")  # no trailing newline, no leading slash
    _mat(board)
    assert exclude.read_text() == "*.log\n.liza/"


def test_from_a_task_worktree_writes_into_the_main_worktree(board: Path, tmp_path: Path) -> None:
    wt = tmp_path / "wt-t3"  # outside: .worktrees/ exclusion is the lifecycle's business
    git(board, "worktree", "add", "-q", "-b", "liza/t3", str(wt))
    assert main_worktree(pygit2.Repository(str(wt))) == board.resolve()
    _mat(wt)
    assert (board / ".liza" / "state.yaml").is_file() and not (wt / ".liza").exists()
    assert git(wt, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(board, "status", "--porcelain", "--untracked-files=all") == ""


def test_no_board_and_bare_repository(repo: Path, bare: Path) -> None:
    with pytest.raises(ValidationError, match="no board"):
        _mat(repo)
    assert not (repo / ".liza").exists()
    with pytest.raises(ValidationError, match="bare"):
        main_worktree(pygit2.Repository(str(bare)))


# -- the command line ----------------------------------------------------------------------------
def _cli(repo: Path, *args: str, agent: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": VENV_BIN + os.pathsep + os.environ.get("PATH", "")}
    env.pop("LIZA_AGENT_ID", None)
    if agent:
        env["LIZA_AGENT_ID"] = agent
    return subprocess.run(["git", "liza", *args], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=60)


def test_cli_materialize(board: Path) -> None:
    r = _cli(board, "materialize", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["state"] == git(board, "rev-parse", STATE) and out["cached"] is False
    assert out["log_entries"] == _commits(board)
    r = _cli(board, "materialize", "--json")
    assert json.loads(r.stdout)["cached"] is True
    r = _cli(board, "materialize", "--at", f"{STATE}~1")
    assert r.returncode == 0 and "state.yaml" in r.stdout
    r = _cli(board, "materialize", "--at", "no-such-rev")
    assert r.returncode == 1 and "no state revision" in r.stderr


def test_config_materializes_after_every_command(board: Path) -> None:
    r = _cli(board, "note", "no view yet")
    assert r.returncode == 0, r.stderr
    assert not (board / ".liza").exists()  # off by default
    git(board, "config", "liza.materialize", "true")
    r = _cli(board, "note", "now with a view")
    assert r.returncode == 0, r.stderr
    stamp = json.loads((board / ".liza" / ".materialized").read_text())
    assert stamp["state"] == git(board, "rev-parse", STATE)
    assert _load(board / ".liza" / "log.yaml")[-1]["detail"] == "now with a view"
    assert git(board, "status", "--porcelain") == ""


def test_without_config_the_materializer_is_not_imported(board: Path) -> None:
    code = ("import sys; from pathlib import Path; from gitliza.cli.commands import Env; "
            f"e = Env(path=Path({str(board)!r})); liza = e.liza(); "
            "print(len(liza.after_commit), 'gitliza.services.views.materialize' in sys.modules, "
            "'ruamel.yaml' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["0", "False", "False"]


# -- the pure shaping ----------------------------------------------------------------------------
@pytest.mark.parametrize("op,src,dst,word", [
    ("init", None, None, "goal_created"),
    ("claim", "UNCLAIMED", "CLAIMED", "claimed"),
    ("claim", "CLAIMED", "CLAIMED", "reclaimed"),
    ("claim", "REJECTED", "BLOCKED", "blocked"),
    ("submit", "CLAIMED", "READY_FOR_REVIEW", "ready_for_review"),
    ("verdict", "READY_FOR_REVIEW", "APPROVED", "approved"),
    ("verdict", "READY_FOR_REVIEW", "REJECTED", "rejected"),
    ("merge", "APPROVED", "MERGED", "merged"),
    ("merge", "APPROVED", "INTEGRATION_FAILED", "integration_failed"),
    ("rescope", "UNCLAIMED", "SUPERSEDED", "rescoped"),
    ("some-new-op", None, None, "some_new_op"),
])
def test_action_words(op: str, src: str | None, dst: str | None, word: str) -> None:
    assert yamlview.action_of(op, dst, src) == word


def test_log_entry_detail_is_one_line() -> None:
    e = yamlview.log_entry({"Liza-Time": "2025-01-17T14:00:00Z", "Liza-Actor": "a",
                            "Liza-Op": "note"}, "a\n  multi   line\tsubject")
    assert e == {"timestamp": "2025-01-17T14:00:00Z", "agent": "a", "action": "human_note",
                 "detail": "a multi line subject"}


def test_archive_files_follow_the_board(board: Path) -> None:
    """Archived tasks live in .liza/archive/<id>.yaml; a run writes only the ones that changed and
    removes the ones a rewritten history no longer archives."""
    first = _mat(board)
    assert first.archive_written == 1
    arch = board / ".liza" / "archive"
    before = (arch / "t1.yaml").stat().st_mtime_ns
    now = lambda: "2025-02-01T00:00:00Z"  # noqa: E731
    _as(board, "planner-1", now).do(Abandon, task="t2", reason="not needed")
    done = _mat(board)
    assert (done.archive_written, done.archive_removed) == (1, 0)
    assert (arch / "t1.yaml").stat().st_mtime_ns == before  # untouched
    t2 = _load(arch / "t2.yaml")
    assert t2["status"] == "ABANDONED" and t2["abandon_reason"] == "not needed"
    # t2 ended just now (listed until archive_after passes); t1 ended days before this state
    # and nothing live names it any more: archive/ only.
    assert [t["id"] for t in _load(board / ".liza" / "state.yaml")["tasks"]] == ["t3", "t2"]
    assert _mat(board).cached
    # A rewritten history (as a sync can make): back before t1 merged, the files follow.
    past = _mat(board, f"{STATE}~5")
    assert past.archive_removed == 2 and not any(arch.glob("*.yaml"))
    assert {t["id"] for t in _load(board / ".liza" / "state.yaml")["tasks"]} == {"t1", "t2", "t3"}


def test_terminal_tasks_leave_state_yaml_after_the_threshold_unless_referenced(
        board: Path) -> None:
    """blackboard-schema.md: archive/ holds terminal tasks older than a threshold (config
    archive_after, a day by default); a task a live entry names stays in state.yaml, so that
    liza-validate.sh finds every task that depends_on names."""
    ended = Liza.open(board, sync=False).board().get("archive", "t1").history[-1].time
    two_hours = lambda: clock.plus(ended, 7200)  # noqa: E731
    human = _as(board, "human", two_hours)
    human.do(Edit, task="t2", clear_depends_on=True)  # nothing live names t1 any more
    _mat(board)
    assert [t["id"] for t in _load(board / ".liza" / "state.yaml")["tasks"]] == ["t2", "t3", "t1"]
    human.do(ConfigSet, key="archive_after", value="3600")
    _mat(board)
    assert [t["id"] for t in _load(board / ".liza" / "state.yaml")["tasks"]] == ["t2", "t3"]
    assert (board / ".liza" / "archive" / "t1.yaml").is_file()
    # A fresh materialization (no stamp) finds the same; a live dependency keeps it, whatever
    # its age.
    (board / ".liza" / ".materialized").unlink()
    _mat(board)
    assert [t["id"] for t in _load(board / ".liza" / "state.yaml")["tasks"]] == ["t2", "t3"]
    human.do(Edit, task="t2", depends_on=("t1",))
    _mat(board)
    assert [t["id"] for t in _load(board / ".liza" / "state.yaml")["tasks"]] == ["t2", "t3", "t1"]
