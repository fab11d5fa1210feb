"""Replay verification: the one engine behind `git liza verify`, every enforcing hook and what sync
adopts, and the integration branch rule the hooks and sync judge branches by.

The package, one job per module:
- engine.py: replaying state commits (`replay`, `verify_commit`, `verify`, VerifyFailure);
- approvals.py: the integration branch rule (Approvals, `unapproved`, `describe`): what may reach
  the integration branch, judged against the board;
- legacy.py: the one legacy encoding accepted, and the doctor's view of it;
- importcommit.py: checking an import commit (the other genesis) against its digest.
Nothing is re-exported here: a hook judging a branch loads approvals.py without the engine.
"""
