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
    assert "git/remotes/remote.py" in " ".join(found)  # resolve: where a name becomes a Remote


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


def test_the_auto_sync_remote_is_resolved_once_per_liza(repo: Path, tmp_path: Path) -> None:
    """`Liza.sync_target()`: the configured remote resolved once (the same `Remote` handed to
    every sync of this Liza), None without one, and a name that is no remote one line, exit 1."""
    import pytest

    from gitliza.errors import ValidationError
    from gitliza.git.remotes.remote import Remote
    from gitliza.services.api import Liza
    from tests.conftest import git
    liza = Liza.open(repo)
    assert liza.sync_remote() is None and liza.sync_target() is None
    bare = tmp_path / "team.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(repo, "remote", "add", "team", str(bare))
    git(repo, "config", "liza.remote", "team")
    first = liza.sync_target()
    assert first == Remote("team", "team") and liza.sync_target() is first
    assert Liza.open(repo, sync=False).sync_target() is None  # --no-sync
    git(repo, "config", "liza.remote", "nowhere")
    with pytest.raises(ValidationError, match="unknown remote 'nowhere'") as e:
        liza.sync_target()
    assert e.value.exit_code == 1 and "\n" not in str(e.value)
