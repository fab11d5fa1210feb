"""Helpers of the first-day tests: `git liza` run as a person runs it, in a real repository."""
from __future__ import annotations

import subprocess
from pathlib import Path

from tests.cli.test_board import liza as run_liza
from tests.conftest import git


def liza(repo: Path, *args: str, agent: str | None = None,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`git liza ARGS` in `repo` as the human (or `agent`)."""
    return run_liza(repo, *args, agent=agent, env=env)


def ok(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 0, (r.stdout, r.stderr)
    return r.stdout


def state(repo: Path) -> str:
    return git(repo, "rev-parse", "-q", "--verify", "refs/liza/state", check=False)


def merged_task(repo: Path, task: str = "t1") -> None:
    """A board with one task taken through claim, submit, approval and merge (a real worktree)."""
    for agent, role in (("planner-1", "planner"), ("coder-1", "coder"),
                        ("reviewer-1", "code_reviewer")):
        ok(liza(repo, "register", agent, "--role", role))
    ok(liza(repo, "add", task, "--desc", "d", "--spec-ref", "specs/a.md", "--done-when", "x",
            "--scope", "s", "--ready", agent="planner-1"))
    ok(liza(repo, "claim", task, agent="coder-1"))
    wt = repo / ".worktrees" / task
    (wt / f"{task}.txt").write_text("work\n")
    git(wt, "add", f"{task}.txt")
    git(wt, "commit", "-q", "-m", f"{task} work")
    ok(liza(wt, "submit", task, agent="coder-1"))
    ok(liza(repo, "claim-review", task, agent="reviewer-1"))
    ok(liza(repo, "verdict", task, "approve", agent="reviewer-1"))
    ok(liza(repo, "merge", task, agent="reviewer-1"))


def own_repo(tmp: Path) -> tuple[Path, Path]:
    """A person's project (main, a spec, some history) and an empty bare remote `origin`."""
    bare = tmp / "remote.git"
    git(tmp, "init", "-q", "--bare", "-b", "main", str(bare))
    work = tmp / "proj"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    (work / "specs").mkdir()
    (work / "specs" / "a.md").write_text("# a\n")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "first commit")
    (work / "README.md").write_text("proj\n")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "second commit")
    git(work, "remote", "add", "origin", str(bare))
    return work, bare
