"""`rekey`: the human rotates or revokes an actor's signing key (core/keyring/signers.py)."""
from __future__ import annotations

from dataclasses import dataclass

from gitliza.core.keyring import signers as keys
from gitliza.core.ops.base import Ctx, Op, register_op, replace
from gitliza.core.states import HUMAN_ACTOR
from gitliza.errors import NotFound, ValidationError


@register_op
@dataclass(frozen=True, kw_only=True)
class Rekey(Op):
    NAME = "rekey"
    agent: str  # an agent id, or `human` for the human's own key
    key: str | None = None  # the new public key; None revokes without a successor
    revoke: bool = False

    def run(self, ctx: Ctx) -> None:
        ctx.allowed()  # only the human hands out keys (core/states.py BOARD_OPS)
        if (self.key is None) != self.revoke:
            raise ValidationError("rekey needs exactly one of --key KEY (rotate) or --revoke")
        board = ctx.board
        if self.agent == HUMAN_ACTOR:
            old = board.config.human_keys
        else:
            agent = ctx.agent(self.agent)
            if agent is None:
                raise NotFound(f"no agent {self.agent!r}", hint="`git liza status` lists them")
            old = agent.keys
        if self.revoke and keys.current(old) is None:
            raise ValidationError(f"{self.agent} has no current key to revoke")
        new = None if self.key is None else keys.canonical_key(self.key, board, self.agent)
        if self.agent == HUMAN_ACTOR and new is None and \
                board.config.signatures == keys.REQUIRED:
            raise ValidationError("the human's key cannot be revoked while signatures = "
                                  "required (nobody could sign the human's next op)",
                                  hint="rotate it with --key, or set signatures to warn first")
        updated = keys.rotate(old, new, self.time)
        if self.agent == HUMAN_ACTOR:
            ctx.put("config", "", replace(board.config, human_keys=updated))
        else:
            assert agent is not None
            ctx.put_agent(replace(agent, keys=updated))
        what = "revoke" if new is None else "rotate" if keys.current(old) else "first key"
        ctx.summary = f"rekey {self.agent} ({what}) by {self.actor}"


@register_op
@dataclass(frozen=True, kw_only=True)
class Seal(Op):
    """`seal`: the human vouches for the history up to here (a history checkpoint, not the
    sprint's `checkpoint`). The board does not change: the commit's tree is its parent's, and
    the commit, signed by the human's key where signatures are on, binds the whole chain below it
    (each commit names its parent by hash). A new clone verifies from the newest seal instead of
    the root (gitliza/services/verify/seals.py, docs/multi-machine.md "Joining a long board");
    `verify --full` still replays everything, seals included, as ordinary ops."""

    NAME = "seal"

    def run(self, ctx: Ctx) -> None:
        ctx.allowed()  # only the human speaks for the history (core/states.py BOARD_OPS)
        if not ctx.board.initialized:
            raise ValidationError("there is no board to seal", hint="`git liza init GOAL` first")
        ctx.summary = f"seal by {self.actor}"
