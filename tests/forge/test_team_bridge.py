"""The team's bridge (gitliza/forge/run.py) in this process, against the stand-in through Prism's
proxy: a bridge that dies is built again, and it lets the clone's lock go when it stops."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gitliza.forge.run import TeamBridge
from tests.conftest import git
from tests.forge.standin import StandIn
from tests.forge.test_bridge_standin import forge_board, sync_once
from tests.team.procs import until


def test_a_bridge_that_dies_is_built_again(repo: Path, tmp_path: Path,
                                           github_standin: StandIn,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The board's tip is not a board for a while (a pass raises): the bridge says it died, is
    built again, and opens the pull requests once the board reads again."""
    s = github_standin
    forge_board(repo, tmp_path, s, "t1", "t2")
    git(repo, "config", "liza.forgeInterval", "0.5")
    monkeypatch.setenv("GITHUB_TOKEN", s.token)
    state = git(repo, "rev-parse", "refs/liza/state").strip()
    foreign = subprocess.run(["git", "commit-tree", "-m", "not a board",
                              git(repo, "rev-parse", "integration^{tree}").strip()],
                             cwd=repo, capture_output=True, text=True, check=True).stdout.strip()
    git(repo, "update-ref", "refs/liza/state", foreign, state)
    lines: list[str] = []
    bridge = TeamBridge(repo, lines.append).start()
    try:
        until(lambda: bridge.restarts >= 2, lambda: f"the bridge dying: {lines}")
        assert s.pulls() == []
        git(repo, "update-ref", "refs/liza/state", state, foreign)
        until(lambda: len(s.pulls()) == 2, lambda: f"the pull requests: {lines}")
        assert bridge.leading
        r = sync_once(repo, s)  # one bridge per clone
        assert r.returncode == 1 and "another bridge runs" in r.stderr, r
    finally:
        bridge.stop()
    died = [x for x in lines if "the bridge died" in x]
    assert died and all("restarting in" in x for x in died), lines
    assert not bridge.leading
    assert sync_once(repo, s).returncode == 0  # the lock is free again
    assert sorted(p["head"]["ref"] for p in s.pulls()) == ["liza/t1", "liza/t2"]
    assert s.validation_errors() == [], s.validation_errors()
