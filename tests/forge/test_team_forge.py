"""Issue 50's "done when", with real processes: a team of scripted agents (two coders, a reviewer:
`git liza agent` supervisors) and the bridge (`git liza forge sync`) against the stand-in GitHub
through Prism's validating proxy, the test acting as the world (CI's checks, a human's review):

- every task gets exactly one pull request, and every request the bridge made validates (0 errors
  in Prism's log), the bridge killed and started again in the middle of the run;
- a failing required check sends its task back to its coder as an integration failure carrying
  the check's name, conclusion and log URL; a human's "request changes" is a rejection by the
  human; the team then merges every task, and the goal completes;
- the forge unreachable for a minute stops nothing: the team merges everything meanwhile, and the
  bridge catches up when the forge is back (one pull request per task, closed)."""
from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from gitliza.services.api import Liza
from tests.cli.test_board import liza, ok
from tests.forge.standin import StandIn
from tests.forge.test_bridge_standin import forge_env, setup_forge, sync_once
from tests.team.procs import BIN, Sup, add_task, env_for, make_board, script, until

pytestmark = pytest.mark.slow

# A new commit at every iteration: a task sent back is fixed by a new commit, as a coder would.
WORK = """test -n "$LIZA_TASK_ID" && test "$(pwd)" = "$LIZA_WORKTREE"
echo "$LIZA_TASK_ID $(date +%s%N)" >> "$LIZA_TASK_ID.txt"
git add "$LIZA_TASK_ID.txt"
git commit -q -m "implement $LIZA_TASK_ID"
git liza submit "$LIZA_TASK_ID"
"""
APPROVE = """test "$(git rev-parse HEAD)" = "$LIZA_REVIEW_COMMIT"
git liza verdict "$LIZA_TASK_ID" approve --commit "$LIZA_REVIEW_COMMIT"
"""
TASKS = ("t1", "t2", "t3")
TEAM_WAIT = 240.0


class Bridge:
    """`git liza forge sync` as its own process."""

    def __init__(self, repo: Path, s: StandIn) -> None:
        self.log = repo.parent / f"bridge-{time.monotonic_ns()}.log"
        self.out = open(self.log, "w")
        self.proc = subprocess.Popen([str(BIN / "git-liza"), "forge", "sync", "--interval", "1"],
                                     cwd=repo, env={**env_for(None), **forge_env(s)},
                                     stdout=self.out, stderr=subprocess.STDOUT, text=True)

    def kill(self) -> str:
        self.proc.kill()
        self.proc.wait(30)
        self.out.close()
        return self.log.read_text()


class World(threading.Thread):
    """CI and a human on the forge: acts on what the board shows, every few tenths of a second."""

    def __init__(self, repo: Path, act: Callable[[Any], None]) -> None:
        super().__init__(daemon=True)
        self.repo, self.act, self.stop = repo, act, threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        liza_ = Liza.open(self.repo)
        try:
            while not self.stop.wait(0.3):
                self.act(liza_.board())
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.error = e


def team(repo: Path, tmp_path: Path) -> list[Sup]:
    work = str(script(tmp_path, "work.sh", WORK))
    review = str(script(tmp_path, "review.sh", APPROVE))
    return [Sup(repo, "coder", "coder-1", "--", work), Sup(repo, "coder", "coder-2", "--", work),
            Sup(repo, "code-reviewer", "reviewer-1", "--", review)]


def all_merged(repo: Path) -> bool:
    board = Liza.open(repo).board()
    return all((board.task(t) or board.get("archive", t)).status == "MERGED" for t in TASKS)


def history(repo: Path, task: str) -> Any:
    board = Liza.open(repo).board()
    return (board.task(task) or board.get("archive", task)).history


def test_a_team_with_the_bridge_checks_and_a_human_review(
        repo: Path, tmp_path: Path, github_standin: StandIn) -> None:
    s = github_standin
    make_board(repo)
    setup_forge(repo, s, forge_required_checks="ci/test")
    for t in TASKS:
        add_task(repo, t)
    acted: dict[tuple[str, str], str] = {}

    def act(board: Any) -> None:
        for t in board.tasks():
            if t.status != "APPROVED" or t.forge_pr is None or t.checks_passed:
                continue
            key = (t.id, str(t.review_commit))
            if key in acted:
                continue
            if t.id == "t3" and not any(h.event == "rejected" for h in t.history):
                s.add_review(t.forge_pr, "CHANGES_REQUESTED", "Please say hello too.",
                             comments=[("t3.txt", 1, "and greet the reader")])
                acted[key] = "review"
            elif t.id == "t2" and not any(h.event == "integration_failed" for h in t.history):
                s.add_check_run(str(t.review_commit), "ci/test", conclusion="failure",
                                details_url="https://ci.example/runs/2")
                acted[key] = "failure"
            else:
                s.add_check_run(str(t.review_commit), "ci/test", conclusion="success",
                                details_url="https://ci.example/runs/ok")
                acted[key] = "success"
    world = World(repo, act)
    bridge = Bridge(repo, s)
    sups = team(repo, tmp_path)
    world.start()
    logs = []
    try:
        until(lambda: sum(1 for p in s.pulls()) >= 1, "a first pull request", TEAM_WAIT)
        logs.append(bridge.kill())  # a restart in the middle of the run
        bridge = Bridge(repo, s)
        until(lambda: all_merged(repo) or world.error is not None, "every task merged", TEAM_WAIT)
        until(lambda: all(p["state"] == "closed" for p in s.pulls()), "the PRs closed", TEAM_WAIT)
    finally:
        world.stop.set()
        logs.append(bridge.kill())
        for sup in sups:
            sup.kill()
    assert world.error is None, world.error
    heads = sorted(p["head"]["ref"] for p in s.pulls())
    assert heads == [f"liza/{t}" for t in TASKS], (heads, logs)  # exactly one each
    assert all(not p["draft"] for p in s.pulls())  # each was approved: out of draft
    t2 = history(repo, "t2")
    failed = [h for h in t2 if h.event == "integration_failed"]
    assert len(failed) == 1 and "'ci/test'" in failed[0].reason and "failure" in failed[0].reason
    assert "https://ci.example/runs/2" in failed[0].reason
    t3 = history(repo, "t3")
    rejected = [h for h in t3 if h.event == "rejected"]
    assert len(rejected) == 1 and rejected[0].agent == "human"
    assert "Please say hello too." in rejected[0].reason and "t3.txt:1" in rejected[0].reason
    assert s.validation_errors() == [], s.validation_errors()
    ok(liza(repo, "verify", agent=None))
    ok(liza(repo, "complete-goal", agent=None))  # every task merged: the goal completes
    assert Liza.open(repo).board().goal.status == "COMPLETED"
    n = len(s.requests())
    print(f"requests: {n} for {len(TASKS)} tasks ({n / len(TASKS):.1f} per task)")


def test_the_forge_down_for_a_minute_stops_nothing(
        repo: Path, tmp_path: Path, github_standin: StandIn) -> None:
    s = github_standin
    make_board(repo)
    setup_forge(repo, s)
    s.down(60)
    started = time.monotonic()
    for t in TASKS:
        add_task(repo, t)
    bridge = Bridge(repo, s)
    sups = team(repo, tmp_path)
    log = ""
    try:
        until(lambda: all_merged(repo), "every task merged while the forge is down", TEAM_WAIT)
        merged_at = time.monotonic() - started
        assert s.pulls() == [] and merged_at < 60  # the board went on without the forge
        until(lambda: len(s.pulls()) == len(TASKS) and
              all(p["state"] == "closed" for p in s.pulls()),
              "the bridge caught up", TEAM_WAIT)
    finally:
        log = bridge.kill()
        for sup in sups:
            sup.kill()
        print(log)
    assert "unreachable" in log, log
    board = Liza.open(repo).board()
    assert sorted(board.get("archive", t).forge_pr for t in TASKS) == \
        sorted(p["number"] for p in s.pulls())
    assert s.validation_errors() == [], s.validation_errors()


class TeamProc:
    """`git liza team` as the only process: its members and, the board naming a forge, the
    bridge (gitliza/forge/run.py)."""

    def __init__(self, repo: Path, tmp_path: Path, env: dict[str, str]) -> None:
        role = script(tmp_path, "role.sh", 'case "$LIZA_ROLE" in\ncoder)\n' + WORK +
                      ';;\ncode-reviewer)\n' + APPROVE + ';;\n*) exit 1 ;;\nesac\n')
        self.log = repo.parent / f"team-{time.monotonic_ns()}.log"
        self.out = open(self.log, "w")
        self.proc = subprocess.Popen(
            [str(BIN / "git-liza"), "team", "--planners", "0", "--coders", "2", "--reviewers", "1",
             "--", "sh", str(role)], cwd=repo, env={**env_for(None), **env},
            stdout=self.out, stderr=subprocess.STDOUT, text=True)

    def text(self) -> str:
        return self.log.read_text()

    def stop(self) -> str:
        import signal
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
        self.out.close()
        return self.text()


def test_the_team_runs_the_bridge_itself(
        repo: Path, tmp_path: Path, github_standin: StandIn) -> None:
    """Only `git liza team` is started: the pull requests come all the same, one per task, the
    required check gating each merge; while it runs, a `forge sync` of the same clone is refused
    (one bridge per clone); with the team stopped, the clone's lock is free again."""
    s = github_standin
    make_board(repo)
    setup_forge(repo, s, forge_required_checks="ci/test")
    subprocess.run(["git", "config", "liza.forgeInterval", "1"], cwd=repo, check=True)
    for t in TASKS:
        add_task(repo, t)
    passed: set[str] = set()

    def act(board: Any) -> None:  # CI: the check passes on each approved commit
        for t in board.tasks():
            if t.status == "APPROVED" and t.forge_pr is not None and \
                    str(t.review_commit) not in passed:
                s.add_check_run(str(t.review_commit), "ci/test", conclusion="success")
                passed.add(str(t.review_commit))
    world = World(repo, act)
    team_ = TeamProc(repo, tmp_path, forge_env(s))
    world.start()
    second = None
    try:
        until(lambda: len(s.pulls()) >= 1, lambda: "a first pull request: " + team_.text(),
              TEAM_WAIT)
        second = liza(repo, "forge", "sync", "--once", agent=None, env=forge_env(s))
        until(lambda: all_merged(repo) or world.error is not None,
              lambda: "every task merged: " + team_.text(), TEAM_WAIT)
        until(lambda: all(p["state"] == "closed" for p in s.pulls()),
              lambda: "the PRs closed: " + team_.text(), TEAM_WAIT)
    finally:
        world.stop.set()
        out = team_.stop()
    assert world.error is None, world.error
    assert second.returncode == 1 and "another bridge runs" in second.stderr, second
    heads = sorted(p["head"]["ref"] for p in s.pulls())
    assert heads == [f"liza/{t}" for t in TASKS], (heads, out)  # exactly one each
    assert "team: forge: bridge for" in out and "opened pull request" in out, out
    board = Liza.open(repo).board()
    assert all(board.get("archive", t).checks_passed for t in TASKS)  # the check gated each
    assert s.validation_errors() == [], s.validation_errors()
    # The team stopped: its bridge let the clone's lock go.
    assert sync_once(repo, s).returncode == 0


def test_the_team_waits_for_a_running_bridge_and_takes_over(
        repo: Path, tmp_path: Path, github_standin: StandIn) -> None:
    """A `forge sync` already runs: the team starts no second bridge (says so once); when that
    one stops, the team's takes over and every task still gets exactly one pull request."""
    s = github_standin
    make_board(repo)
    setup_forge(repo, s)
    subprocess.run(["git", "config", "liza.forgeInterval", "1"], cwd=repo, check=True)
    for t in TASKS:
        add_task(repo, t)
    bridge = Bridge(repo, s)
    until(lambda: "bridge for" in bridge.log.read_text(), "the bridge started", TEAM_WAIT)
    team_ = TeamProc(repo, tmp_path, forge_env(s))
    try:
        until(lambda: "another bridge runs" in team_.text(), lambda: team_.text(), TEAM_WAIT)
        until(lambda: len(s.pulls()) >= 1, "a first pull request", TEAM_WAIT)
        first = bridge.kill()
        until(lambda: all_merged(repo), lambda: "every task merged: " + team_.text(), TEAM_WAIT)
        until(lambda: len(s.pulls()) == len(TASKS) and
              all(p["state"] == "closed" for p in s.pulls()),
              lambda: "the team's bridge caught up: " + team_.text(), TEAM_WAIT)
    finally:
        bridge.kill() if not bridge.out.closed else None
        out = team_.stop()
    assert out.count("another bridge runs") == 1, out
    assert "team: forge: bridge for" in out, (first, out)  # took over
    heads = sorted(p["head"]["ref"] for p in s.pulls())
    assert heads == [f"liza/{t}" for t in TASKS], (heads, first, out)
    assert s.validation_errors() == [], s.validation_errors()


def test_the_team_goes_on_without_a_token(repo: Path, tmp_path: Path,
                                          github_standin: StandIn) -> None:
    """No token anywhere: one line in the team's output, and the team merges everything."""
    s = github_standin
    make_board(repo)
    setup_forge(repo, s)
    for t in TASKS:
        add_task(repo, t)
    env = {k: v for k, v in forge_env(s).items() if k != "GITHUB_TOKEN"}
    team_ = TeamProc(repo, tmp_path, {**env, "GITHUB_TOKEN": ""})
    try:
        until(lambda: all_merged(repo), lambda: "every task merged: " + team_.text(), TEAM_WAIT)
    finally:
        out = team_.stop()
    lines = [x for x in out.splitlines() if "without the bridge" in x]
    assert len(lines) == 1 and "no forge token" in lines[0], out
    assert s.pulls() == []
