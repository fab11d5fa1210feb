"""Work and review commands: claim, release, submit, claim-review, verdict, merge, doctor.

Thin: the logic is in gitliza/services/lifecycle/ (a library the supervisor uses in-process); these
functions print what it did, in the style of commands/board.py, and return the exit code.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from gitliza.services.lifecycle import claim as claiming
if TYPE_CHECKING:  # the types only: `attic` imports what it runs
    from pygit2 import Oid

    from gitliza.services.api import Liza
from gitliza.services.lifecycle import doctor as doctoring
from gitliza.services.lifecycle import merge as merging
from gitliza.services.lifecycle import review as reviewing
from gitliza.cli.commands import Env
from gitliza.cli.commands.board import report
from gitliza.errors import EXIT_INCONSISTENT, EXIT_VALIDATION, LizaError
from gitliza.cli.output import err
from gitliza.services.transitions import (claim_extra, claim_refusal, claim_review_extra,
                                          merge_extra, release_extra, submit_extra)


def _notices(env: Env, notes: tuple[str, ...], already: tuple[str, ...]) -> None:
    """Notices the transition report did not print already (disk-side ones)."""
    if env.json:
        return
    for n in notes:
        if n not in already:
            env.out.notice(n)


def claim(env: Env, task: str | None) -> int:
    res = claiming.claim(env.liza(), task)
    report(env, res.committed, claim_extra(res))
    if not env.json and res.worktree is not None:
        env.out.line(f"worktree {res.worktree} (branch {res.branch}, base "
                     f"{str(res.base_commit)[:12]}{', reused' if res.reused else ''})")
    _notices(env, res.notices, res.committed.outcome.notices)
    refused = claim_refusal(res)
    if refused:
        err(refused)
        return EXIT_VALIDATION
    return 0


def release(env: Env, task: str) -> int:
    done = claiming.release(env.liza(), task)
    report(env, done.committed, release_extra(done))
    _notices(env, done.notices, done.committed.outcome.notices)
    return 0


def submit(env: Env, task: str, commit: str | None) -> int:
    done = reviewing.submit(env.liza(), task, commit)
    return report(env, done.committed, submit_extra(done))


def claim_review(env: Env, task: str | None) -> int:
    done = reviewing.claim_review(env.liza(), task)
    extra = claim_review_extra(done)
    report(env, done.committed, extra)
    if not env.json and done.worktree is not None:
        env.out.line(f"review {extra['review_commit']} in {done.worktree}")
    return 0


def verdict(env: Env, task: str, decision: str, reason: str | None, commit: str | None,
            evidence: list[str] | None = None) -> int:
    done = reviewing.verdict(env.liza(), task, decision, reason, commit, evidence or ())
    board = done.committed.outcome.board
    t = board.task(task)
    extra = {}
    if t is not None and t.review_votes:
        from gitliza.core import quorum  # only then: an approval's votes
        extra = {"votes": quorum.tally(board.config, t)}
    return report(env, done.committed, extra)


def merge(env: Env, task: str, sandbox: str | None = None) -> int:
    from gitliza.sandbox import box, treerun
    runner = treerun.runner(box.parse(sandbox))  # the merged tree's test: never as the human
    try:
        res = merging.merge(env.liza(), task, runner=runner)
    except merging.MergeFailed as e:
        # The INTEGRATION_FAILED transition was recorded: show it, then the CLI prints the
        # one-line reason and exits 3.
        if env.json:
            report(env, e.committed, {"result": "failed", "reason": e.message})
        raise
    m = res.merge
    report(env, res.committed, merge_extra(res))
    if not env.json:
        env.out.line(f"{res.branch}: {m.kind} {str(m.old)[:12]} -> {str(m.new)[:12]}"
                     f"{' (integration test passed)' if m.integration_tested else ''}")
    _notices(env, res.notices, res.committed.outcome.notices)
    return 0


def doctor(env: Env, fix: bool) -> int:
    rep = doctoring.doctor(env.liza(), fix)
    remaining = rep.remaining
    # A board with missing objects cannot be read for its notes (doctor said what is missing).
    unreadable = any(p.kind == "missing-objects" and p.subject.startswith("refs/liza/")
                     for p in rep.problems)
    legacy = [] if unreadable else _legacy_notes(env) + _view_edited(env, fix)
    held = [] if unreadable else _held_by_stopped(env)
    if env.json:
        env.out.json({
            "problems": [p.__dict__ for p in rep.problems], "busy": rep.busy,
            "elsewhere": rep.elsewhere,
            "fixed": sum(p.fixed for p in rep.problems), "remaining": len(remaining),
            "legacy": legacy, "held_without_supervisor": held})
    else:
        for line in legacy + held:
            env.out.line(line)
        for p in rep.problems:
            state = "fixed" if p.fixed else ("fixable with --fix" if p.fixable and not fix
                                             else "NOT fixed")
            err = f" ({p.error})" if p.error else ""
            env.out.line(f"{p.kind} {p.subject}: {p.detail} [{state}]{err}")
        for tid in rep.busy:
            env.out.line(f"busy {tid}: a claim or merge is in progress; not examined")
        for line in rep.elsewhere:
            env.out.line(f"elsewhere {line}")
        if not rep.problems:
            env.out.line("doctor: board and disk agree")
    return EXIT_INCONSISTENT if remaining else 0


def _held_by_stopped(env: Env) -> list[str]:
    """Tasks still held by an agent whose supervisor stopped or is gone: board and disk agree,
    but nobody works on them until the lease ends or the supervisor is started again (a note,
    not a problem: restarting resumes the task)."""
    from gitliza.core.presence.supervision import of_board
    liza = env.liza()
    now = liza.now()
    return [line for s in of_board(liza.board(), now) if (line := s.line(now))]


def _view_edited(env: Env, fix: bool) -> list[str]:
    """A hand edit of `.liza/state.yaml` (a note, not a problem of the board: the board never
    changed); --fix rewrites the view from the board, keeping the edited copy."""
    from gitliza.services.views.viewstamp import view_edit
    store = env.liza().store
    edit = view_edit(store)
    if edit is None:
        return []
    if not fix:
        return [f"edited-view {edit.message()} [fixable with --fix]"]
    from gitliza.services.views.materialize import edited_notice, materialize
    return [f"edited-view {edited_notice(materialize(store))} [fixed]"]


def _legacy_notes(env: Env) -> list[str]:
    """Board entries an older gitliza wrote in an encoding that no longer replays byte for byte but
    that verify accepts by name (not problems: nothing to fix, the history stays as it is)."""
    from gitliza.services.verify.legacy import LEGACY_ANOMALY, legacy_anomalies
    return [f"legacy-anomaly anomalies/{key}: {LEGACY_ANOMALY}; `git liza verify` accepts and names "
            "the commit that wrote it, nothing to repair" for key in legacy_anomalies(env.liza().board())]


def attic(env: Env, task: str | None, restore: str | None, into: str | None) -> int:
    """List the attic's entries (of TASK), or restore one into a new worktree."""
    from gitliza.services import attic as kept
    from gitliza.services.locations import main_root
    liza = env.liza()
    if restore is not None:
        if task is None:
            err("attic --restore needs the TASK (`git liza attic` lists the entries)")
            return EXIT_VALIDATION
        target = Path(into) if into else main_root(liza.repo) / ".worktrees" / \
            f"attic-{task}-{restore[:12]}"
        e = kept.restore(liza.repo, task, restore, target.resolve())
        if env.json:
            env.out.json({"restored": e.ref, "worktree": str(target.resolve())})
        else:
            env.out.line(f"restored {e.ref} into {target.resolve()} (a new worktree, detached "
                         f"at {e.oid[:12]}: copy or cherry-pick what you need, then "
                         f"`git worktree remove {target}`)")
        return 0
    found = kept.entries(liza.repo, task)
    if env.json:
        tip = _integration_tip(liza)
        env.out.json([{"ref": e.ref, "task": e.task, "commit": e.oid, "time": e.when,
                       "subject": e.subject, "merged": kept.merged(liza.repo, e, tip)}
                      for e in found])
        return 0
    if not found:
        env.out.line("the attic is empty" + (f" for {task}" if task else ""))
    tip = _integration_tip(liza)
    for e in found:
        when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(e.when))
        done = "  (merged since: nothing to restore)" if kept.merged(liza.repo, e, tip) else ""
        env.out.line(f"{e.task}  {e.oid[:12]}  {when}Z  {e.subject}{done}")
    return 0


def _integration_tip(liza: Liza) -> Oid | None:
    """The integration branch's tip, which `attic` marks merged entries against."""
    from gitliza.services.lifecycle.integration import integration_tip
    try:
        return integration_tip(liza.repo, liza.board().config.integration_branch)
    except LizaError:
        return None
