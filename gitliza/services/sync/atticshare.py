"""The attic travels with sync: `refs/liza-attic/<task>/<oid>` entries go to the team
remote and come back from it, so that a machine that dies does not take the work it kept along.

- **Fetch**: the remote's entries are mirrored into `refs/remotes/<ns>/liza-attic/*` (git's fetch,
  its objects into gitliza's own store: ownstore.agent_env). Each is checked like the rest of
  what sync fetches, before anything reads it as an entry: its name must be `<task>/<oid>`, and
  its ref must peel to exactly the commit `<oid>` (attic.kept_at). A whole entry this clone lacks
  and that has not expired is copied to `refs/liza-attic/...`; anything else is said and skipped.
  A local entry is never replaced or removed by what a peer pushed: a name fixes its content.
- **Push**: this clone's whole, unexpired entries that the remote lacks are pushed by name
  without force: a name the remote holds already is never overwritten (the server hook refuses
  a changed or forged entry too: hooks/judge.py).
- **Expiry**: entries kept more than `config.attic_keep` days ago are dropped here, and on the
  remote (a deletion with a lease on the judged value): never a younger one.

The exchange costs a fetch (and a push when something is new), so a sync makes it when this
clone has an entry the remote lacks, or once every SHARE_EVERY seconds, or when asked
(`git liza sync`); a team's autosync per transition does not pay it each time.
"""
from __future__ import annotations

import os
from pathlib import Path

import pygit2

from gitliza.errors import LizaError
from gitliza.git import refdelete
from gitliza.git.remotes import remote as remotes
from gitliza.git.objects import ownstore
from gitliza.git.gitcmd import error_line, run_git
from gitliza.git.repository import common_dir, reopened
from gitliza.git.store import Store
from gitliza.services import attic
from gitliza.services.sync.report import SyncReport

SHARE_EVERY = 300.0  # seconds between two exchanges when this clone has nothing new
STAMP = "attic-shared"  # in <common dir>/liza/: when this clone last exchanged
REMOTE_ATTIC = "refs/liza-attic/"


def due(store: Store, path: Path, remote: remotes.Remote, now: float) -> bool:
    """Whether a sync should exchange the attic now: a local entry the remote's mirror lacks, or
    the last exchange SHARE_EVERY ago."""
    stamp = common_dir(store.repo) / "liza" / STAMP
    try:
        if now - stamp.stat().st_mtime >= SHARE_EVERY:
            return True
    except FileNotFoundError:
        return True
    mirror = _mirror_prefix(remote)
    theirs = {n[len(mirror):] for n in store.repo.references if n.startswith(mirror)}
    return any(e.ref[len(REMOTE_ATTIC):] not in theirs for e in attic.entries(store.repo))


def share(store: Store, path: Path, remote: remotes.Remote, keep_days: int, rep: SyncReport,
          now: float, timeout: float) -> None:
    """Fetch, check and adopt the remote's entries, drop the expired ones here and there, push
    ours; what it did goes to `rep.notices` (one line). A failure is said, never fatal: the
    board's sync is done."""
    repo = store.repo
    rem = remote
    mirror = _mirror_prefix(remote)
    if _nothing_either_side(repo, path, rem.arg, mirror):
        return
    try:
        _fetch(repo, path, rem.arg, mirror, timeout)
    except LizaError as e:
        rep.notices.append(f"attic not shared with {rep.remote}: {e}")
        return
    repo = reopened(repo)  # sees the objects just fetched
    theirs: dict[str, str] = {}  # <task>/<oid> -> what the remote's ref names
    adopted = refused = 0
    expired_there: list[tuple[str, str]] = []
    for name in list(repo.references):
        if not name.startswith(mirror):
            continue
        rest = name[len(mirror):]
        parsed = attic.parse_name(REMOTE_ATTIC + rest)
        target = repo.references[name].target
        when = attic.kept_at(repo, target, parsed[1]) if parsed and isinstance(
            target, pygit2.Oid) else None
        if parsed is None or when is None:
            if not rest.startswith("state/"):
                refused += 1  # not an entry, or not what its name says: never adopted
            continue
        theirs[rest] = str(target)
        if attic.expired(when, keep_days, now):
            expired_there.append((REMOTE_ATTIC + rest, str(target)))
            continue
        local = REMOTE_ATTIC + rest
        if repo.references.get(local) is None:
            try:
                repo.references.create(local, target)
                adopted += 1
            except (pygit2.AlreadyExistsError, pygit2.GitError):
                pass  # kept here meanwhile: ours stays
    dropped = attic.prune(repo, keep_days, now)
    mine = [e for e in attic.entries(repo) if e.ref[len(REMOTE_ATTIC):] not in theirs]
    pushed, failed = _push(repo, path, rem.arg, mirror, mine, expired_there, timeout)
    _stamp(repo, now)
    said = [f"{n} {what}" for n, what in ((adopted, "fetched"), (pushed, "pushed"),
                                          (len(dropped) + len(expired_there), "expired dropped"),
                                          (refused, "refused (not what its name says)")) if n]
    if failed:
        said.append(f"not pushed: {failed}")
    if said:
        rep.notices.append(f"attic: {', '.join(said)}")


def _nothing_either_side(repo: pygit2.Repository, path: Path, remote: str, mirror: str) -> bool:
    """No entry here, none mirrored, and the remote (one opened in process: a plain bare
    repository on this machine) holds none: no git fetch to run, so that such a sync stays in
    process whole (git/remotes/direct.py)."""
    from gitliza.git.remotes import direct
    if attic.entries(repo) or direct.ref_names(repo, mirror):
        return False
    there = direct.open_remote(repo, path, remote)
    return there is not None and not direct.ref_names(there, REMOTE_ATTIC)


def _mirror_prefix(remote: remotes.Remote) -> str:
    return remotes.tracking_ref(remote)[: -len("liza/state")] + "liza-attic/"


def _fetch(repo: pygit2.Repository, path: Path, arg: str, mirror: str, timeout: float) -> None:
    run = run_git(path, ["fetch", "--no-tags", "--prune", "--no-write-fetch-head", "--refmap=",
                         "--", arg, f"+{REMOTE_ATTIC}*:{mirror}*"], timeout=timeout,
                  env=ownstore.agent_env(repo))
    if run.returncode != 0:
        raise LizaError(error_line(run.stderr))


def _push(repo: pygit2.Repository, path: Path, arg: str, mirror: str,
          mine: list[attic.Entry], expired: list[tuple[str, str]],
          timeout: float) -> tuple[int, str]:
    """Push `mine` (new names on the remote: without force, with a lease saying the name is
    absent) and delete `expired` there (with a lease on the value judged). Not atomic: one
    refused entry does not hold the others back. (count pushed, what failed)"""
    if not mine and not expired:
        return 0, ""
    args = ["push", "--porcelain", "--no-verify"]  # checked here: only whole entries go
    args += [f"--force-with-lease={e.ref}:" for e in mine]
    args += [f"--force-with-lease={ref}:{old}" for ref, old in expired]
    args += ["--", arg, *(f"{e.ref}:{e.ref}" for e in mine), *(f":{ref}" for ref, _ in expired)]
    run = run_git(path, args, timeout=timeout)
    ok: set[str] = set()
    for line in run.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) >= 2 and parts[0] in ("*", " ", "-", "=") and ":" in parts[1]:
            ok.add(parts[1].split(":", 1)[1])
    pushed = 0
    for e in mine:
        if e.ref in ok:
            pushed += 1
            _set(repo, mirror + e.ref[len(REMOTE_ATTIC):], e.target)
    for ref, old in expired:
        if ref in ok:
            tracking = mirror + ref[len(REMOTE_ATTIC):]
            try:
                refdelete.delete(repo, tracking, old)
            except LizaError:
                pass  # the next fetch prunes it
    failed = len(mine) + len(expired) - len(ok & ({e.ref for e in mine} |
                                                  {r for r, _ in expired}))
    return pushed, (f"{failed} ({error_line(run.stderr)})" if failed else "")


def _set(repo: pygit2.Repository, ref: str, target: str) -> None:
    try:
        repo.references.create(ref, pygit2.Oid(hex=target), force=True)
    except pygit2.GitError:
        pass  # the next fetch writes it


def _stamp(repo: pygit2.Repository, now: float) -> None:
    stamp = common_dir(repo) / "liza" / STAMP
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.touch()
        os.utime(stamp, (now, now))
    except OSError:
        pass

