"""The client hook shim decides in sh, without starting Python, when a commit concerns nothing of
gitliza's, and still hands everything else to hook-impl with the same stdin."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from gitliza.hooks import install
from tests.conftest import git

GIT_LIZA = str(Path(sys.executable).parent / "git-liza")


def _spy(tmp_path: Path) -> tuple[Path, Path]:
    """An interpreter that logs each hook it is started for, then runs the real one."""
    log = tmp_path / "python-starts.log"
    spy = tmp_path / "spy-python"
    spy.write_text(f'#!/bin/sh\necho "$5" >> {log}\nexec {sys.executable} "$@"\n')
    spy.chmod(0o755)
    return spy, log


def _starts(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def _liza(repo: Path, *args: str) -> None:
    env = dict(os.environ, LIZA_AGENT_ID="planner-1")
    r = subprocess.run([GIT_LIZA, *args], cwd=repo, capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 0, r.stderr


def _commit(repo: Path, msg: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", msg], cwd=repo,
                          capture_output=True, text=True, check=check, timeout=60)


def test_commit_on_an_ordinary_branch_starts_no_python(tmp_path: Path, repo: Path) -> None:
    _liza(repo, "init", "goal", "--integration-branch", "integration")
    spy, log = _spy(tmp_path)
    install.install(repo, python=str(spy))
    git(repo, "checkout", "-q", "-b", "feature")
    _commit(repo, "first")  # no cache yet: Python answers once and leaves it
    assert "reference-transaction" in _starts(log)
    assert (repo / ".git" / "gitliza-hooks.cache").read_text().split()[1] == "integration"
    before = _starts(log)
    _commit(repo, "second")
    _commit(repo, "third")
    assert _starts(log) == before  # decided in the shim

    # The board moves: gitliza's own writes keep the cache current, so still no Python.
    _liza(repo, "register", "planner-1", "--role", "planner")
    _commit(repo, "fourth")
    assert _starts(log) == before
    state = git(repo, "rev-parse", "refs/liza/state")
    assert (repo / ".git" / "gitliza-hooks.cache").read_text().split() == [state, "integration"]
    # A new integration branch is in the cache at once: a commit there is gitliza's business.
    _liza(repo, "config", "integration_branch", "feature")
    assert (repo / ".git" / "gitliza-hooks.cache").read_text().split()[1] == "feature"
    r = _commit(repo, "fifth", check=False)  # a commit made by hand on it: refused by Python
    assert len(_starts(log)) == len(before) + 1 and r.returncode != 0


def _warm(tmp_path: Path, repo: Path) -> Path:
    """A board, the hooks (spied on), a feature branch, and one commit that leaves the cache."""
    _liza(repo, "init", "goal", "--integration-branch", "integration")
    spy, log = _spy(tmp_path)
    install.install(repo, python=str(spy))
    git(repo, "checkout", "-q", "-b", "feature")
    _commit(repo, "warm the cache")
    return log


def test_what_concerns_gitliza_still_reaches_python(tmp_path: Path, repo: Path) -> None:
    log = _warm(tmp_path, repo)
    n = len(_starts(log))
    git(repo, "checkout", "-q", "integration")
    r = _commit(repo, "straight onto the integration branch", check=False)
    assert r.returncode != 0 and "integration" in r.stderr  # refused by hook-impl
    assert len(_starts(log)) > n
    n = len(_starts(log))
    git(repo, "checkout", "-q", "-b", "liza/task-9", "feature")
    r = _commit(repo, "in a task branch", check=False)
    assert r.returncode != 0 and "task-9" in r.stderr
    assert _starts(log)[n:] == ["reference-transaction"]  # the commit rule, checked there
    n = len(_starts(log))
    r = subprocess.run(["git", "update-ref", "refs/liza/state", "HEAD"], cwd=repo,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0  # a refs/liza/* line: Python judged it (and refused it)
    assert _starts(log)[n:] == ["reference-transaction"]


def test_no_board_no_python(tmp_path: Path, repo: Path) -> None:
    spy, log = _spy(tmp_path)
    install.install(repo, python=str(spy))
    _commit(repo, "a")
    git(repo, "checkout", "-q", "-b", "other")
    _commit(repo, "b")
    assert _starts(log) == []


def test_in_a_linked_worktree_the_shim_finds_the_common_dir(tmp_path: Path, repo: Path) -> None:
    log = _warm(tmp_path, repo)
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "side", str(wt))
    n = len(_starts(log))
    _commit(wt, "in the worktree")
    assert _starts(log)[n:] == []


def test_task_branches_reach_python_only_when_checked_out_here(tmp_path: Path, repo: Path) -> None:
    """The commit rule applies to the task branch checked out here: creating or moving another
    liza/* branch is decided in the shim."""
    log = _warm(tmp_path, repo)
    n = len(_starts(log))
    git(repo, "branch", "liza/task-1")
    git(repo, "branch", "-f", "liza/task-1", "HEAD~1")
    assert _starts(log)[n:] == []
    git(repo, "checkout", "-q", "liza/task-1")
    r = _commit(repo, "on the task branch", check=False)
    assert r.returncode != 0 and "belongs to no task on the board" in r.stderr
    assert _starts(log)[n:] == ["reference-transaction"]


def test_bypass_skips_the_check_with_a_warning(tmp_path: Path, repo: Path) -> None:
    log = _warm(tmp_path, repo)
    n = len(_starts(log))
    git(repo, "checkout", "-q", "-b", "liza/task-2")
    before = git(repo, "rev-parse", "HEAD")
    r = subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "bypass"], cwd=repo,
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, LIZA_SKIP_HOOKS="1"))
    assert r.returncode == 0, r.stderr
    assert "LIZA_SKIP_HOOKS=1: gitliza's reference-transaction checks skipped" in r.stderr
    assert git(repo, "rev-parse", "HEAD") != before
    assert _starts(log)[n:] == []
    assert _commit(repo, "no bypass", check=False).returncode != 0
