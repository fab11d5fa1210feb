"""A board in a real repository, driven through the library API with a fake clock."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gitliza.services.api import Liza
from gitliza.core import clock
from gitliza.core.ops import Add, Init, Register
from tests.conftest import git

T0 = "2025-01-17T14:00:00Z"


def with_spec(repo: Path) -> None:
    """specs/a.md on an integration branch: a task becomes claimable only with its spec there."""
    (repo / "specs").mkdir(exist_ok=True)
    (repo / "specs" / "a.md").write_text("# spec\n")
    git(repo, "add", "specs/a.md")
    git(repo, "commit", "-q", "-m", "spec")
    git(repo, "branch", "-f", "integration")


class Team:
    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.minute = 0
        self.human = self.as_("human")

    def now(self) -> str:
        self.minute += 1
        return clock.plus(T0, self.minute * 60)

    def as_(self, agent: str) -> Liza:
        return Liza.open(self.repo, agent, now=self.now, sync=False)

    def do(self, agent: str, cls: Any, **args: Any) -> Any:
        return self.as_(agent).do(cls, **args)


@pytest.fixture
def team(repo: Path) -> Team:
    with_spec(repo)
    t = Team(repo)
    t.human.do(Init, goal="Retry logic")
    for agent, role in [("planner-1", "planner"), ("coder-1", "coder"), ("coder-2", "coder"),
                        ("reviewer-1", "code_reviewer")]:
        t.human.do(Register, agent=agent, role=role)
    for i in (1, 2, 3):
        t.do("planner-1", Add, task=f"task-{i}", description="do it", spec_ref="specs/a.md",
             done_when="it works", scope="api", ready=True)
    return t
