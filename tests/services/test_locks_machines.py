"""Lock scopes hold across machines (issue 37): two machines claim tasks whose lock scopes
overlap, each on its own board; the second to reach the remote has its claim refused on replay
(sync replays local ops on the remote tip through the same `apply`), the remote, judged by the
server hook, never holds two overlapping scopes in flight, and `verify` accepts it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitliza.services.api import Liza
from tests.conftest import git
from tests.services.test_multi_machine import make_team

pytestmark = pytest.mark.slow  # three clones, a server hook, dozens of processes


def test_overlapping_claims_on_two_machines_never_both_land(tmp_path: Path) -> None:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    tm, a, b, c = make_team(tmp_path, bare, str(bare))
    tm.liza(a, "register", "coder-2", "--role", "coder")
    for tid in ("t1", "t2"):
        tm.liza(a, "edit", tid, "--lock-scope", "shared.txt", agent="planner-1")
    tm.liza(b, "pull")
    tm.liza(c, "pull")
    git(b, "config", "--unset", "liza.remote")  # B works offline: its claim stays local
    tm.liza(b, "claim", "t2", agent="coder-2")
    assert Liza.open(b).board().task("t2").status == "CLAIMED"
    tm.liza(c, "claim", "t1", agent="coder-1")  # C's claim reaches the remote first
    r = tm.run(b, "git", "liza", "sync", agent="coder-2", ok=False)
    assert "t2" in r.stderr + r.stdout, (r.returncode, r.stderr)
    tm.liza(a, "pull")
    remote = Liza.open(a).board()
    assert remote.task("t1").status == "CLAIMED" and remote.task("t1").assigned_to == "coder-1"
    assert remote.task("t2").status == "UNCLAIMED"
    data = json.loads(tm.liza(a, "status", "--json"))
    assert data["lock_waits"] == {"t2": "t1"}
    tm.liza(a, "verify")
    # B's own board follows the remote: its claim did not survive.
    assert Liza.open(b).board().task("t2").status == "UNCLAIMED"
