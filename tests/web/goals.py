"""A board on its second goal (issue 36), for the web tests: goal-1 COMPLETED with t1 merged
through the real CLI (worktree, submit, review, merge), goal-2 with t2 claimed by c1 whose
supervisor has stopped (its `supervise end` recorded, the claim held)."""
from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import git
from tests.web.board import cli


def second_goal_board(repo: Path) -> None:
    from gitliza.core.ops.control import Supervise
    from gitliza.services.api import Liza
    (repo / "specs").mkdir()
    (repo / "specs" / "one.md").write_text("# One\n")
    git(repo, "add", "specs")
    git(repo, "commit", "-q", "-m", "spec one")
    cli(repo, "init", "First goal: greet")
    for agent, role in (("p1", "planner"), ("c1", "coder"), ("r1", "code-reviewer")):
        cli(repo, "register", agent, "--role", role)
    add = ("--spec-ref", "specs/one.md", "--done-when", "done", "--scope", "src", "--ready")
    cli(repo, "add", "t1", "--desc", "Greet by name", *add, agent="p1")
    wt = repo / json.loads(cli(repo, "claim", "t1", "--json", agent="c1").stdout)["worktree"]
    (wt / "app.py").write_text("def greet(name):\n    return f'hello {name}'\n")
    git(wt, "add", "app.py")
    git(wt, "commit", "-q", "-m", "greet")
    cli(repo, "submit", "t1", agent="c1")
    cli(repo, "claim-review", "t1", agent="r1")
    cli(repo, "verdict", "t1", "approve", agent="r1")
    cli(repo, "merge", "t1", agent="r1")
    cli(repo, "complete-goal")
    git(repo, "merge", "-q", "--ff-only", "integration")
    (repo / "specs" / "two.md").write_text("# Two\n")
    git(repo, "add", "specs")
    git(repo, "commit", "-q", "-m", "spec two")
    cli(repo, "init", "Second goal: shout")
    cli(repo, "add", "t2", "--desc", "Shout", "--spec-ref", "specs/two.md", "--done-when",
        "done", "--scope", "src", "--ready", agent="p1")
    cli(repo, "claim", "t2", agent="c1")
    c1 = Liza.open(repo, "c1")
    c1.do(Supervise, mode="start")
    c1.do(Supervise, mode="end", gen=1)
