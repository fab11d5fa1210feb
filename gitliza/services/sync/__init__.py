"""Sharing the board with a git remote: fetch, reconcile, push (DESIGN.md section 4).

    from gitliza.services.sync.engine import sync, pull, push
    report = sync(store)                 # the configured remote, else origin
    report.dropped                       # local ops that no longer applied, with their reasons

One round: fetch `refs/liza/*` (transport.py: the git executable, or in process for a plain bare
remote on this machine, gitliza/git/remotes/direct.py), then compare the local tip L
with the fetched remote tip R:

- R is an ancestor of L: push L with the lease "the remote is still at R";
- L is an ancestor of R: move the local ref to R by compare-and-swap (a fast-forward);
- diverged: the local-only commits (merge base .. L, oldest first) are decoded from their
  trailers and re-applied one by one on R with the core's `apply`. An op that no longer applies
  (another machine claimed the task first, it was abandoned meanwhile...) is dropped with the
  error's message as its reason. The local ref then moves by CAS from L to the rebuilt chain, and
  the rebuilt tip is pushed with the lease R.

A lost race anywhere (a local writer moved L, another machine moved R) starts a new round; after
`rounds` rounds the sync gives up with ConcurrencyConflict (exit 2). The remote's order always
wins and nothing is ordered by wall clock: replayed ops keep their recorded Liza-Time. A replayed
claim takes over nobody's lease unless its own evidence (judged on its clock when it was made)
still holds on the remote's board (core/presence/leasemarks.py); skew.py names a skewed clock and refreshes
this clone's lease sightings after every sync.

Branches (docs/multi-machine.md): the same fetch mirrors the remote's integration branch and task
branches (`refs/heads/liza/*` -> refs/remotes/<remote>/liza-tasks/*). Once the board is reconciled,
the local integration branch is created or fast-forwarded to the remote's (never when it diverged,
never over a dirty checkout), and the push is ONE atomic push of the state ref plus the integration
branch (when it is ahead with approved work only: a merge) and the task branches whose tip is the
board's review_commit of a submitted task (READY_FOR_REVIEW, APPROVED), each with its own lease.
The server hook judges the integration branch against the board after the push, so a merge must
reach it together with its MERGED record.

Safety: the local ref only ever moves by CAS, to the remote tip or to a chain built on the remote
tip that contains every local op that still applies. If anything fails midway the ref stays where
it was, and the commits written for an abandoned attempt are unreachable garbage.

The package, one job per module:
- engine.py: the rounds (sync, pull, push, pull_branches): fetch, verify what came, reconcile, push;
- replay.py: re-applying local ops on the remote's board (and, for auto-sync, what became of an op);
- branches.py: the integration branch and the task branches that travel with the board;
- standdown.py: the worktree clean-up of a claim another machine won;
- boardref.py: moving the local board ref by compare-and-swap (and taking back an unshared op);
- report.py: what a sync did (SyncReport, Replayed, Dropped, the actions);
- remote.py: which remote a clone shares with, and where git runs for it;
- renewalpush.py: one renewal off the audit chain shared (its live ref pushed alone).
Nothing is re-exported here: every lifecycle command imports remote.py to learn whether a remote
is configured, and a clone that works alone must not pay for loading the engine.
"""
