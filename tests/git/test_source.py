"""Boards read from state trees (gitliza/git/source.py): what a long-lived process keeps of the
entities it decoded does not grow with the transitions it sees (issue 28)."""
from __future__ import annotations

import gc
from pathlib import Path

from gitliza.core import clock
from gitliza.core.model import Agent
from gitliza.core.ops import Register
from gitliza.core.ops.work import Heartbeat
from gitliza.services.api import Liza
from tests.team.procs import make_board

T0 = 1_800_000_000


def test_a_replaced_entity_version_is_not_kept(repo: Path) -> None:
    """Every heartbeat writes a new version of the agent's record; both handles read each one.
    Keyed by blob, the cache kept every version until thousands newer ones pushed it out."""
    make_board(repo)
    tick = iter(range(T0, T0 + 1000))

    def now() -> str:
        return clock.from_epoch(next(tick))

    Liza.open(repo, "human").do(Register, agent="coder-9", role="coder")
    coder = Liza.open(repo, "coder-9", now=now)
    watcher = Liza.open(repo, "human")

    def beat(n: int) -> None:
        for _ in range(n):
            coder.do(Heartbeat)
            assert watcher.board().agent("coder-9") is not None

    beat(20)
    before = _versions("coder-9")
    beat(200)
    # The versions alive: the handles' current boards' and the cache's newest, not one per beat.
    assert _versions("coder-9") <= before <= 4


def _versions(agent: str) -> int:
    """How many distinct versions of `agent`'s record this process holds."""
    gc.collect()
    return len({a.heartbeat for a in gc.get_objects() if type(a) is Agent and a.id == agent})


def test_a_task_that_moved_to_the_archive_is_not_kept_by_a_reader(repo: Path) -> None:
    """A reader that lists the live tasks (a coder's supervisor looking for work) and never asks
    for an ended task by its key again kept the last live record of every task the team had
    (issue 39: ~300 objects per task, up to the cache's 4,096 entries)."""
    from gitliza.core.ops import Abandon, Add
    from gitliza.git import source

    make_board(repo)
    planner = Liza.open(repo, "human")
    reader = Liza.open(repo, "human")
    for i in range(40):
        planner.do(Add, task=f"t{i}", description="d", spec_ref="README.md", done_when="w",
                   scope="x")
    assert len(list(reader.board().tasks())) == 40
    for i in range(40):
        planner.do(Abandon, task=f"t{i}", reason="not needed")
        list(reader.board().tasks())  # the reader lists the live tasks after each move
    kept = [k for k in list(source._DECODED._young) + list(source._DECODED._old)
            if k[0] == "tasks"]
    assert kept == []
    assert reader.board().task("t3").status == "ABANDONED"  # from the archive, as before


def test_a_whole_collection_read_through_the_tables_is_what_get_reads(repo: Path) -> None:
    """`GitSource.many` (a collection read whole: `status`) gives what `get` gives key by key,
    from the shared tables (gitliza/git/tablecache.py) or, for a table that is damaged or names
    another task, from the blob; and it stays lazy: a reader that stops early decodes no more."""
    from gitliza.core.board import Board
    from gitliza.core.ops import Add
    from gitliza.git import source
    from gitliza.git.source import GitSource, Tables

    make_board(repo)
    h = Liza.open(repo, "human")
    for i in range(12):
        h.do(Add, task=f"t{i}", description=f"task {i}", spec_ref="README.md", done_when="w",
             scope="x")
    store = h.store
    tip = store.repo[store.tip()]
    tables = Tables()
    list(Board(GitSource(store.repo, tip.tree, tables)).values("tasks"))  # the tables, parsed
    by_key = {t.id: t for t in Board(GitSource(store.repo, tip.tree)).values("tasks")}
    raw = {t["id"]: k for k, t in tables.items() if "id" in t}
    tables[raw["t2"]] = {**tables[raw["t2"]], "priority": "high"}  # wrong type: the blob decides
    tables[raw["t5"]] = {**tables[raw["t5"]], "id": "t6"}  # another task's table: the blob decides
    tables[raw["t7"]] = {**tables[raw["t7"]], "description": "from the table"}  # believed (as get)
    source._DECODED.clear()
    lazy = GitSource(store.repo, tip.tree, Tables(dict(tables)))
    first = next(Board(lazy).values("tasks"))
    assert first == by_key[first.id] and len(lazy._cache) == 1  # one read, one decoded
    source._DECODED.clear()
    bulk = {t.id: t for t in Board(GitSource(store.repo, tip.tree, Tables(dict(tables))))
            .values("tasks")}
    source._DECODED.clear()
    one_by_one = GitSource(store.repo, tip.tree, Tables(dict(tables)))
    assert bulk == {k: one_by_one.get("tasks", k) for k in one_by_one.keys("tasks")}
    assert bulk["t7"].description == "from the table"
    assert {k: v for k, v in bulk.items() if k != "t7"} == \
        {k: v for k, v in by_key.items() if k != "t7"}
