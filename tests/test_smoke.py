from __future__ import annotations

from pathlib import Path

from tests.conftest import git


def test_repo_fixture_is_real_and_isolated(repo: Path) -> None:
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert git(repo, "config", "user.email") == "liza@example.invalid"
    assert not any((repo / ".git" / "hooks").iterdir()) if (repo / ".git" / "hooks").exists() else True
