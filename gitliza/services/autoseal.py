"""Sealing as the team runs: a board's history stays cheap to join only where someone
seals it (docs/multi-machine.md, "Joining a long board"), and nobody remembers to. `git liza team`
and `git liza watch` run as the human, so they seal whenever the newest seal is `seal_every`
commits or more below the tip, where the human's key is at hand (or signatures are off: a seal
is then unsigned, as every commit is). Where the key is not at hand they say so once; `status`
says when the newest seal is far behind (`behind`: light to import, `status` calls it)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import pygit2

from gitliza.atomic import read_marshal, write_marshal
from gitliza.core.encoding.record import is_seal_message
from gitliza.core.states import HUMAN_ACTOR
from gitliza.errors import LizaError
from gitliza.git.repository import common_dir

if TYPE_CHECKING:
    from gitliza.services.api import Liza


MEMO = "gitliza-seal.cache"  # in the git common dir, beside gitliza-tables.cache
_FORMAT = ("gitliza-seal", 1)


def behind(repo: pygit2.Repository, tip: pygit2.Oid, every: int) -> int | None:
    """`every` when the `every` commits at and below `tip` hold no seal and the history goes on
    below them (the newest seal, if any, is at least that far down); None when a seal is within
    them, or the whole history is shorter (a young board needs none).

    A walk of `every` commits at most, read one by one (~10 us each: 13 ms of a `status` at
    1,200 commits without a seal, more than a tenth of it). What a walk found is kept for the
    commit it started from (commits never change), in `<git dir>/gitliza-seal.cache`: the next
    walk stops where it meets that commit, so a `status` after a transition reads one commit.
    Kept per commit: how far down its newest seal is and how long its history is, both capped
    at `every` (+1): enough to answer for any commit above it."""
    path = common_dir(repo) / MEMO
    known = _memo(read_marshal(str(path)), every)
    oid: pygit2.Oid | None = tip
    k = 0  # commits walked, none of them a seal
    while True:
        if known is not None and oid is not None and oid.raw == known[0]:
            seal, length = min(k + known[1], every), min(k + known[2], every + 1)
            break
        if oid is None:  # the history ends within `every` commits: no seal in all of it
            seal, length = every, k
            break
        if k >= every:  # `every` commits without a seal, and the history goes on
            seal, length = every, every + 1
            break
        commit = repo.get(oid)
        if not isinstance(commit, pygit2.Commit) or is_seal_message(commit.message):
            seal, length = k, k + 1  # a seal k commits down (a longer history changes nothing)
            break
        oid = commit.parent_ids[0] if commit.parent_ids else None
        k += 1
    if known is None or known[0] != tip.raw:
        write_marshal(str(path), (_FORMAT, every, tip.raw, seal, length))
    return every if seal >= every and length > every else None


def _memo(found: Any, every: int) -> tuple[bytes, int, int] | None:
    """(commit id, seal, length) from the memo file, if it is one and was kept for `every`."""
    if (type(found) is tuple and len(found) == 5 and found[0] == _FORMAT and found[1] == every
            and type(found[2]) is bytes and type(found[3]) is int and type(found[4]) is int
            and 0 <= found[3] <= every and 0 <= found[4] <= every + 1):
        return found[2], found[3], found[4]
    return None


class Sealer:
    """Seals for `liza` (the human's seat) when a seal is due; `log` gets one line per seal, and
    one when the key is missing (not one per board change)."""

    def __init__(self, liza: Liza, log: Callable[[str], None]) -> None:
        self.liza = liza
        self.log = log
        self.told = False

    def maybe(self) -> bool:
        """Seal if due and possible; True when it sealed."""
        from gitliza.core.keyring.signers import OFF
        from gitliza.core.ops.keys import Seal
        liza = self.liza
        if liza.agent != HUMAN_ACTOR:
            return False
        board = liza.board()
        every = board.config.seal_every if board.initialized else 0
        tip = liza.store.tip()
        if not every or tip is None or behind(liza.store.repo, tip, every) is None:
            return False
        if board.config.signatures != OFF and \
                liza.store.signer().key_for(HUMAN_ACTOR) is None:
            if not self.told:
                self.told = True
                self.log(f"seal due (no seal in the last {every} commits) but the human's key "
                         f"is not at hand ({liza.store.signer().why_not(HUMAN_ACTOR)}): "
                         "`git liza seal` where it is")
            return False
        try:
            done = liza.do(Seal)
        except LizaError as e:  # a concurrent writer, a sync that failed: the next change retries
            self.log(f"seal: {e}")
            return False
        self.log(f"{done.outcome.event.summary} (seal_every {every})")
        return True
