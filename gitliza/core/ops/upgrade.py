"""`upgrade`: the board moves to a newer storage format (core/encoding/versions.py), in place.

One commit on the chain, like any transition: its trailers say from which format to which
(`Liza-Args: {"source":1,"target":2}`), its changes are the migrations' (the `format` blob, and
whatever entities a migration rewrites), and `verify` replays it, so a board is format 1 up to
that commit and format 2 after, with every earlier commit (and its signature) untouched.

Who may write it: any actor the board knows (the human, or a registered agent). An upgrade
changes no protocol state; it is written by whichever newer gitliza writes first (the first
write upgrades, gitliza/git/store.py), and refusing it to an agent would only leave that
agent's gitliza unable to write at all.
"""
from __future__ import annotations

from dataclasses import dataclass

from gitliza.core.encoding import versions
from gitliza.core.ops.base import Ctx, Op, register_op
from gitliza.errors import ValidationError


@register_op
@dataclass(frozen=True, kw_only=True)
class Upgrade(Op):
    NAME = "upgrade"
    source: int  # the board's format before (must be what the board holds)
    target: int  # after: this gitliza's FORMAT_VERSION when it writes the op

    def run(self, ctx: Ctx) -> None:
        ctx.role()  # the actor must be the human or a registered agent
        have = ctx.board.format_version
        if have != self.source:
            raise ValidationError(f"upgrade from storage format {self.source}, but the board is "
                                  f"in format {have}")
        ctx.changes.update(versions.migrate(ctx.board, self.source, self.target))
        ctx.summary = f"upgrade storage format {self.source} -> {self.target} by {self.actor}"
