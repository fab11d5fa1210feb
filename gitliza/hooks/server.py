"""The server hook, pre-receive: the one that enforces (client hooks are advisory). It judges every
pushed ref with the rules the clients apply (gitliza/hooks/judge.py) and adds the ones only a
server can make on the new state commits, by its own clock and its own knowledge of who pushes: no
op dated later than its clock allows (liza.maxClockSkew; a skew within it is named to the pusher in
one line), no takeover without evidence of a lease its clock says is still running, and only the
actors a pusher is bound to (gitliza/hooks/pushers.py).

pygit2, the core, the replay engine and the pusher bindings are imported inside the functions that
use them (start-up speed): the dispatcher imports this module on every hook run.
"""
from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from gitliza.hooks.judge import judge
from gitliza.hooks.repo import ZERO, open_repo, stdin_lines, store_of

if TYPE_CHECKING:
    import pygit2

    from gitliza.git.store import Store


def pre_receive(args: list[str], stdin: bytes) -> int:
    """The enforcing hook. Every refs/liza/* update must be a fast-forward and, for the state ref,
    replay commit by commit; the integration branch may only receive approved work, judged against
    the board as it will be after this push (so the state ref is checked first). One line per
    refused ref; any refusal refuses the whole push (pre-receive is all or nothing)."""
    import pygit2
    updates = [(None if o == ZERO else pygit2.Oid(hex=o), n, r) for o, n, r in stdin_lines(stdin, 3)]
    if not updates:
        return 0
    repo = open_repo(server=True)
    latest = _latest_allowed(repo)
    refused = judge(store_of(repo), updates, pending_merges=False, rewind_ok=False,
                    also=lambda store, old, new: _server_rules(store, old, new, latest),
                    attic=True)
    refused += _unbound_live(repo, updates) + _future_live(repo, updates, latest)
    for ref, why in refused:
        print(f"gitliza: refused {ref}: {' '.join(why.split())}", file=sys.stderr)
    return 1 if refused else 0


def _server_rules(store: Store, old: Any, new: str, latest: str) -> str | None:
    """Why the state commits in old..new (which replay) are refused by this server's own rules.
    `latest`: no new op may be dated after it (see _latest_allowed)."""
    return (_future_op(store, old, new, latest) or _early_takeover(store, old, new, _server_now())
            or _unbound_pusher(store, old, new))


def _new_commits(store: Store, old: Any, new: str) -> list[Any]:
    """The state commits in old..new, newest first (the range already replayed: linear)."""
    import pygit2
    commits = []
    commit = store.commit(pygit2.Oid(hex=new))
    while old is None or commit.id != old:
        commits.append(commit)
        if not commit.parents:
            break
        commit = commit.parents[0]
    return commits


def _unbound_pusher(store: Store, old: Any, new: str) -> str | None:
    """A pusher may add only commits of the actors the server binds it to (gitliza/hooks/pushers.py)."""
    from gitliza.hooks import pushers
    from gitliza.core.encoding import record
    binding = pushers.bindings(store.repo.config)
    if not binding:
        return None
    return pushers.refused(binding, pushers.pusher(os.environ),
                           ((str(c.id), record.parse(c.message).op.actor)
                            for c in reversed(_new_commits(store, old, new))))


def _unbound_live(repo: pygit2.Repository, updates: list[tuple[Any, str, str]]
                  ) -> list[tuple[str, str]]:
    """Only the agent itself moves its live ref and its wip refs: under pusher bindings, a pusher
    may move refs/liza/live/<agent> and refs/liza/wip/<task>/<agent> only for an agent it is
    bound to."""
    from gitliza.hooks import pushers
    from gitliza.hooks.repo import LIVE_REFS
    from gitliza.services.wip import WIP, parse
    lives = [(n, r[len(LIVE_REFS):], r) for _o, n, r in updates if r.startswith(LIVE_REFS)]
    lives += [(n, p[1], r) for _o, n, r in updates if (p := parse(r, WIP)) is not None]
    binding = pushers.bindings(repo.config) if lives else {}
    if not binding:
        return []
    who = pushers.pusher(os.environ)
    out = []
    for new, agent, ref in lives:
        why = pushers.refused(binding, who, [(new, agent)])
        if why is not None:
            out.append((ref, why.replace("state commit", "live record", 1)))
    return out


def _future_live(repo: pygit2.Repository, updates: list[tuple[Any, str, str]], latest: str
                 ) -> list[tuple[str, str]]:
    """A renewal dated after `latest` is refused like an op (_future_op): its clock is a fault."""
    from gitliza.core import clock
    from gitliza.git import liveref
    from gitliza.hooks.repo import LIVE_REFS
    out = []
    for _old, new, ref in updates:
        r = liveref.read(repo, new) if ref.startswith(LIVE_REFS) else None
        if r is not None and r.heartbeat > latest:
            ahead = clock.to_epoch(r.heartbeat) - clock.to_epoch(_server_now())
            out.append((ref, f"this machine's clock is {ahead} s ahead of origin's (the renewal "
                             f"{new[:12]} is dated {r.heartbeat}; origin's clock allows up to "
                             f"{latest}, git config liza.maxClockSkew): fix this machine's clock"))
    return out


def _server_now() -> str:
    """The server's own clock. Never LIZA_NOW: over a local or file:// push the pusher's
    environment reaches pre-receive, and the pusher must not be able to move the server's clock."""
    from gitliza.services.api import now_utc
    return now_utc(allow_override=False)


def _max_skew(repo: pygit2.Repository) -> int:
    """`liza.maxClockSkew` (git config of the bare repository), default core/presence/leasemarks.MAX_SKEW."""
    from gitliza.core.presence.leasemarks import MAX_SKEW
    try:
        return max(int(str(repo.config["liza.maxClockSkew"])), 0)
    except (KeyError, ValueError):
        return MAX_SKEW


def _latest_allowed(repo: pygit2.Repository) -> str:
    """No new op may be dated more than `liza.maxClockSkew` seconds (default 900) after the
    server's clock. Leases no longer hang on op times (each observer judges them by its own clock,
    core/presence/leasemarks.py), so the bound no longer has to be tight: it tolerates the skew a team
    lives with (a fast clone's ops are accepted, and nobody's ops queue behind them) and refuses
    a clock so far off that it is a fault, naming it. Older ops are fine: a machine that was
    offline replays its ops with their original times."""
    from gitliza.core import clock
    return clock.plus(_server_now(), _max_skew(repo))


def _future_op(store: Store, old: Any, new: str, latest: str) -> str | None:
    """Why the new commits are refused for their dates (None: they are not); on an accepted
    push, one line for the pusher when its newest op is dated ahead of this clock by more than
    WARN_SKEW (git relays it as `remote: gitliza: note: ...`: sync repeats it)."""
    from gitliza.core import clock
    from gitliza.core.presence.leasemarks import WARN_SKEW
    from gitliza.git.remotes.pushresults import NOTE
    now = clock.to_epoch(_server_now())
    newest = 0
    for commit in _new_commits(store, old, new):
        for line in commit.message.splitlines():
            if not line.startswith("Liza-Time: "):
                continue
            when = line[11:].strip()
            ahead = clock.to_epoch(when) - now
            if when > latest:
                return (f"this machine's clock is {ahead} s ahead of origin's (state commit "
                        f"{str(commit.id)[:12]} is dated {when}; origin's clock allows up to "
                        f"{latest}, git config liza.maxClockSkew): fix this machine's clock")
            newest = max(newest, ahead)
    if newest > WARN_SKEW:
        print(f"{NOTE}this machine's clock is {newest} s ahead of origin's (its ops are "
              "accepted, and leases are judged by each clone's own clock; fix it before it "
              "passes git config liza.maxClockSkew)", file=sys.stderr)
    return None


def _early_takeover(store: Store, old: Any, new: str, now: str) -> str | None:
    """A takeover (a claim of a CLAIMED task, a claim-review over someone's review lease) must
    find the lease expired by the server's clock too. The op's own time decides in the core, and
    a legitimate takeover always happened before the push, so by now its lease has expired; one
    that has not was dated ahead to fake the expiry."""
    from gitliza.core.encoding import record
    from gitliza.core.presence import takeovers
    from gitliza.git import liveref
    mine = liveref.read_all(store.repo)  # the renewals pushed to this server
    for c in reversed(_new_commits(store, old, new)):
        op = record.parse(c.message).op
        if op.NAME not in takeovers.TAKEOVER_OPS or not c.parents:
            continue
        # The lease as the server knows it: the board's, the renewals the op itself judged by,
        # and the holder's renewals pushed here (a claim that leaves out a renewal it was shown,
        # or never fetched one, does not take over early).
        before = store.board_at(store.commit(c.parents[0].id))
        if getattr(op, "takeover", None) is not None:
            # Its wait, on its claimer's clock, was checked by the replay; the lease it judged
            # must still be the newest this server holds (a renewal the claimer never fetched
            # changes the mark), never this server's clock against its claimer's.
            o = takeovers.outrun(before, op, mine)
            if o is not None:
                return (f"state commit {str(c.id)[:12]} ({op.NAME} {o.task}) "
                        f"{takeovers.OUTRUN_REFUSAL}: it judged {o.judged}, this server holds a "
                        f"renewal until {o.until}")
            continue
        taken = takeovers.lease_taken(before, op, mine)
        if taken is not None and taken[1] > now:
            return (f"state commit {str(c.id)[:12]} ({op.NAME} {taken[0].id}) takes over a lease "
                    f"that runs until {taken[1]} by this server's clock ({now})")
    return None
