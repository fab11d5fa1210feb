"""Write `.liza/state.yaml` and `.liza/log.yaml` (the spec's files) from refs/liza/state.

The board lives in git; these files are a read-only view for humans and the original Liza tooling
(DESIGN.md section 7). The shaping is pure (gitliza/core/encoding/yamlview.py), the rendering with
ruamel.yaml is gitliza/services/views/yamlrender.py; this module writes the files:

- into the main worktree's `.liza/` only (also when run from a task worktree); a `.liza` (or
  `.liza/archive`) that is a symlink or not a directory, or a `.liza/` the repository tracks, is
  refused (git/repository.py `liza_dir`), so a write can never land outside the repository;
- atomically (temp file in `.liza/` + rename), so a reader never sees a half-written file;
- serialized by `flock` on `.liza/state.yaml.lock`, the spec's lock for state.yaml writers;
- cached: `.liza/.materialized` records the state commit the files reflect and their size and
  mtime. Same commit and untouched files: nothing is rendered or written. log.yaml is extended with
  only the newer commits when the recorded commit is an ancestor; anything else (history rewritten
  by a sync, a file edited or truncated by hand or by a crash) gets a full rewrite.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pygit2

from gitliza import atomic
from gitliza.services.views import usagefile
from gitliza.core import clock
from gitliza.core.encoding import retention, yamlview
from gitliza.core.presence import renewals as liveness
from gitliza.errors import GitFailure, LizaError, NoBoard, ValidationError
from gitliza.git.repository import common_dir
from gitliza.git import liveref
from gitliza.git.store import Store
from gitliza.git.repository import LIZA_DIR, ensure_excluded, liza_dir, main_worktree as _main_root
from gitliza.services.views.viewstamp import (STAMP_FILE, STATE_FILE, Stamp, ViewEdit, read_stamp,
                                        sha256, sig, view_edit)
from gitliza.services.views.yamlrender import (LOG_HEADER, commit_entry, render_archived,
                                         render_log_entries, render_state)

if TYPE_CHECKING:
    from gitliza.services.api import Liza

LOG_FILE = "log.yaml"
LOCK_FILE = "state.yaml.lock"
ARCHIVE_DIR = "archive"
ARCHIVE_INDEX = ".index.json"


@dataclass(frozen=True)
class Materialized:
    state: str            # the state commit the files reflect
    directory: Path       # the .liza directory written
    cached: bool          # nothing to do: the files already reflected `state`
    log_entries: int      # entries in log.yaml
    log_appended: int     # entries added by this run
    log_rewritten: bool   # log.yaml was written from scratch
    archive_written: int = 0  # archived task files (re)written by this run
    archive_removed: int = 0
    edited: ViewEdit | None = None  # state.yaml had been edited by hand before this rewrite
    kept: Path | None = None  # where that edited copy was kept

    def as_json(self) -> dict[str, Any]:
        return {"state": self.state, "directory": str(self.directory), "cached": self.cached,
                "log_entries": self.log_entries, "log_appended": self.log_appended,
                "log_rewritten": self.log_rewritten, "archive_written": self.archive_written,
                "archive_removed": self.archive_removed,
                "edited": None if self.edited is None else list(self.edited.changes),
                "kept": None if self.kept is None else str(self.kept)}


def _newer_than(store: Store, head: pygit2.Commit, stop: str | None) -> tuple[list[pygit2.Commit],
                                                                             bool]:
    """Commits from `head` back to (excluding) `stop`, oldest first, and whether `stop` was met
    (i.e. it is a first-parent ancestor: the state ref is linear)."""
    found: list[pygit2.Commit] = []
    commit: pygit2.Commit | None = head
    while commit is not None:
        if stop is not None and str(commit.id) == stop:
            found.reverse()
            return found, True
        found.append(commit)
        commit = commit.parents[0] if commit.parents else None
    found.reverse()
    return found, False


# -- where to write ----------------------------------------------------------------------------------
def main_worktree(repo: pygit2.Repository) -> Path:
    """The main worktree's root (also when `repo` is a task worktree)."""
    root = _main_root(repo)
    if root is None:
        raise ValidationError(f"{common_dir(repo)} is a bare repository: there is no worktree "
                              f"to materialize {LIZA_DIR}/ into")
    return root




class _Lock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = -1

    def __enter__(self) -> _Lock:
        try:
            # O_NOFOLLOW: a planted symlink must not make us create or lock a file elsewhere.
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
                              0o644)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise ValidationError(f"{self.path} is a symlink; refusing to use it") from None
            raise GitFailure(f"cannot open {self.path}: {e}") from None
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)  # closing drops the flock


# -- the one entry point -----------------------------------------------------------------------------
def materialize(store: Store, at: str | None = None) -> Materialized:
    """Bring `.liza/state.yaml` and `.liza/log.yaml` up to the state at `at` (default: the tip)."""
    commit = store.resolve(at)
    if commit is None:
        raise NoBoard()
    oid = str(commit.id)
    main_worktree(store.repo)  # a bare repository has none: say so
    directory = liza_dir(store.repo)  # refused when tracked, or a link (hostile input)
    state_path, log_path = directory / STATE_FILE, directory / LOG_FILE
    renewals = liveref.read_all(store.repo) if at is None else []
    live = _live_key(renewals)
    with _Lock(directory / LOCK_FILE):
        stamp = read_stamp(directory / STAMP_FILE)
        log_ok = stamp is not None and sig(log_path) == stamp.log_file
        if stamp is not None and stamp.state == oid and log_ok and stamp.live == live \
                and sig(state_path) == stamp.state_file:
            return Materialized(oid, directory, True, stamp.log_entries, 0, False)
        ensure_excluded(common_dir(store.repo), LIZA_DIR)
        edited = view_edit(store, stamp)
        kept = None if edited is None else _keep_edited(directory, state_path)

        board = liveness.overlay(store.board_at(commit), renewals)
        archive_tree, written, removed, ended = _sync_archive(
            store, board, commit, directory, None if stamp is None else stamp.archive,
            full=stamp is None)
        # The state's time decides what is recent, so the view is a function of the state.
        when = clock.from_epoch(commit.author.time)
        known = {**(stamp.recent if stamp is not None else {}), **ended}
        young = retention.recent(known, when, board.config.archive_after)
        recent = {tid: t for tid, t in known.items()
                  if tid in young and board.get("archive", tid) is not None}
        keep = [t for tid in sorted(set(recent) | retention.referenced(board))
                if (t := board.get("archive", tid)) is not None]
        state_bytes = render_state(yamlview.state_view(board, archived=False, keep=keep),
                                   oid).encode()
        state_sig = atomic.write(directory, STATE_FILE, state_bytes)

        usagefile.write(board, commit.tree, directory)

        since = stamp.state if stamp is not None and log_ok else None
        commits, met = _newer_than(store, commit, since)
        if met and stamp is not None:
            # Append: copy the old bytes and add the new entries, still via temp + rename, so
            # a reader never sees a torn entry. No old entry is parsed or re-rendered.
            text = render_log_entries([commit_entry(c, store) for c in commits])
            old = log_path.read_bytes() if text else b""
            log_sig = atomic.write(directory, LOG_FILE, old + text.encode()) if text \
                else stamp.log_file
            total, appended, rewritten = stamp.log_entries + len(commits), len(commits), False
        else:
            text = LOG_HEADER + render_log_entries([commit_entry(c, store) for c in commits])
            log_sig = atomic.write(directory, LOG_FILE, text.encode())
            total, appended, rewritten = len(commits), len(commits), True

        atomic.write(directory, STAMP_FILE, Stamp(oid, state_sig, log_sig, total, archive_tree,
                                                  recent, sha256(state_bytes),
                                                  live).dumps().encode())
    return Materialized(oid, directory, False, total, appended, rewritten, written, removed,
                        edited, kept)


def _keep_edited(directory: Path, state_path: Path) -> Path | None:
    """Copy a hand-edited state.yaml aside before the view is rewritten (the person's edit is
    never lost): `.liza/state.yaml.edited-<UTC time>`, a new name each time."""
    import time
    stem = f"{STATE_FILE}.edited-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
    for n in range(100):
        name = stem if n == 0 else f"{stem}-{n}"
        if not (directory / name).exists():
            try:
                atomic.write(directory, name, state_path.read_bytes())
            except OSError:
                return None
            return directory / name
    return None


def _archive_blobs(repo: pygit2.Repository, tree: pygit2.Tree) -> dict[str, str]:
    """Task id -> blob id of every entry of a state tree's `archive/` fan-out (no blob is read)."""
    out: dict[str, str] = {}
    stack = [tree]
    while stack:
        for entry in stack.pop():
            name = entry.name or ""
            if entry.type_str == "tree":
                sub = repo[entry.id]
                assert isinstance(sub, pygit2.Tree)
                stack.append(sub)
            elif name.endswith(".toml"):
                out[name[: -len(".toml")]] = str(entry.id)
    return out


def _sync_archive(store: Store, board: Any, commit: pygit2.Commit, directory: Path,
                  stamped: str | None, full: bool = False
                  ) -> tuple[str | None, int, int, dict[str, str]]:
    """Bring `.liza/archive/<task-id>.yaml` (one file per archived task) to the state's archive.

    Terminal tasks almost never change, so the work is bounded by what changed: nothing when the
    state's `archive` tree is the stamped one; otherwise the tree is listed (blob ids only) and
    compared with `archive/.index.json` (task id -> blob id written), and only new or changed
    tasks are rendered; files of tasks no longer archived (a history rewritten by a sync) go.
    `full` renders every task (no stamp: the recent ones must be found again).
    Returns (the archive tree id, files written, files removed, id -> end time of the tasks
    rendered)."""
    tree_id = str(commit.tree["archive"].id) if "archive" in commit.tree else None
    path = directory / ARCHIVE_DIR
    index_path = path / ARCHIVE_INDEX
    if tree_id == stamped and (tree_id is None or index_path.is_file()) and not full:
        return tree_id, 0, 0, {}
    if tree_id is None and not path.exists():
        return None, 0, 0, {}
    arch = atomic.inside(directory, ARCHIVE_DIR)
    try:
        index = {} if full else json.loads(index_path.read_text())
        if not isinstance(index, dict):
            index = {}
    except (OSError, ValueError):
        index = {}
    want: dict[str, str] = {}
    if tree_id is not None:
        sub = commit.tree["archive"]
        assert isinstance(sub, pygit2.Tree)
        want = _archive_blobs(store.repo, sub)
    written = 0
    ended: dict[str, str] = {}
    for task_id, blob in sorted(want.items()):
        if index.get(task_id) == blob and (arch / f"{task_id}.yaml").is_file():
            continue
        task = board.get("archive", task_id)
        if task is None:
            continue
        atomic.write(arch, f"{task_id}.yaml",
                      render_archived(yamlview.task_view(task), task_id).encode())
        ended[task_id] = retention.ended_at(task)
        written += 1
    removed = 0
    for f in arch.glob("*.yaml"):
        if f.stem not in want:
            f.unlink(missing_ok=True)
            removed += 1
    atomic.write(arch, ARCHIVE_INDEX, (json.dumps(want, sort_keys=True) + "\n").encode())
    return tree_id, written, removed, ended


def _live_key(renewals: list[Any]) -> str | None:
    """What the view's leases were read from: the live commits (None: none)."""
    if not renewals:
        return None
    return sha256(",".join(sorted(str(r.commit) for r in renewals)).encode())


def after_commit(liza: Liza, _done: Any) -> None:
    """The `Liza.after_commit` hook: the op is already committed, so a failure to write the view
    is a notice on stderr, never a failed command."""
    try:
        done = materialize(liza.store)
    except LizaError as e:
        liza.notice(f"materialize: {e}")
        return
    if done.edited is not None:
        liza.notice(edited_notice(done))


def edited_notice(done: Materialized) -> str:
    """One line: the view had been edited by hand, what changed, and where the copy is."""
    assert done.edited is not None
    what = "; ".join(done.edited.changes) or "no task, config, agent or goal changed"
    kept = f"; the edited copy is kept as {done.kept}" if done.kept is not None else ""
    return (f"{done.edited.path} had been edited by hand, which changes nothing on the board "
            f"({what}); the view was rewritten from the board{kept}")
