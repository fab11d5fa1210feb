"""Sealing as the team runs: a board's history stays cheap to join only where someone
seals it (docs/multi-machine.md, "Joining a long board"), and nobody remembers to. `git liza team`
and `git liza watch` run as the human, so they seal whenever the newest seal is `seal_every`
commits or more below the tip, where the human's key is at hand (or signatures are off: a seal
is then unsigned, as every commit is). Where the key is not at hand they say so once; `status`
says when the newest seal is far behind (`behind`: light to import, `status` calls it)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import pygit2

from gitliza.core.encoding.record import is_seal_message
from gitliza.core.states import HUMAN_ACTOR
from gitliza.errors import LizaError

if TYPE_CHECKING:
    from gitliza.services.api import Liza


def behind(repo: pygit2.Repository, tip: pygit2.Oid, every: int) -> int | None:
    """`every` when the `every` commits at and below `tip` hold no seal and the history goes on
    below them (the newest seal, if any, is at least that far down); None when a seal is within
    them, or the whole history is shorter (a young board needs none). A walk of `every` commits
    at most."""
    oid: pygit2.Oid | None = tip
    for _ in range(every):
        if oid is None:
            return None
        commit = repo.get(oid)
        if not isinstance(commit, pygit2.Commit) or is_seal_message(commit.message):
            return None
        oid = commit.parent_ids[0] if commit.parent_ids else None
    return every if oid is not None else None


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
