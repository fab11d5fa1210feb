"""Boards written by earlier releases must keep verifying: replay recomputes every recorded tree,
so a change to how any entity or op encodes (a new field with a non-empty default, a renamed key,
a reordered mapping) would make every existing board, and every push through the server hook,
fail. tests/fixtures/board-v1.bundle is a board written by the format-1 release (commit 76e9c0a):
every op of that release (init, config, register, add, finalize, claim, heartbeat, release,
submit, claim-review, verdict, merge, block, rescope, abandon, discover, anomaly, note,
spec-change, handoff), with its integration branch."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import git

BUNDLE = Path(__file__).parent.parent / "fixtures" / "board-v1.bundle"
OPS_IN_FIXTURE = {"init", "config", "register", "add", "finalize", "claim", "heartbeat", "release",
                  "submit", "claim-review", "verdict", "merge", "block", "rescope", "abandon",
                  "discover", "anomaly", "note", "spec-change", "handoff"}


def _restore(tmp_path: Path) -> Path:
    path = tmp_path / "old"
    git(tmp_path, "init", "-q", "-b", "main", str(path))
    git(path, "fetch", "-q", "--update-head-ok", str(BUNDLE), "+refs/*:refs/*")
    git(path, "reset", "-q", "--hard", "main")
    return path


def _liza(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gitliza", *args], cwd=cwd, capture_output=True,
                          text=True)


def test_fixture_covers_every_format1_op(tmp_path: Path) -> None:
    path = _restore(tmp_path)
    ops = set(git(path, "log", "--format=%(trailers:key=Liza-Op,valueonly)",
                  "refs/liza/state").split())
    assert ops == OPS_IN_FIXTURE


def test_a_format1_board_still_verifies(tmp_path: Path) -> None:
    path = _restore(tmp_path)
    tip = git(path, "rev-parse", "refs/liza/state")
    r = _liza(path, "verify")
    assert r.returncode == 0, r.stderr
    assert "verified 35 state commit(s)" in r.stdout
    assert git(path, "rev-parse", "refs/liza/state") == tip


def test_a_format1_board_still_reads_and_takes_new_ops(tmp_path: Path) -> None:
    path = _restore(tmp_path)
    r = _liza(path, "status", "--json")
    assert r.returncode == 0, r.stderr
    assert "retry-docs-a" in r.stdout
    r = _liza(path, "note", "still alive", "--no-sync")
    assert r.returncode == 0, r.stderr
    # The first write of this release upgraded the board in place first (docs/upgrading.md).
    ops = git(path, "log", "-3", "--format=%(trailers:key=Liza-Op,valueonly)",
              "refs/liza/state").split()
    assert ops[:2] == ["note", "upgrade"] and ops[2] != "upgrade"
    assert _liza(path, "verify").returncode == 0
