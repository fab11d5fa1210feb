"""One team, three machines, one bare remote with the enforcing server hook (docs/multi-machine.md).

Planner on A, coder on B, reviewer on C: three real clones, every step a real `git liza`
subprocess with LIZA_AGENT_ID, auto-sync through `git config liza.remote origin`. The remote is a
path, or git:// through a real `git daemon` (tests/gitdaemon.py). The server's pre-receive hook
judges every push; a refused push would fail the command (exit 3), and every command must succeed
without a "not shared" warning.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gitliza.hooks.install import install
from tests.conftest import git
from tests.gitdaemon import GitDaemon, git_daemon  # noqa: F401  (the fixture)

pytestmark = pytest.mark.slow  # dozens of git and gitliza processes per test

PY = sys.executable
BIN = str(Path(PY).parent)
STATE = "refs/liza/state"


class Team:
    def __init__(self, tmp: Path, bare: Path, url: str) -> None:
        self.tmp, self.bare, self.url = tmp, bare, url
        self.trace = tmp / "hook-trace"

    def run(self, cwd: Path, *args: str, agent: str | None = None,
            ok: bool = True) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
               "GITLIZA_HOOK_TRACE": str(self.trace)}
        env.pop("LIZA_AGENT_ID", None)
        if agent:
            env["LIZA_AGENT_ID"] = agent
        r = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, env=env,
                           check=False, timeout=120)
        if ok:
            assert r.returncode == 0, f"{' '.join(args)} ({agent}): {r.stderr}"
            # Auto-sync warns instead of failing when it could not share: that must not happen.
            assert "not shared" not in r.stderr and "refused" not in r.stderr, r.stderr
        return r

    def liza(self, cwd: Path, *args: str, agent: str | None = None) -> str:
        return self.run(cwd, "git", "liza", *args, agent=agent).stdout

    def machine(self, name: str) -> Path:
        path = self.tmp / name
        git(self.tmp, "clone", "-q", self.url, str(path))
        git(path, "config", "liza.remote", "origin")
        return path

    def commit(self, worktree: Path, name: str, text: str, agent: str) -> str:
        (worktree / name).write_text(text)
        self.run(worktree, "git", "add", name, agent=agent)
        self.run(worktree, "git", "commit", "-q", "-m", f"{name}: {text.strip()}", agent=agent)
        return git(worktree, "rev-parse", "HEAD")


def remote_ref(path: Path, ref: str) -> str | None:
    return git(path, "for-each-ref", "--format=%(objectname)", ref) or None


def contains(path: Path, tip: str, commit: str) -> bool:
    return subprocess.run(["git", "merge-base", "--is-ancestor", commit, tip], cwd=path,
                          check=False).returncode == 0


def make_team(tmp: Path, bare: Path, url: str) -> tuple[Team, Path, Path, Path]:
    """The server hook on `bare`; A (planner) creates the project and the board; B and C join."""
    install(bare, server=True, python=PY)
    team = Team(tmp, bare, url)
    a = team.machine("a")
    (a / "README.md").write_text("project\n")
    (a / "spec.md").write_text("the spec\n")
    git(a, "add", "README.md", "spec.md")
    git(a, "commit", "-q", "-m", "initial")
    team.run(a, "git", "push", "-q", "origin", "main")
    team.liza(a, "init", "ship it")  # auto-sync: the board reaches the remote at once
    for agent, role in (("planner-1", "planner"), ("coder-1", "coder"),
                        ("rev-1", "code_reviewer")):
        team.liza(a, "register", agent, "--role", role)
    for tid in ("t1", "t2"):
        team.liza(a, "add", tid, "--desc", f"build {tid}", "--spec-ref", "spec.md",
                  "--done-when", "tests pass", "--scope", "src", "--ready", agent="planner-1")
    # The integration branch travelled with the board (created by the sync, judged by the hook).
    assert remote_ref(bare, "refs/heads/integration") == git(a, "rev-parse", "main")
    b, c = team.machine("b"), team.machine("c")
    team.liza(b, "pull")  # a new machine: `git clone` does not bring the board
    team.liza(c, "pull")
    return team, a, b, c


@pytest.fixture(params=["path", "daemon"])
def team(request: pytest.FixtureRequest, tmp_path: Path,
         monkeypatch: pytest.MonkeyPatch) -> tuple[Team, Path, Path, Path]:
    # Set before the daemon starts: its receive-pack (and so the server hook) inherits it.
    monkeypatch.setenv("GITLIZA_HOOK_TRACE", str(tmp_path / "hook-trace"))
    if request.param == "path":
        bare = tmp_path / "remote.git"
        git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
        return make_team(tmp_path, bare, str(bare))
    daemon: GitDaemon = request.getfixturevalue("git_daemon")
    bare = daemon.init_bare("remote.git")
    return make_team(tmp_path, bare, daemon.url("remote.git"))


def claim(team: Team, machine: Path, task: str) -> dict[str, object]:
    out = team.liza(machine, "claim", task, "--json", agent="coder-1")
    data: dict[str, object] = json.loads(out)
    return data


def test_whole_lifecycle_across_three_machines(team: tuple[Team, Path, Path, Path]) -> None:
    tm, a, b, c = team
    bare = tm.bare
    integ0 = remote_ref(bare, "refs/heads/integration")
    # B claims and works; its worktree starts at the team's integration tip.
    got = claim(tm, b, "t1")
    assert got["base_commit"] == integ0
    wt_b = b / ".worktrees" / "t1"
    first = tm.commit(wt_b, "feature.txt", "first try\n", "coder-1")
    tm.liza(b, "submit", "t1", agent="coder-1")
    # The submit's auto-sync pushed the task branch with the board.
    assert remote_ref(bare, "refs/heads/liza/t1") == first

    # C has no worktree for t1: claim-review pulls, fetches the coder's commit, checks it out.
    tm.liza(c, "claim-review", "t1", agent="rev-1")
    wt_c = c / ".worktrees" / "t1"
    assert git(wt_c, "rev-parse", "HEAD") == first
    assert git(wt_c, "symbolic-ref", "HEAD") == "refs/heads/liza/t1"
    tm.liza(c, "verdict", "t1", "reject", "--reason", "needs a second line", agent="rev-1")

    # B claims again (its own worktree and commits are kept), fixes, submits.
    got = claim(tm, b, "t1")
    assert got["reused"] is True
    fixed = tm.commit(wt_b, "feature.txt", "first try\nsecond line\n", "coder-1")
    tm.liza(b, "submit", "t1", agent="coder-1")
    assert remote_ref(bare, "refs/heads/liza/t1") == fixed

    # C's worktree from round one moves to the new review commit; approve; merge on C.
    tm.liza(c, "claim-review", agent="rev-1")
    assert git(wt_c, "rev-parse", "HEAD") == fixed
    tm.liza(c, "verdict", "t1", "approve", agent="rev-1")
    tm.liza(c, "merge", "t1", agent="rev-1")

    # The remote's integration branch has the reviewed work (merged by C, accepted by the hook).
    integ = remote_ref(bare, "refs/heads/integration")
    assert integ is not None and integ != integ0 and contains(bare, integ, fixed)
    assert git(bare, "show", f"{integ}:feature.txt") == "first try\nsecond line"
    board = json.loads(tm.liza(c, "show", "t1", "--json"))
    assert json.dumps(board).count("MERGED") >= 1

    # Every machine converges: same board, same integration branch, and verify passes.
    for m in (a, b, c):
        tm.liza(m, "sync")
    for m in (a, b, c):
        tm.liza(m, "sync")
        tm.liza(m, "verify")
        assert git(m, "rev-parse", STATE) == remote_ref(bare, STATE)
        assert git(m, "rev-parse", "refs/heads/integration") == integ
    # The server hook ran on the pushes (and refused none: every command above exited 0).
    runs = [ln for ln in tm.trace.read_text().splitlines() if ln.startswith("pre-receive")]
    assert len(runs) >= 8


def test_claim_after_a_merge_elsewhere_branches_from_the_new_tip(
        team: tuple[Team, Path, Path, Path]) -> None:
    """A merges (as the human) while B still has the old integration branch: B's next claim
    branches from A's merge, not from its stale local tip."""
    tm, a, b, c = team
    bare = tm.bare
    claim(tm, b, "t1")
    work = tm.commit(b / ".worktrees" / "t1", "one.txt", "one\n", "coder-1")
    tm.liza(b, "submit", "t1", agent="coder-1")
    tm.liza(c, "claim-review", "t1", agent="rev-1")
    tm.liza(c, "verdict", "t1", "approve", agent="rev-1")
    stale = git(b, "rev-parse", "refs/heads/integration")
    tm.liza(a, "merge", "t1")  # A never had the coder's commit: merge fetches it
    merged = remote_ref(bare, "refs/heads/integration")
    assert merged is not None and merged != stale and contains(bare, merged, work)
    assert git(b, "rev-parse", "refs/heads/integration") == stale  # B has not synced
    got = claim(tm, b, "t2")
    assert got["base_commit"] == merged
    assert git(b, "rev-parse", "refs/heads/integration") == merged
    assert git(b / ".worktrees" / "t2", "rev-parse", "HEAD") == merged
    for m in (a, b, c):
        tm.liza(m, "sync")
    for m in (a, b, c):
        tm.liza(m, "verify")
        assert git(m, "rev-parse", STATE) == remote_ref(bare, STATE)
