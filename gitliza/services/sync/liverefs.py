"""The live refs a sync pushes (refs/liza/live/*, git/liveref.py): every local renewal newer than
the remote's copy, each with its own lease (the copy this sync just fetched), in the same atomic
push as the board. A live ref is last-writer-wins per agent and never replayed: where the remote's
copy is as new or newer (the same agent renewed on another clone, a later generation took the id
over), ours is not pushed; one that the board this push leaves would refuse (a superseded
generation, a clone that cannot sign it) stays here rather than fail the whole push.
Fetching needs nothing: the fetch mirrors the remote's refs/liza/* (live refs included) into
refs/remotes/<ns>/liza/*, where readers find them (`liveref.read_all`)."""
from __future__ import annotations

import pygit2

from gitliza.core.presence import renewals
from gitliza.git import liveref
from gitliza.git.remotes import transport
from gitliza.git.store import Store


def live_updates(store: Store, prefix: str, tip: pygit2.Oid | None) -> list[transport.RefUpdate]:
    """The live refs to push along with the board at `tip`; `prefix`: refs/remotes/<ns>/."""
    from gitliza.services.verify.live import check_live
    repo = store.repo
    out: list[transport.RefUpdate] = []
    board = None
    for name in list(repo.references):
        if not name.startswith(liveref.LIVE_PREFIX):
            continue
        local = liveref.target(repo, name)
        theirs = liveref.target(repo, prefix + "liza/live/" + name[len(liveref.LIVE_PREFIX):])
        if local is None or local == theirs:
            continue
        mine = liveref.read(repo, local)
        shared = liveref.read(repo, theirs) if theirs is not None else None
        if mine is None or (shared is not None and renewals.order(shared) >= renewals.order(mine)):
            continue
        if board is None:
            board = store.board_at(store.commit(tip) if tip is not None else None)
        if check_live(repo, board, name, theirs, local, quiet=True) is not None:
            continue
        out.append(transport.RefUpdate(name, local, theirs, fast_forward=False))
    return out
