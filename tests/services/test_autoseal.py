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


def _plain_behind(repo: object, tip: object, every: int) -> int | None:
    """The walk without the memo (what `behind` answered before it kept one)."""
    import pygit2

    from gitliza.core.encoding.record import is_seal_message
    assert isinstance(repo, pygit2.Repository)
    oid = tip
    for _ in range(every):
        if oid is None:
            return None
        commit = repo.get(oid)
        if not isinstance(commit, pygit2.Commit) or is_seal_message(commit.message):
            return None
        oid = commit.parent_ids[0] if commit.parent_ids else None
    return every if oid is not None else None


def test_the_kept_walk_answers_as_the_whole_walk(repo: Path) -> None:
    """`behind` keeps what a walk found (gitliza-seal.cache) and stops the next walk where it
    meets that commit: for a history that grows commit by commit, seals here and there, each
    `seal_every`, a tip on another line of history, a memo kept for another `seal_every` and a
    damaged one, it answers as the walk of every commit does."""
    import marshal
    import random

    import pygit2

    from gitliza.services import autoseal
    r = pygit2.Repository(str(repo))
    sig = pygit2.Signature("t", "t@x", 1_700_000_000, 0)
    tree = r.TreeBuilder().write()
    memo = Path(r.path) / autoseal.MEMO
    rng = random.Random(7)

    def commit(parent: pygit2.Oid | None, seal: bool) -> pygit2.Oid:
        msg = "op\n\nLiza-Op: seal\n" if seal else "op\n\nLiza-Op: add\n"
        return r.create_commit(None, sig, sig, msg, tree, [parent] if parent else [])

    tips: list[pygit2.Oid] = []
    tip = None
    for every in (1, 3, 5, 12):  # a history growing commit by commit, a status after each
        for i in range(len(tips), len(tips) + 15):
            tip = commit(tip, seal=rng.random() < 0.08)
            tips.append(tip)
            assert autoseal.behind(r, tip, every) == _plain_behind(r, tip, every), (i, every)
            assert marshal.loads(memo.read_bytes())[2] == tip.raw  # kept for the next walk
    for every in (4, 30):  # tips walked in any order: behind, ahead, another line of history
        side = commit(tips[20], seal=False)
        for t in [tips[45], tips[10], side, tips[59], tips[3], commit(side, False)]:
            assert autoseal.behind(r, t, every) == _plain_behind(r, t, every)
    for damage in (b"\x00junk", marshal.dumps(("gitliza-seal", 1)),
                   marshal.dumps((("gitliza-seal", 1), 4, tips[50].raw, -3, 99))):
        memo.write_bytes(damage)
        assert autoseal.behind(r, tips[59], 4) == _plain_behind(r, tips[59], 4)
    # a forged memo of the right shape for a commit below is believed, as the tables cache is;
    # the walk still reads every commit above it
    memo.write_bytes(marshal.dumps((("gitliza-seal", 1), 5, tips[50].raw, 0, 1)))
    assert autoseal.behind(r, tips[59], 5) is None  # "a seal at tips[50]"
