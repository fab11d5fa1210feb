"""A hook that fails says so in one line, with the exit code errors.classify gives the failure, as
the CLI, MCP and the web board do: never a Python traceback relayed through git.

The failure is real but unforeseen: the installed shim's interpreter is a wrapper that starts the
real `python -m gitliza hook-impl` with pygit2's Repository broken (an exception no handler expects,
raised where every hook opens the repository), then real git runs the real shim."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gitliza.errors import EXIT_INCONSISTENT
from gitliza.hooks.install import install
from tests.conftest import git

PY = sys.executable
GIT_LIZA = str(Path(PY).parent / "git-liza")

# Runs `python -m gitliza ARGS` (what the shim asked for) with pygit2.Repository raising.
BROKEN = """\
import runpy, sys
import pygit2
class Broken(pygit2.Repository):
    def __init__(self, *a, **k):
        raise RuntimeError("the\\nrepository handle broke")
pygit2.Repository = Broken
sys.argv = ["gitliza", *sys.argv[1:]]
runpy.run_module("gitliza", run_name="__main__", alter_sys=True)
"""


def _broken_python(tmp_path: Path) -> Path:
    script = tmp_path / "broken.py"
    script.write_text(BROKEN)
    wrapper = tmp_path / "broken-python"
    # The shim runs `$PYTHON -P -m gitliza hook-impl HOOK ARGS`: keep what follows `-m gitliza`.
    wrapper.write_text(f'#!/bin/sh\nshift 3\nexec {PY} -P {script} "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


@pytest.fixture
def board(repo: Path) -> Path:
    env = dict(os.environ, LIZA_AGENT_ID="planner-1")
    env.pop("LIZA_SKIP_HOOKS", None)
    r = subprocess.run([GIT_LIZA, "init", "goal", "--integration-branch", "integration"], cwd=repo,
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    return repo


def _commit_on_integration(repo: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A commit on the integration branch: a ref update the hook judges in Python."""
    git(repo, "checkout", "-q", "integration")
    return subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "x"], cwd=repo,
                          capture_output=True, text=True, env=env, timeout=60)


def test_an_unforeseen_failure_in_a_hook_is_one_line_and_refuses(
        tmp_path: Path, board: Path) -> None:
    install(board, python=str(_broken_python(tmp_path)))
    head = git(board, "rev-parse", "integration")
    env = {k: v for k, v in os.environ.items() if k not in ("LIZA_SKIP_HOOKS", "LIZA_DEBUG")}
    r = _commit_on_integration(board, env)
    assert r.returncode != 0  # git aborted the ref update: the hook failed, nothing moved
    assert git(board, "rev-parse", "integration") == head
    ours = [line for line in r.stderr.splitlines() if line.startswith("gitliza")]
    assert "Traceback" not in r.stderr, r.stderr
    assert len(ours) == 1, r.stderr
    assert ours[0].startswith("gitliza reference-transaction: internal error: RuntimeError: "
                              "the repository handle broke"), r.stderr
    # The exit code is classify's (4 for a bug), as the CLI's: run the shim's command directly.
    hook = subprocess.run([str(_broken_python(tmp_path)), "-P", "-m", "gitliza", "hook-impl",
                           "reference-transaction", "prepared"], cwd=board, env=env,
                          input=f"{head} {'1' * 40} refs/heads/integration\n",
                          capture_output=True, text=True, timeout=60)
    assert hook.returncode == EXIT_INCONSISTENT, hook.stderr
    assert hook.stderr.count("\n") == 1 and "Traceback" not in hook.stderr


def test_liza_debug_shows_the_bug_s_traceback(tmp_path: Path, board: Path) -> None:
    install(board, python=str(_broken_python(tmp_path)))
    env = {k: v for k, v in os.environ.items() if k != "LIZA_SKIP_HOOKS"}
    r = _commit_on_integration(board, {**env, "LIZA_DEBUG": "1"})
    assert r.returncode != 0
    assert "Traceback" in r.stderr and "RuntimeError" in r.stderr
