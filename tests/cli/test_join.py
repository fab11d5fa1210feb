"""`git liza join URL [DIRECTORY]` (issue 48): a new machine joins in one command, for real: a bare
remote with a board, `git clone` by the command, the board pulled and verified, the client hooks
installed, the server hook checked where it can be."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gitliza.hooks.install import hooks_status, install
from tests.cli.test_board import liza
from tests.conftest import git
from tests.services.test_sync import seed

pytestmark = pytest.mark.slow  # clones, pulls and hook installs: real git processes


def test_join_clones_pulls_installs_and_checks_the_server_hook(tmp_path: Path) -> None:
    bare, _seed = seed(tmp_path)
    install(bare, server=True, python=sys.executable)
    r = liza(tmp_path, "join", str(bare), "b", agent=None)
    assert r.returncode == 0, r.stderr
    b = tmp_path / "b"
    assert git(b, "rev-parse", "refs/liza/state") == git(bare, "rev-parse", "refs/liza/state")
    assert git(b, "config", "liza.remote") == "origin"
    assert "the remote's server hook is installed" in r.stdout and "next: cd " in r.stdout
    assert any(h.kind == "gitliza" for h in hooks_status(b).hooks)
    status = liza(b, "status", agent=None)
    assert status.returncode == 0 and "ship it" in status.stdout
    # Again into the same place: refused, nothing changed.
    again = liza(tmp_path, "join", str(bare), "b", agent=None)
    assert again.returncode == 1 and "not empty" in again.stderr


def test_join_inside_a_repository_uses_it_and_names_a_missing_server_hook(
        tmp_path: Path) -> None:
    bare, _seed = seed(tmp_path)  # no server hook
    mine = tmp_path / "mine"
    git(tmp_path, "clone", "-q", str(bare), str(mine))
    r = liza(mine, "join", str(bare), "--json", agent=None)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["cloned"] is False and data["remote"] == "origin"
    assert "no gitliza server hook" in data["server_hook"]
    assert git(mine, "rev-parse", "refs/liza/state") == git(bare, "rev-parse", "refs/liza/state")


def test_join_a_remote_without_a_board_says_what_to_do(tmp_path: Path) -> None:
    empty = tmp_path / "empty.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(empty))
    r = liza(tmp_path, "join", str(empty), "c", agent=None)
    assert r.returncode == 1 and "holds no board yet" in r.stderr
    assert len(r.stderr.strip().splitlines()) <= 2  # one line, and its hint
