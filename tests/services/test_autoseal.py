"""Issue 36: `watch` (and `team`, tests/team/test_team_output.py) seal every `seal_every` commits
as the human where the human's key is at hand or signatures are off; `status` says when the newest
seal is far behind; without the key, nothing is sealed and one line says why."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_board import liza, ok


def _board(repo: Path, n: int) -> None:
    ok(liza(repo, "init", "Seal me", agent=None))
    ok(liza(repo, "config", "seal_every", "5", agent=None))
    ok(liza(repo, "register", "p1", "--role", "planner", agent=None))
    for i in range(n):
        ok(liza(repo, "add", f"t{i}", "--desc", f"task {i}", agent="p1"))


def _seals(repo: Path) -> list[dict[str, object]]:
    return json.loads(ok(liza(repo, "log", "--op", "seal", "--json", agent=None)))


def test_watch_seals_when_due_and_status_says_when_it_is_far_behind(repo: Path) -> None:
    _board(repo, 2)  # init, config, register, 2 adds: 5 commits, the whole history
    assert "seal:" not in ok(liza(repo, "status", agent=None))  # a young board needs none
    ok(liza(repo, "add", "t9", "--desc", "one more", agent="p1"))
    st = ok(liza(repo, "status", agent=None))
    assert "seal: none in the last 5 commits (seal_every)" in st, st
    w = liza(repo, "watch", "--once", agent=None)
    assert w.returncode == 0, w.stdout + w.stderr
    assert [s["actor"] for s in _seals(repo)] == ["human"]
    assert "seal:" not in ok(liza(repo, "status", agent=None))
    # not due again until seal_every more commits
    ok(liza(repo, "watch", "--once", agent=None))
    assert len(_seals(repo)) == 1
    ok(liza(repo, "verify", agent=None))
    # off: never by itself, and status stays quiet
    ok(liza(repo, "config", "seal_every", "off", agent=None))
    assert ok(liza(repo, "config", "seal_every", agent=None)).strip().endswith("0")
    for i in range(6):
        ok(liza(repo, "add", f"u{i}", "--desc", "more", agent="p1"))
    ok(liza(repo, "watch", "--once", agent=None))
    assert len(_seals(repo)) == 1 and "seal:" not in ok(liza(repo, "status", agent=None))


def test_no_seal_without_the_humans_key_where_signatures_are_on(repo: Path) -> None:
    _board(repo, 6)
    ok(liza(repo, "config", "signatures", "warn", agent=None))
    w = liza(repo, "watch", "--once", agent=None)
    assert _seals(repo) == []
    said = [x for x in w.stderr.splitlines() if "seal due" in x]
    assert len(said) == 1 and "the human's key is not at hand" in said[0], w.stderr


def test_a_seal_needs_the_human(repo: Path) -> None:
    """An agent's watch never seals (a seal is the human's), and says nothing about it."""
    _board(repo, 6)
    w = liza(repo, "watch", "--once", agent="p1")
    assert _seals(repo) == [] and "seal" not in w.stderr
    with pytest.raises(AssertionError):
        ok(liza(repo, "seal", agent="p1"))
