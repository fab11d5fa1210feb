"""Fetch and push `refs/liza/*` through the `git` executable (DESIGN.md section 4, docs/transport.md).

Besides the board, a fetch can bring the branches the board points at (the integration branch and
the task branches `refs/heads/liza/*`), and `push_refs` pushes several refs in one atomic push, so
that a merge reaches the server as one update of the state ref and the integration branch together
(the server hook judges the integration branch against the board after the push).

Why the executable and not pygit2: it uses the user's ssh and credential setup, and it is the only
path on which the remote's hooks run. The one exception is a plain bare repository on this machine
(no hooks, no transfer configuration) when only the board's own commits move: that fetch or push
is done in process (gitliza/git/remotes/direct.py), as git would do it, without its dozen processes.

Running git (never hanging: no prompts, its own session, a timeout) is gitcmd.py's; naming the
remote and its tracking refs is remotes.py's; reading what a push did is pushresults.py's.

No board logic lives here: this module moves oids. Replay after a lost race is the caller's job.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from gitliza.errors import ConcurrencyConflict, GitFailure, ValidationError
from gitliza.git.gitcmd import Progress, Run, error_line, local_git, progress_flag, run_git
from gitliza.git.remotes.pushresults import (MultiPushResult, PushResult, PushStatus, porcelain_status,
                                     push_summary, remote_rejection, server_notes, status_of)
from gitliza.git.remotes.remote import (BOARD_PREFIX, HEADS, STATE_REF, TASK_BRANCHES,
                                       TASKS_NAMESPACE, Remote, check_board_ref,
                                       check_integration_name, local_repo, read_ref, tracking_of)

# pygit2 and direct.py (with the tree builder and the object writer) are imported in the
# functions that use them, for start-up: importing the transport for its names costs neither.
DEFAULT_TIMEOUT = 120.0  # seconds for one git network command; the board is small
_OID = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


# --------------------------------------------------------------------------------------------------
# Fetch


@dataclass(frozen=True)
class FetchResult:
    remote: str
    tracking_ref: str  # where the remote's refs/liza/state is mirrored locally
    old_oid: str | None  # tracking ref before the fetch
    new_oid: str | None  # tracking ref after the fetch (None: the remote has no board)
    # The remote branches fetched with the board (refs/heads/... -> oid, as mirrored locally after
    # the fetch): the integration branch and the task branches, when asked for.
    branches: Mapping[str, str] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return self.old_oid != self.new_oid


def fetch_board(
    repo_path: Path | str,
    remote: Remote,
    *,
    integration: str | None = None,
    task_branches: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    progress: Progress | None = None,
) -> FetchResult:
    """Mirror the remote's refs/liza/* into refs/remotes/<remote>/liza/*; report the state tip.

    `integration` (a branch name) also mirrors refs/heads/<integration> into
    refs/remotes/<remote>/<integration>; `task_branches` mirrors refs/heads/liza/* into
    refs/remotes/<remote>/liza-tasks/*. One fetch, so one round trip and one pack.
    """
    rem = remote
    tracking = tracking_of(rem, STATE_REF)
    old = read_ref(repo_path, tracking)
    if integration is not None:
        check_integration_name(integration)
    if not _direct_fetch(repo_path, rem, integration, task_branches, tracking):
        _git_fetch(repo_path, rem, integration, task_branches, timeout, progress)
    branches: dict[str, str] = {}
    if task_branches:
        prefix = f"refs/remotes/{rem.namespace}/{TASKS_NAMESPACE}/"
        for name, oid in _list_refs(repo_path, prefix).items():
            branches[TASK_BRANCHES + name[len(prefix):]] = oid
    if integration is not None:
        tip = read_ref(repo_path, tracking_of(rem, HEADS + integration))
        if tip is not None:
            branches[HEADS + integration] = tip
    return FetchResult(rem.arg, tracking, old, read_ref(repo_path, tracking), branches)


def _direct_fetch(repo_path: Path | str, rem: Remote, integration: str | None,
                  task_branches: bool, tracking: str) -> bool:
    """The fetch in process (gitliza/git/remotes/direct.py) when the remote is a plain bare repository on
    this machine and only the board's own objects are new; False: git must do it."""
    import pygit2

    from gitliza.git.remotes import direct
    local = local_repo(repo_path)
    remote = direct.open_remote(local, Path(repo_path), rem.arg)
    if remote is None:
        return False
    mirrors = [direct.Mirror(BOARD_PREFIX, f"refs/remotes/{rem.namespace}/liza/")]
    if task_branches:
        mirrors.append(direct.Mirror(TASK_BRANCHES,
                                     f"refs/remotes/{rem.namespace}/{TASKS_NAMESPACE}/"))
    if integration is not None:
        mirrors.append(direct.Mirror(HEADS + integration, tracking_of(rem, HEADS + integration)))
    haves = {pygit2.Oid(hex=h) for h in (read_ref(repo_path, tracking),
                                         read_ref(repo_path, STATE_REF)) if h}
    try:
        return direct.fetch(local, remote, mirrors, tracking, haves)
    except (OSError, KeyError, pygit2.GitError) as e:
        if "lock" in str(e):  # as git's "cannot lock ref": another process is updating it
            raise ConcurrencyConflict(f"fetch from {rem.arg}: {e}", hint="retry the sync") from None
        raise GitFailure(f"fetch from {rem.arg} failed: {e}") from None


def _git_fetch(repo_path: Path | str, rem: Remote, integration: str | None, task_branches: bool,
               timeout: float, progress: Progress | None) -> None:
    refspecs = [f"+{BOARD_PREFIX}*:refs/remotes/{rem.namespace}/liza/*"]
    if task_branches:
        refspecs.append(f"+{TASK_BRANCHES}*:refs/remotes/{rem.namespace}/{TASKS_NAMESPACE}/*")
    if integration is not None:
        refspecs.append(f"+{HEADS}{integration}:{tracking_of(rem, HEADS + integration)}")
    # A glob refspec matching nothing succeeds (an explicit ref would fail on a remote with no
    # board). `+` is right for tracking refs: they mirror the remote, whatever it did.
    # --no-write-fetch-head: do not clobber the user's FETCH_HEAD behind their back.
    args = ["fetch", "--no-tags", "--prune", "--no-write-fetch-head", *progress_flag(progress)]
    if len(refspecs) > 1:
        # Only our refspecs: the remote's configured fetch refspec would also copy refs/heads/liza/x
        # to refs/remotes/<name>/liza/x, into the namespace that tracks the board refs.
        args.append("--refmap=")
    run = run_git(repo_path, [*args, "--", rem.arg, *refspecs], timeout=timeout, progress=progress)
    if run.returncode != 0 and integration is not None and "couldn't find remote ref" in run.stderr:
        # The integration branch is the one explicit ref (a branch cannot be globbed exactly): a
        # remote that does not have it yet is not an error, fetch the rest.
        refspecs.pop()
        run = run_git(repo_path, [*args, "--", rem.arg, *refspecs], timeout=timeout,
                       progress=progress)
        _forget(repo_path, tracking_of(rem, HEADS + integration))
    if run.returncode != 0:
        _raise_fetch_failure(rem.arg, run.stderr)


def _list_refs(repo_path: Path | str, prefix: str) -> dict[str, str]:
    from gitliza.git.remotes.direct import refs_under
    return refs_under(local_repo(repo_path), prefix)


def _forget(repo_path: Path | str, ref: str) -> None:
    # The remote no longer has the branch: its tracking ref must not keep claiming it does.
    if read_ref(repo_path, ref) is not None:
        local_git(repo_path, "update-ref", "-d", ref)


def _raise_fetch_failure(remote: str, stderr: str) -> None:
    line = error_line(stderr)
    if "cannot lock ref" in line:
        # Another process in this repository is updating the same tracking ref right now.
        raise ConcurrencyConflict(f"fetch from {remote}: {line}", hint="retry the sync")
    raise GitFailure(f"git fetch from {remote} failed: {line}")


# --------------------------------------------------------------------------------------------------
# ls-remote


def ls_remote_state(
    repo_path: Path | str,
    remote: Remote,
    *,
    ref: str = STATE_REF,
    timeout: float = DEFAULT_TIMEOUT,
) -> str | None:
    """The remote's current oid of `ref` (None: no board there), without fetching objects."""
    check_board_ref(ref)
    return _ls_remote(repo_path, remote.arg, ref, timeout)


def _ls_remote(repo_path: Path | str, remote: str, ref: str, timeout: float) -> str | None:
    run = run_git(repo_path, ["ls-remote", "--", remote, ref], timeout=timeout)
    if run.returncode != 0:
        raise GitFailure(f"git ls-remote {remote} failed: {error_line(run.stderr)}")
    for line in run.stdout.splitlines():
        oid, _, name = line.partition("\t")
        if name == ref:  # ls-remote patterns match ref-name tails: insist on the exact name
            return oid
    return None


# --------------------------------------------------------------------------------------------------
# Push


def _check_oid(oid: str, what: str) -> None:
    if not _OID.fullmatch(oid):
        raise ValidationError(f"{what} is not a full hex object id: {oid!r}")


def push_board(
    repo_path: Path | str,
    remote: Remote,
    local_oid: str,
    expected_remote_oid: str | None,
    ref: str = STATE_REF,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    progress: Progress | None = None,
) -> PushResult:
    """Move the remote's `ref` from `expected_remote_oid` (None: must not exist) to `local_oid`.

    A fast-forward compare-and-swap: returns STALE or NON_FAST_FORWARD when the caller must fetch
    and replay; raises PushRejected when the remote's hook refuses, GitFailure on anything else.
    """
    check_board_ref(ref)
    _check_oid(local_oid, "local oid")
    if expected_remote_oid is not None:
        _check_oid(expected_remote_oid, "expected remote oid")
    rem = remote

    def result(status: PushStatus, summary: str) -> PushResult:
        return PushResult(status, rem.arg, ref, local_oid, expected_remote_oid, summary)

    if not _has_commit(repo_path, local_oid):
        raise ValidationError(f"local oid {local_oid} is not a commit in {repo_path}")
    if expected_remote_oid is not None and not _descends(repo_path, local_oid, expected_remote_oid):
        # A lease that matches makes git force the update, so the fast-forward rule is ours.
        return result(PushStatus.NON_FAST_FORWARD, f"not a descendant of {expected_remote_oid}")
    tracking = tracking_of(rem, ref)
    tracking_before = read_ref(repo_path, tracking)
    done = _direct_push(repo_path, rem, ref, local_oid, expected_remote_oid)
    if done is not None:
        if done in (PushStatus.OK, PushStatus.UP_TO_DATE):
            _update_tracking(repo_path, tracking, local_oid, tracking_before)
        return result(done, push_summary(done, expected_remote_oid, local_oid))
    run = _push(repo_path, rem.arg, local_oid, expected_remote_oid, ref, timeout, progress)
    flag, summary = porcelain_status(run, rem.arg, ref)
    if summary.startswith("[remote rejected]"):
        now = _ls_remote(repo_path, rem.arg, ref, timeout)
        status = remote_rejection(rem.arg, ref, expected_remote_oid, now, summary, run.stderr)
    else:
        status = status_of(rem.arg, flag, summary)
    if status in (PushStatus.OK, PushStatus.UP_TO_DATE):
        _update_tracking(repo_path, tracking, local_oid, tracking_before)
    return dataclasses.replace(result(status, summary), notes=server_notes(run.stderr))


def _direct_push(repo_path: Path | str, rem: Remote, ref: str, local_oid: str,
                 expected: str | None) -> PushStatus | None:
    """The push in process (gitliza/git/remotes/direct.py) when the remote is a plain bare repository on
    this machine without hooks and the board's chain is all it lacks; None: git must do it."""
    import pygit2

    from gitliza.git.remotes import direct
    local = local_repo(repo_path)
    remote = direct.open_remote(local, Path(repo_path), rem.arg)
    if remote is None:
        return None
    try:
        return PushStatus(direct.push(local, remote, ref, local_oid, expected))
    except direct.NeedsGit:
        return None
    except (OSError, KeyError, pygit2.GitError) as e:  # KeyError: an object missing here
        raise GitFailure(f"push to {rem.arg} failed: {e}") from None


@dataclass(frozen=True)
class RefUpdate:
    """One ref of a multi-ref push: move the remote's `ref` from `expected_oid` (None: must not
    exist) to `local_oid`. `fast_forward`: refuse (NON_FAST_FORWARD, nothing pushed) unless
    local_oid descends from expected_oid; off for task branches, which a coder may rewrite after a
    rejection (the lease still guarantees we replace only what we saw)."""

    ref: str  # refs/liza/* or refs/heads/*
    local_oid: str
    expected_oid: str | None
    fast_forward: bool = True


def push_refs(
    repo_path: Path | str,
    remote: Remote,
    updates: Sequence[RefUpdate],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    progress: Progress | None = None,
) -> MultiPushResult:
    """Push several refs in ONE atomic push (`git push --atomic`), each with its own lease.

    All or nothing on the remote: a server that judges one ref against another (the integration
    branch against the board after the push) sees them together, and a lost lease on any ref
    leaves every ref where it was (STALE). Raises PushRejected when the remote's hook refuses,
    GitFailure on anything else, like `push_board`. Tracking refs follow on success.
    """
    if not updates:
        raise ValueError("push_refs: nothing to push")
    rem = remote
    for u in updates:
        if not u.ref.startswith((BOARD_PREFIX, HEADS)) or u.ref in (BOARD_PREFIX, HEADS):
            raise ValidationError(f"not a pushable ref: {u.ref!r}")
        _check_oid(u.local_oid, f"local oid for {u.ref}")
        if u.expected_oid is not None:
            _check_oid(u.expected_oid, f"expected remote oid for {u.ref}")
        if not _has_commit(repo_path, u.local_oid):
            raise ValidationError(f"local oid {u.local_oid} is not a commit in {repo_path}")

    statuses: dict[str, PushStatus] = {}  # per ref, as far as git told us

    notes: tuple[str, ...] = ()

    def results(status: PushStatus, summaries: dict[str, str]) -> MultiPushResult:
        return MultiPushResult(status, rem.arg, tuple(
            PushResult(statuses.get(u.ref, status), rem.arg, u.ref, u.local_oid, u.expected_oid,
                       summaries.get(u.ref, "")) for u in updates), notes)

    for u in updates:
        if u.fast_forward and u.expected_oid is not None \
                and not _descends(repo_path, u.local_oid, u.expected_oid):
            return results(PushStatus.NON_FAST_FORWARD,
                           {u.ref: f"not a descendant of {u.expected_oid}"})
    before = {u.ref: read_ref(repo_path, tracking_of(rem, u.ref)) for u in updates}
    # --atomic: the server applies all the updates or none (and so do the client-side checks).
    args = ["push", "--porcelain", "--no-verify", "--atomic", *progress_flag(progress)]
    args += [f"--force-with-lease={u.ref}:{u.expected_oid or ''}" for u in updates]
    args += ["--", rem.arg, *(f"{u.local_oid}:{u.ref}" for u in updates)]
    run = run_git(repo_path, args, timeout=timeout, progress=progress)
    notes = server_notes(run.stderr)
    summaries: dict[str, str] = {}
    for u in updates:
        flag, summary = porcelain_status(run, rem.arg, u.ref)
        summaries[u.ref] = summary
        if summary.startswith("[remote rejected]"):
            continue
        if flag == "!" and "atomic push failed" in summary:
            continue  # refused only because another ref of this push was: that one says why
        statuses[u.ref] = status_of(rem.arg, flag, summary)
    rejected = [u for u in updates if summaries[u.ref].startswith("[remote rejected]")]
    if rejected:
        # The server refused the transaction. A lease that no longer holds on any ref means we lost
        # a race at its ref lock; otherwise its hook said no, and saying it again will not help.
        for u in updates:
            if _ls_remote(repo_path, rem.arg, u.ref, timeout) != u.expected_oid:
                statuses[u.ref] = PushStatus.STALE
                return results(PushStatus.STALE, summaries)
        u = rejected[0]
        remote_rejection(rem.arg, u.ref, u.expected_oid, u.expected_oid, summaries[u.ref],
                          run.stderr)
    bad = [statuses[u.ref] for u in updates
           if statuses.get(u.ref) not in (None, PushStatus.OK, PushStatus.UP_TO_DATE)]
    if bad:
        return results(bad[0], summaries)
    if len(statuses) != len(updates):
        raise GitFailure(f"git push to {rem.arg} failed: {error_line(run.stderr)}")
    for u in updates:
        _update_tracking(repo_path, tracking_of(rem, u.ref), u.local_oid, before[u.ref])
    overall = PushStatus.OK if PushStatus.OK in statuses.values() else PushStatus.UP_TO_DATE
    return results(overall, summaries)


def _descends(repo_path: Path | str, local_oid: str, expected_oid: str) -> bool:
    # Exit 0: ancestor; 1: not; 128: an object is missing here -- we cannot have built on an
    # expected tip we do not have, which for the caller is the same thing: fetch and replay.
    import pygit2
    repo = local_repo(repo_path)
    try:
        local, expected = pygit2.Oid(hex=local_oid), pygit2.Oid(hex=expected_oid)
        return local == expected or (expected in repo and bool(repo.descendant_of(local, expected)))
    except (KeyError, ValueError, pygit2.GitError):
        return False


def _has_commit(repo_path: Path | str, oid: str) -> bool:
    import pygit2
    try:
        return isinstance(local_repo(repo_path).get(oid), pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        return False


def _push(
    repo_path: Path | str, remote: str, local_oid: str, expected: str | None, ref: str,
    timeout: float, progress: Progress | None,
) -> Run:
    # Never `+` and never --force: the explicit lease is the cross-machine CAS (empty = must not
    # exist). --no-verify: the local pre-push hook guards code pushes; a board sync must not run
    # a test suite, and enforcement lives in the remote's hooks, which still run.
    lease = f"--force-with-lease={ref}:{expected or ''}"
    args = ["push", "--porcelain", "--no-verify", lease, *progress_flag(progress)]
    args += ["--", remote, f"{local_oid}:{ref}"]
    return run_git(repo_path, args, timeout=timeout, progress=progress)


def _update_tracking(repo_path: Path | str, tracking: str, oid: str, before: str | None) -> None:
    # git push only updates tracking refs that a configured fetch refspec maps, which ours are not.
    # Compare-and-swap against what we read before pushing: if a concurrent fetch moved it, that
    # value is at least as fresh as ours, so a failed update is simply left alone.
    if before == oid:
        return
    import pygit2
    repo = local_repo(repo_path)
    try:
        if before is None:
            repo.create_reference(tracking, pygit2.Oid(hex=oid), force=False,
                                  message="liza: push")
            return
        ref = repo.references.get(tracking)
        if ref is not None and str(ref.target) == before:
            ref.set_target(pygit2.Oid(hex=oid), "liza: push")  # libgit2 checks the old value
    except (pygit2.GitError, ValueError, KeyError):  # moved meanwhile: that value is fresher
        pass


