"""The parsed-table cache shared by read commands: same answers as reading the blobs, kept only when
worth it, and never trusted over the blobs."""
from __future__ import annotations

import marshal
import subprocess
import sys
from pathlib import Path

import pytest

from gitliza.services.api import Liza
from gitliza.core.ops import Add, Claim, Init, Register
from gitliza.git import source as source_mod
from gitliza.git import tablecache

GIT_LIZA = str(Path(sys.executable).parent / "git-liza")


def _status(repo: Path) -> str:
    r = subprocess.run([GIT_LIZA, "status"], cwd=repo, capture_output=True, text=True, timeout=60,
                       env={"PATH": "/usr/bin:/bin", "LIZA_AGENT_ID": "human",
                            "HOME": str(repo.parent)})
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.fixture
def board(repo: Path) -> Liza:
    h = Liza.open(repo, "human")
    h.do(Init, goal="g")
    h.do(Register, agent="coder-1", role="coder")
    for i in range(tablecache.REWRITE_AFTER + 10):
        h.do(Add, task=f"t-{i}", description=f"task {i}", spec_ref="s.md", done_when="w",
             scope="x", ready=True)
    return h


def _fresh_read(h: Liza) -> dict[str, object]:
    """The board decoded from its blobs alone: no cache of any kind."""
    source_mod._DECODED.clear()
    source_mod._DECODED_HISTORY.clear()
    board, _ = h.store.board()
    return {t.id: t for t in board.tasks()}


def test_status_through_the_cache_matches_the_blobs(board: Liza, repo: Path) -> None:
    cache = tablecache.path_for(board.store)
    first = _status(repo)  # every table parsed: the file is written
    assert cache.exists()
    assert _status(repo) == first  # every table from the file
    h = Liza.open(repo, "coder-1")
    h.do(Claim, task="t-3", worktree=".worktrees/t-3", base_commit="0" * 40)
    board.do(Add, task="late", description="added after the cache was written")
    after = _status(repo)
    rows = {line.split()[0]: line.split() for line in after.splitlines() if line.strip()}
    assert rows["late"][1] == "DRAFT" and rows["t-3"][1:4] == ["CLAIMED", "3", "coder-1"]
    with tablecache.reading(board.store):
        cached = _fresh_read(board)
    assert cached == _fresh_read(board)


def test_rewritten_only_when_many_tables_were_missing(board: Liza, repo: Path) -> None:
    cache = tablecache.path_for(board.store)
    _status(repo)
    written = cache.stat().st_mtime_ns
    board.do(Add, task="one-more", description="d")
    _status(repo)  # one table missing: not worth a rewrite
    assert cache.stat().st_mtime_ns == written
    for i in range(tablecache.REWRITE_AFTER):
        board.do(Add, task=f"batch-{i}", description="d")
    _status(repo)
    assert cache.stat().st_mtime_ns != written
    head, saved = marshal.loads(cache.read_bytes())
    assert len(saved) == len(list(board.board().tasks())) + 4  # what status read: the board
    assert all(isinstance(k, bytes) and len(k) == 20 for k in saved)


@pytest.mark.parametrize("damage", ["garbage", "foreign", "wrong-type"])
def test_a_damaged_cache_is_never_believed(board: Liza, repo: Path, damage: str) -> None:
    cache = tablecache.path_for(board.store)
    truth = _status(repo)
    head, saved = marshal.loads(cache.read_bytes())
    if damage == "garbage":
        cache.write_bytes(b"\x00not marshal")
    elif damage == "foreign":
        cache.write_bytes(marshal.dumps((("gitliza-tables", 999, "x"), saved)))
    else:  # a table whose values are wrong for its entity: the blob decides instead
        for table in saved.values():
            if "priority" in table:
                table["priority"] = "high"
                table["description"] = "forged"
        cache.write_bytes(marshal.dumps((head, saved)))
    assert _status(repo) == truth
    with tablecache.reading(board.store):
        assert _fresh_read(board) == _fresh_read(board)
