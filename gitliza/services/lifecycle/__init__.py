"""The task lifecycle on disk and on the board: claim into a worktree, submit, review, merge, and
the recovery of whatever a crash leaves between the two (`doctor`).

The pure core decides every board rule (leases, iterations, review cycles, exhaustion); this package
is the shell around it. It makes the git side (worktrees, branches, the integration branch) agree
with the board, in an order that never leaves a CLAIMED task without its worktree:

    claim  = validate (dry-run the core op) -> create the worktree -> commit CLAIMED by CAS
             (on failure: remove the worktree again)
    merge  = validate -> merge review_commit into the integration branch by CAS -> commit MERGED
             (a crash in between is finished by `doctor --fix`)

Two refs cannot be moved atomically, so each gap is either undone on failure or recognised by
`doctor`. Local mutual exclusion per task (`task_lock`, gitliza/git/tasklocks.py) keeps concurrent
commands of this machine out of each other's gaps: a second claimer of the same task, `doctor`,
`merge` and the cleanup after abandon all wait for (or skip) a task whose claim is in flight.

One module per stage, each importing only the shared pieces below it:

    claim.py    claim, release (ClaimResult)        review.py  submit, claim_review, verdict
    merge.py    merge (MergeResult, MergeFailed)    doctor.py  doctor (DoctorReport)
    cleanup.py  the worktree clean-up after release, merge and the releasing ops (cleanup_after)
    remote.py   pulling from the team remote first, fetching a review commit made elsewhere
    integration.py  the integration branch (ensure_integration_branch, ...)
    common.py   Done, warn, the core dry run

What sync keeps of a task's work lies a floor below both (docs/architecture.md, the floors of
services/): services/attic.py (refs/liza-attic: work kept before a branch or worktree goes),
services/wip.py (work-in-progress snapshots) and services/locations.py (main_root, task_dir).

There is no package face: importers take a name from the stage module that defines it, so that
importing one stage does not import the others (start-up), and a monkeypatch of a name reaches the
module that uses it. Library API, usable in-process (the CLI in gitliza/cli/commands/lifecycle.py
is a thin layer):

    from gitliza.services.lifecycle.claim import claim
    from gitliza.services.lifecycle.review import submit
    liza = Liza.open(".", agent="coder-1")
    res = claim(liza)                    # ClaimResult: task, worktree, branch, base_commit, ...
    submit(liza, res.task)               # worktree HEAD becomes review_commit
"""
