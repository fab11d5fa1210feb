"""`verify` judges every reclaim from what the board records (issue 29 item 3): a takeover's
evidence (the mark it judged, first seen and judged on its claimer's clock) is replayed through the
core like any op, so a reclaim commit whose recorded evidence does not prove the expiry fails
verification, even with the very tree a proven one produces."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pygit2
import pytest

from gitliza.core import clock
from gitliza.core.presence.leasemarks import Evidence
from gitliza.core.ops import Add, Claim, Init, Register, apply
from gitliza.git.store import Store
from gitliza.services.api import Liza
from gitliza.services.verify.engine import VerifyFailure, verify

SHA = "a" * 40
LEASE = 300


def _claimed(path: Path) -> tuple[Store, str]:
    """A board where coder-1 claimed t1 at a fixed time; its lease mark."""
    pygit2.init_repository(str(path))
    t = [clock.to_epoch("2026-01-01T00:00:00Z")]

    def now() -> str:
        t[0] += 1
        return clock.from_epoch(t[0])
    human = Liza.open(path, agent="human", now=now)
    human.do(Init, goal="g")
    for agent in ("coder-1", "coder-2"):
        human.do(Register, agent=agent, role="coder")
    human.do(Add, task="t1", description="d", spec_ref="s", done_when="w", scope="x", ready=True)
    Liza.open(path, agent="coder-1", now=now).do(Claim, task="t1", worktree=".worktrees/t1",
                                                  base_commit=SHA, takeover="none")
    mark = human.store.board()[0].task("t1").lease_expires
    assert mark is not None
    return human.store, mark


def _reclaim(store: Store, ev: Evidence, recorded: Evidence) -> None:
    """coder-2's takeover as the core applies it with `ev`, recorded with `recorded` (the same
    when honest; a forger writes the commit itself, bypassing the core)."""
    parent = store.resolve(None)
    board = store.board_at(parent)
    op = Claim(actor="coder-2", time=ev.now, task="t1", worktree=".worktrees/t1",
               base_commit=SHA, takeover=ev.encode())
    outcome = apply(board, op)
    oid = store.write_commit(parent, outcome,
                             dataclasses.replace(op, takeover=recorded.encode()))
    store.repo.references.create(store.ref, oid, force=True)


def test_a_proven_reclaim_verifies(tmp_path: Path) -> None:
    store, mark = _claimed(tmp_path / "repo")
    first = clock.plus(mark, -LEASE + 1)
    ev = Evidence("coder-1", mark, first, clock.plus(first, LEASE + 60))
    _reclaim(store, ev, ev)
    verify(store)
    assert store.board()[0].task("t1").assigned_to == "coder-2"


@pytest.mark.parametrize("lie,match", [
    (dict(waited=LEASE + 59), "less than the lease and its grace"),
    (dict(mark="2026-01-01T00:04:00Z"), "not the one the takeover judged"),
    (dict(holder="coder-3"), "not the one the takeover judged"),
])
def test_a_reclaim_whose_evidence_does_not_prove_the_expiry_fails_verify(
        tmp_path: Path, lie: dict[str, object], match: str) -> None:
    store, mark = _claimed(tmp_path / "repo")
    first = clock.plus(mark, -LEASE + 1)
    honest = Evidence("coder-1", mark, first, clock.plus(first, LEASE + 60))
    waited = int(lie.get("waited", LEASE + 60))  # type: ignore[call-overload]
    forged = Evidence(str(lie.get("holder", "coder-1")), str(lie.get("mark", mark)), first,
                      clock.plus(first, waited))
    _reclaim(store, honest, forged)
    with pytest.raises(VerifyFailure, match=match) as e:
        verify(store)
    assert e.value.op == "claim"
