"""The rule for a move of `refs/liza/live/<agent>` (core/presence/renewals.py, git/liveref.py), which the
client hooks and the server hook apply like the board's: the new commit is a well-formed renewal
(one `live.toml`, no parent) of the agent the ref names, a registered agent, for the supervisor
generation that holds the id on the board (or none); it is not older than the renewal it
replaces (no replaying an old one); and where the board's signatures policy is on, it is signed by
the agent's current key (`required`: refused otherwise; `warn`: said and accepted). Who may push
it is the server's own rule (pushers bound to agents, gitliza/hooks/server.py).
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from gitliza.core.keyring import signers

from gitliza.core.presence import renewals
from gitliza.git import liveref

if TYPE_CHECKING:
    import pygit2

    from gitliza.core.board import Board


def check_live(repo: pygit2.Repository, board: Board | None, ref: str, old: Any,
               new: str, *, quiet: bool = False) -> str | None:
    """Why moving the live ref `ref` from `old` (trusted; None: new) to `new` is refused, judged
    against `board` (the board as it is after the same push)."""
    agent = ref[len(liveref.LIVE_PREFIX):]
    r = liveref.read(repo, new)
    if r is None:
        return f"{new[:12]} is not a live record (a root commit holding only live.toml)"
    if r.agent != agent:
        return f"{new[:12]} is a renewal of {r.agent}, not of {agent}"
    if board is None or not board.initialized or board.agent(agent) is None:
        return f"{agent} is not a registered agent on the board"
    sup = board.get("supervisors", agent)
    held = sup.generation if sup is not None else None
    if r.generation != held and not (r.generation is None and held is None):
        if r.generation is None or held is None or r.generation < held:
            return (f"a renewal for supervisor generation {r.generation} of {agent}, which "
                    f"generation {held} holds now")
        return f"a renewal for generation {r.generation} of {agent}, which the board never gave"
    prev = liveref.read(repo, old) if old is not None else None
    if prev is not None and renewals.order(r) < renewals.order(prev):
        return (f"an older renewal ({r.heartbeat}, generation {r.generation}) than the one it "
                f"replaces ({prev.heartbeat}, generation {prev.generation})")
    return _signature(repo, board, agent, new, quiet)


def _signature(repo: pygit2.Repository, board: Board, agent: str, new: str,
               quiet: bool) -> str | None:
    policy = signers.policy(None, board)
    if policy == signers.OFF:
        return None
    from gitliza.core.keyring import sshsig  # cryptography: loaded only for a board that signs
    signer, bad = sshsig.commit_signer(repo[new].read_raw())
    want = signers.current(signers.keys_of(board, agent))
    if bad is None and signer is not None and want is not None and signer == want.key:
        return None
    why = bad or ("unsigned" if signer is None else "not signed by its current key")
    problem = f"renewal {new[:12]} of {agent}: {why}"
    if policy == signers.REQUIRED:
        return problem + " (signatures = required)"
    if not quiet:
        print(f"gitliza: warning: {problem}", file=sys.stderr)
    return None
