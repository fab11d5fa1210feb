"""Lease expiry judged by the observer's own clock (core/presence/leasemarks.py): sightings, the
evidence a takeover records, and the core refusing every takeover its evidence does not prove,
whatever the ops' own dates say (they come from other machines' clocks)."""
from __future__ import annotations

import pytest

from gitliza.core import clock

from gitliza.core.presence import leasemarks
from gitliza.core.presence.leasemarks import CLAIM, NOBODY, Evidence, Lease
from gitliza.core.ops import Claim, ClaimReview, Heartbeat, apply
from gitliza.errors import IllegalTransition, ValidationError
from tests.core.boards import BASE, Runner, S, board_in

LEASE = 300  # the board's default lease_duration; grace 60 s


def _claim(r: Runner, coder: str, takeover: str | None, minutes: int = 1) -> object:
    r.minute += minutes
    return r.do(Claim, coder, task="task-1", worktree=".worktrees/task-1", base_commit=BASE,
                takeover=takeover)


def _evidence(r: Runner, waited: int, *, holder: str = "coder-1", mark: str | None = None,
              first: str | None = None) -> str:
    t = r.board.task("task-1")
    m = mark or t.lease_expires
    start = first or clock.plus(m, -LEASE)
    return Evidence(holder, m, start, clock.plus(start, waited)).encode()


def test_sightings_keep_the_first_sighting_until_the_mark_changes() -> None:
    lease = Lease(CLAIM, "coder-1", "t1", "2026-01-01T00:05:00Z")
    seen = leasemarks.observe({}, [lease], 100)
    seen = leasemarks.observe(seen, [lease], 250)
    assert seen[lease.key] == (lease.mark, 100)
    assert leasemarks.expired(seen, lease, LEASE, 100 + LEASE + 59) is None
    ev = leasemarks.expired(seen, lease, LEASE, 100 + LEASE + 60)
    assert ev is not None and ev.waited == LEASE + 60 and ev.holder == "coder-1"
    renewed = Lease(CLAIM, "coder-1", "t1", "2026-01-01T00:06:00Z")
    seen = leasemarks.observe(seen, [renewed], 500)
    assert seen[renewed.key] == (renewed.mark, 500)  # a renewal restarts the wait
    assert leasemarks.expired(seen, renewed, LEASE, 500 + LEASE) is None
    # A clock set back never shortens the wait: the first sighting restarts.
    assert leasemarks.observe(seen, [renewed], 400)[renewed.key] == (renewed.mark, 400)
    # A lease that ended is forgotten when the whole board is observed.
    assert leasemarks.observe(seen, [], 600) == {}
    assert Evidence.decode(ev.encode()) == ev


def _at(r: Runner, coder: str, ev: Evidence) -> None:
    """A claim by `coder` made on its observer's clock at the moment it judged (`ev.now`)."""
    op = Claim(actor=coder, time=ev.now, task="task-1", worktree=".worktrees/task-1",
               base_commit=BASE, takeover=ev.encode())
    r.board = apply(r.board, op).board


@pytest.mark.parametrize("offset", [-600, 600])
def test_a_takeover_with_evidence_ignores_the_ops_dates(offset: int) -> None:
    """The observer's clock is 10 minutes slow (its claim is dated before the holder's lease
    expiry: the old rule called that a live lease) or fast; what decides is the evidence: the
    holder's mark seen unchanged for the lease and the grace on the observer's own clock."""
    r = board_in(S.CLAIMED)
    mark = r.board.task("task-1").lease_expires
    first = clock.plus(mark, -LEASE + offset + 1)  # seen 1 s after it was written
    _at(r, "coder-2", Evidence("coder-1", mark, first, clock.plus(first, LEASE + 60)))
    assert r.board.task("task-1").assigned_to == "coder-2"


def test_a_dated_expiry_without_evidence_is_not_a_takeover() -> None:
    """A claim that judged no one's lease (NOBODY: a fresh claim, or one replayed by sync) never
    takes over, even dated an hour after the holder's lease ran out (a fast clock)."""
    r = board_in(S.CLAIMED)
    with pytest.raises(IllegalTransition, match="already claimed by coder-1.*takes over none"):
        _claim(r, "coder-2", NOBODY, minutes=60)
    assert r.board.task("task-1").assigned_to == "coder-1"


@pytest.mark.parametrize("why,bad,error", [
    ("too short a wait", dict(waited=LEASE + 59), IllegalTransition),
    ("another holder", dict(waited=LEASE + 60, holder="coder-3"), IllegalTransition),
    ("a renewed mark", dict(waited=LEASE + 60, mark="2000-01-01T00:00:00Z"), IllegalTransition),
    ("seen before it was written", dict(waited=LEASE + 60, first="2000-01-01T00:00:00Z"),
     ValidationError),
])
def test_a_takeover_its_evidence_does_not_prove_is_refused(why: str, bad: dict[str, object],
                                                             error: type[Exception]) -> None:
    r = board_in(S.CLAIMED)
    before = r.board
    with pytest.raises(error):
        _claim(r, "coder-2", _evidence(r, **bad), minutes=60)  # type: ignore[arg-type]
    assert r.board is before, why


def test_a_renewal_after_the_judgment_turns_a_replayed_takeover_into_a_refusal() -> None:
    """Sync replays a takeover onto a board where the holder renewed meanwhile: the mark it
    judged is gone, so it is refused (dropped), never applied over the live lease."""
    r = board_in(S.CLAIMED)
    ev = _evidence(r, LEASE + 60)
    r.do(Heartbeat, "coder-1")
    with pytest.raises(IllegalTransition, match="renewed or taken since"):
        _claim(r, "coder-2", ev)


def test_evidence_dated_after_the_op_is_refused() -> None:
    r = board_in(S.CLAIMED)
    mark = r.board.task("task-1").lease_expires
    late = Evidence("coder-1", mark, clock.plus(mark, -LEASE), "2999-01-01T00:00:00Z").encode()
    with pytest.raises(ValidationError, match="after the op"):
        _claim(r, "coder-2", late)


def test_a_review_takeover_needs_its_evidence_too() -> None:
    r = board_in(S.READY_FOR_REVIEW)
    r.do(ClaimReview, "reviewer-1", task="task-1", takeover=NOBODY)
    t = r.board.task("task-1")
    with pytest.raises(IllegalTransition, match="already being reviewed by reviewer-1"):
        r.do(ClaimReview, "reviewer-2", task="task-1", takeover=NOBODY)
    mark = t.review_lease_expires
    first = clock.plus(mark, -LEASE)
    ev = Evidence("reviewer-1", mark, first, clock.plus(first, LEASE + 60))
    r.board = apply(r.board, ClaimReview(actor="reviewer-2", time=ev.now, task="task-1",
                                         takeover=ev.encode())).board
    assert r.board.task("task-1").reviewing_by == "reviewer-2"


def test_legacy_claims_keep_format_1s_rule() -> None:
    """A claim recorded before takeover records (None) replays as it did: by its own date."""
    r = board_in(S.CLAIMED)
    with pytest.raises(IllegalTransition, match="already claimed"):
        _claim(r, "coder-2", None)
    _claim(r, "coder-2", None, minutes=10)
    assert r.board.task("task-1").assigned_to == "coder-2"
