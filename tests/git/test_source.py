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
