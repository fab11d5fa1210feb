"""Handles passed down (issue 51): a remote is resolved once where its name enters and the
`Remote` is handed down; code above gitliza/git/ is handed the open repository instead of
reopening one from a path; `Liza.repo` is typed. Ceilings, counted in the sources, so that a new
`Remote | str` parameter or a new `pygit2.Repository(` path-open shows up here, not in a walk."""
from __future__ import annotations

import re
from pathlib import Path

import gitliza

PACKAGE = Path(gitliza.__file__).parent
REMOTE_OR_NAME_MAX = 2  # git/remotes `resolve` takes a name (the command line's); one to spare
OPENED_OUTSIDE_GIT_MAX = 8


def _sources() -> dict[Path, str]:
    return {p: p.read_text("utf-8") for p in sorted(PACKAGE.rglob("*.py"))}


def test_a_resolved_remote_is_passed_down_not_a_name() -> None:
    found = [f"{p.relative_to(PACKAGE)}:{n}" for p, text in _sources().items()
             for n, line in enumerate(text.splitlines(), 1) if re.search(r"Remote \| str", line)]
    assert len(found) <= REMOTE_OR_NAME_MAX, found
    assert "git/remotes/__init__.py" in " ".join(found)  # resolve: where a name becomes a Remote


def test_the_open_repository_is_handed_down() -> None:
    git = PACKAGE / "git"
    found = [f"{p.relative_to(PACKAGE)}:{n}" for p, text in _sources().items()
             if git not in p.parents
             for n, line in enumerate(text.splitlines(), 1) if "pygit2.Repository(" in line]
    assert len(found) <= OPENED_OUTSIDE_GIT_MAX, found


def test_liza_repo_is_typed() -> None:
    from gitliza.services.api import Liza
    assert Liza.repo.fget is not None
    assert Liza.repo.fget.__annotations__["return"] == "pygit2.Repository"
