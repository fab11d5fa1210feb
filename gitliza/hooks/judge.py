"""The rules every hook applies to a set of ref updates, client and server alike: refs/liza/state
only moves to a continuation that replays commit by commit and is never deleted, a live ref
(refs/liza/live/<agent>) only takes a newer renewal of its own agent (services/verify/live.py), a
wip ref (refs/liza/wip/<task>/<agent>) only a snapshot of that agent while it holds the task, the
other refs/liza/* refs only fast-forward, and the integration branch only receives approved work, judged
against the board the same updates produce. The server adds its own rules on the new state commits
(gitliza/hooks/server.py) through `judge`'s `also`.

pygit2 and the replay engine are imported inside the functions (start-up speed): the dispatcher
imports this module on every hook run, and most runs judge nothing.
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Callable

from gitliza.hooks.repo import LIVE_REFS, LIZA_REFS, STATE_REF, ZERO, board_at, integration_ref, ref_target

if TYPE_CHECKING:
    import pygit2

    from gitliza.core.board import Board
    from gitliza.git.store import Store

# (store, old state commit or None, new state commit hex) -> why the new commits are refused, or
# None; run only on a range that replayed.
StateRule = Callable[["Store", Any, str], "str | None"]


ATTIC_REFS = "refs/liza-attic/"
WIP_REFS = "refs/liza/wip/"  # work-in-progress snapshots: services/wip.py


def _check_attic(store: Store, old: Any, new: str, ref: str) -> str | None:
    """An attic entry (services/attic.py) is made once and never changed: its ref must
    peel to the commit its name says; another value over an existing entry is refused, and so is
    a deletion before `config.attic_keep` days have passed since it was kept (this clock)."""
    import time

    import pygit2

    from gitliza.services import attic
    parsed = attic.parse_name(ref)
    if parsed is None:
        return None if ref.startswith(ATTIC_REFS + "state/") else \
            f"not an attic entry's name (refs/liza-attic/<task>/<commit>)"
    repo = store.repo
    if new == ZERO:
        if old is None:
            return None
        when = attic.kept_at(repo, old, parsed[1])
        keep = store.board()[0].config.attic_keep if store.tip() is not None else 30
        if when is not None and not attic.expired(when, keep, time.time()):
            return f"an attic entry is kept {keep} days (config attic_keep): not deleted before"
        return None
    if old is not None and str(old) != new:
        return "an attic entry never changes: it is made once, under its commit's name"
    if attic.kept_at(repo, pygit2.Oid(hex=new), parsed[1]) is None:
        return f"not the attic entry its name says: it must lead to commit {parsed[1][:12]}"
    return None


def judge(store: Store, updates: list[tuple[Any, str, str]], *, pending_merges: bool,
          rewind_ok: bool, also: StateRule | None = None,
          attic: bool = False) -> list[tuple[str, str]]:
    """(ref, reason) for every refused update among `updates` = [(old oid or None, new hex, ref)],
    `old` being the trusted value the ref has now. The state ref is judged first: the integration
    branch is then judged against the board this very update produces (a merge moves both)."""
    import pygit2
    repo = store.repo
    refused: list[tuple[str, str]] = []
    state = store.tip()
    for old, new, ref in updates:
        if ref.startswith(ATTIC_REFS):
            # On a push only (`attic`): by hand, in one's own clone, an entry is one's own.
            why = _check_attic(store, old, new, ref) if attic else None
            if why:
                refused.append((ref, why))
            continue
        if not ref.startswith(LIZA_REFS) or ref.startswith(WIP_REFS):
            continue  # a wip ref: judged below, against the board this push leaves
        if new == ZERO:
            refused.append((ref, f"deleting {ref} is never allowed"))
        elif ref == STATE_REF:
            why = _check_state(store, old, new, also)
            if why:
                refused.append((ref, why))
            else:
                state = pygit2.Oid(hex=new)
        elif ref.startswith(LIVE_REFS):
            continue  # judged below, against the board this push leaves
        elif old is not None and not repo.descendant_of(pygit2.Oid(hex=new), old):
            refused.append((ref, f"not a fast-forward of {str(old)[:12]}"))
    lives = [(o, n, r) for o, n, r in updates if r.startswith(LIVE_REFS) and n != ZERO]
    wips = [(n, r) for _o, n, r in updates if r.startswith(WIP_REFS)]
    if wips:
        from gitliza.services import wip
        after = board_at(store, state) if state is not None else None
        refused += [(r, why) for n, r in wips
                    if (why := wip.check(repo, after, r, n, n == ZERO)) is not None]
    if lives:
        from gitliza.services.verify.live import check_live
        after = board_at(store, state) if state is not None else None
        for old, new, ref in lives:
            why = check_live(repo, after, ref, old, new)
            if why:
                refused.append((ref, why))
    if state is None:
        return refused
    board = board_at(store, state)
    ib = integration_ref(board)
    alongside = tuple(pygit2.Oid(hex=n) for _o, n, r in updates
                      if r.startswith("refs/heads/") and r != ib and n != ZERO)
    for old, new, ref in updates:
        if ref == ib:
            why = _check_integration(repo, board, ref, old, new, pending_merges=pending_merges,
                                     rewind_ok=rewind_ok, alongside=alongside if old is None else ())
            if why:
                refused.append((ref, why))
    return refused


def _check_state(store: Store, old: Any, new: str, also: StateRule | None) -> str | None:
    """Why moving refs/liza/state from `old` (trusted; None: no state yet) to `new` is refused.
    `also` (server only): its own rules on the new commits, once they replay."""
    from gitliza.services.verify.engine import VerifyFailure, replay
    if new == ZERO:
        return f"deleting {STATE_REF} is never allowed (it is the board's whole history)"
    try:
        report = replay(store, new, old)
    except VerifyFailure as e:
        return str(e)
    for oid, op, actor, why in report.unsigned:  # signatures = warn: reported, accepted
        print(f"gitliza: warning: state commit {oid[:12]} ({op}): actor {actor}: {why}",
              file=sys.stderr)
    return None if also is None else also(store, old, new)


def _check_integration(repo: pygit2.Repository, board: Board, ref: str, old: Any, new: str,
                       *, pending_merges: bool, rewind_ok: bool, alongside: tuple[Any, ...] = ()
                       ) -> str | None:
    """Why moving the integration branch from `old` (None: creation) to `new` is refused."""
    import pygit2

    from gitliza.services.verify.approvals import Approvals, describe, unapproved
    if new == ZERO:
        return "deleting the integration branch is not allowed"
    new_oid = pygit2.Oid(hex=new)
    if new_oid not in repo:
        return f"{new[:12]} is not in this repository"
    if old is None:
        # A new integration branch starts from existing history: anything already on another branch
        # (or on one created by the same push: a first `git push --all`) is not brought in by it.
        hide = [t for n in repo.references if n.startswith("refs/heads/") and n != ref
                if (t := ref_target(repo, n)) is not None] + list(alongside)
    else:
        if old != new_oid and not rewind_ok and not repo.descendant_of(new_oid, old):
            return f"not a fast-forward of {str(old)[:12]}: merged work would be dropped"
        hide = [old]
    if old != new_oid:  # a `.liza` at its top would land in the main worktree's .liza/
        from gitliza.core import treerules
        from gitliza.git.treecheck import liza_entry
        name = liza_entry(repo, new_oid)
        if name is not None:
            return treerules.liza_entry_line(ref, new, name)
    bad = unapproved(repo, Approvals.of(board), new_oid, hide, pending_merges=pending_merges)
    if bad:
        return (f"{ref} would receive {describe(bad)}; only approved review commits (merged by "
                "`git liza merge`) go there")
    return None
