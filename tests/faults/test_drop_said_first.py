"""A sync that drops acknowledged ops says so before anything else can fail (issue 48, item 2 of
its second round): the drop record is written as soon as the board has moved, before the
stand-downs (which remove worktrees) and the rescue (which writes a ref). Here the rescue ref
cannot be written (a ref stands where their directory goes; a full disk or a read-only refs
directory refuses it the same way): the sync used to end in that error with the ops already gone from
the board and no record of them anywhere, so no DROPPED_OPS alarm and no line in the team's
output. Now the ops are recorded with their original commits, and the sync still finishes."""
from __future__ import annotations

import re
import time
from pathlib import Path

import pygit2
import pytest

from gitliza.services.sync import droplog
from tests.conftest import git
from tests.faults.test_partition import _lifecycle
from tests.services.test_multi_machine import make_team, remote_ref

pytestmark = pytest.mark.slow


def test_ops_dropped_by_a_sync_whose_rescue_fails_are_still_recorded(tmp_path: Path) -> None:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    tm, a, b, _c = make_team(tmp_path, bare, str(bare))
    git(b, "remote", "set-url", "origin", str(tmp_path / "unreachable.git"))  # B cut off
    _lifecycle(tm, b, "--no-sync")  # five ops, each acknowledged (exit 0)
    # Commits are content-addressed to the second: A's claim made in the second of B's, from the
    # same board, would be B's claim commit itself, already shared and rightly not dropped (CI saw
    # "4 acknowledged op(s)" so). A's ops start in a later second, as a peer's would.
    last_b = int(git(b, "log", "-1", "--format=%ct", "refs/liza/state"))
    while int(time.time()) <= last_b:
        time.sleep(0.05)
    _lifecycle(tm, a)  # the same task done on A and shared
    git(b, "remote", "set-url", "origin", str(bare))  # healed
    # No rescue ref can be made: a ref stands where their directory goes.
    git(b, "update-ref", "refs/liza-rescue", "HEAD")
    r = tm.run(b, "git", "liza", "sync", ok=False)
    out = r.stdout + r.stderr
    # The board is the shared one: B's five ops left it ...
    assert git(b, "rev-parse", "refs/liza/state") == remote_ref(bare, "refs/liza/state"), out
    # ... and they are said: the DROPPED_OPS alarm names each, with its original commit.
    alerts = droplog.alerts(pygit2.Repository(str(b)))
    assert len(alerts) == 1, (out, alerts)
    assert "5 acknowledged op(s)" in alerts[0].text, alerts[0].text
    assert "claim t1 by coder-1" in alerts[0].text and "merge t1 by rev-1" in alerts[0].text
    assert re.search(r"git show( [0-9a-f]{12}){5}", alerts[0].text), alerts[0].text
    # The sync itself finished, and said why no rescue ref keeps the branch work.
    assert r.returncode == 0, out
    assert "could not be kept on a rescue ref" in out, out
