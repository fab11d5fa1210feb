"""Where a renewal's objects live (git/liveref.py): gitliza's own store, and for how long.

A renewal is three small objects (blob, tree, root commit) that its ref names a moment after they
are written. Written loose into `objects/` (until 2026-11), they raced the user's maintenance the
way git documents: a `git prune --expire=now` (or `gc --prune=now`) that listed the refs before
the live ref moved deleted them after it, and the ref named missing objects until the next
renewal; every `git gc` and `git repack` of the user failed meanwhile ("bad object
refs/liza/live/<agent>"). Writing them again after the move only narrowed the window:
the prune's deletion can come after the second write as well.

So they go where no user maintenance deletes anything: gitliza's own store (git/objects/ownstore.py),
loose. No prune reaches them, whenever it scans; git's rule that an object exists before a ref
names it holds by construction. What the store must not do is keep every replaced renewal (one
per agent per heartbeat), so gitliza prunes them itself, by git's own rule for unreferenced
objects: a grace. Each renewal's ids go to a journal (`<common dir>/liza/live-objects`, one line
each: time, blob, tree, commit); now and then (`SWEEP_EVERY`) a writer deletes the objects of the
entries older than `GRACE` whose commit no live ref names (local or a remote's copy). A reader
that read a ref a moment before it moved still finds the old commit: nothing younger than the
grace goes, and no named one at all. Only loose files of the own store that a journal entry
names are ever deleted: an agent's commit there is never listed.

The journal is appended to (O_APPEND, one write per line) and swept by renaming it aside, so the
lines writers append meanwhile start a new journal; a line written into the taken file after the
sweep read it is not seen, which leaves that renewal's three objects (about 1 KB) in the store: a
leak, never a loss. A sweep that dies leaves its taken file, which the next sweep adopts once it
was taken a grace ago.
"""
from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import Collection

import pygit2

from gitliza.git.objects import ownstore
from gitliza.git.repository import common_dir

GRACE = 600.0  # seconds a replaced renewal's objects stay readable (git's gc.pruneExpire idea)
SWEEP_EVERY = GRACE / 2  # seconds between two sweeps of one clone's journal
JOURNAL = "live-objects"
TAKEN = ".sweep-"  # a journal renamed aside by a sweep: live-objects.sweep-<pid>-<thread>

_ODBS: dict[str, pygit2.Odb] = {}
# One object database per store, shared by the process's threads (a supervisor's lease keeper and
# its main loop): its writes are made under this lock.
LOCK = threading.Lock()


def store(repo: pygit2.Repository) -> tuple[str, pygit2.Odb] | None:
    """The own store of `repo` and an object database writing loose objects into it; None where
    objects must land where git says (a hook's quarantine).

    The database has the loose backend only. Opened on the directory (`pygit2.Odb(own)`), it had
    libgit2's pack backend too, and a write asks every backend whether the object exists first: a
    miss rescans the pack directory and maps the index of every pack found there, and this
    database, kept for the life of the process, never let one go. The board's packs are merged and
    removed a few seconds after they appear, so a supervisor mapped one more deleted index per
    pack the team wrote: 2,600 mappings and 12 MB of RSS after 17 minutes of a busy team, seen
    in no count of open files. A renewal's objects are new by construction (a
    renewal carries its time): nothing is lost by not looking in the packs for them."""
    own = ownstore.target(repo)
    if own is None:
        return None
    with LOCK:
        odb = _ODBS.get(own)
        if odb is None:
            odb = pygit2.Odb()
            # -1: zlib's default level, as libgit2's own loose backend; no fsync, as git's default
            odb.add_backend(pygit2.OdbBackendLoose(own, -1, False), 1)
            _ODBS[own] = odb
    return own, odb


def journal(repo: pygit2.Repository) -> Path:
    return common_dir(repo) / "liza" / JOURNAL


def note(repo: pygit2.Repository, ids: list[str], now: float) -> None:
    """Record a renewal's object ids (the commit last), written at `now`."""
    path = journal(repo)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{now:.0f} {' '.join(ids)}\n".encode())
    finally:
        os.close(fd)


def sweep_due(repo: pygit2.Repository, now: float) -> bool:
    """Whether this clone's journal was last swept `SWEEP_EVERY` ago (and mark it swept now: two
    writers that both see it due sweep twice, harmlessly)."""
    stamp = Path(f"{journal(repo)}.swept")
    try:
        if now - stamp.stat().st_mtime < SWEEP_EVERY:
            return False
    except FileNotFoundError:
        pass
    with contextlib.suppress(OSError):
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.touch()
        os.utime(stamp, (now, now))
    return True


def sweep(repo: pygit2.Repository, named: Collection[str], now: float) -> int:
    """Delete the objects of the journal's entries older than `GRACE` whose commit is not in
    `named` (the live refs' targets, read by the caller before this call); keep the other entries.
    Returns how many objects went."""
    found = store(repo)
    if found is None:
        return 0
    own = found[0]
    path = journal(repo)
    taken = _take(path, now)
    if not taken:
        return 0
    entries: list[tuple[float, list[str]]] = []
    for t in taken:
        with contextlib.suppress(OSError):
            for line in t.read_text(encoding="ascii", errors="replace").splitlines():
                parts = line.split()
                with contextlib.suppress(ValueError):
                    if len(parts) >= 2:
                        entries.append((float(parts[0]), parts[1:]))
    young = {oid for at, ids in entries if now - at < GRACE for oid in ids}
    keep: list[str] = []
    gone = 0
    for at, ids in entries:
        if now - at < GRACE or ids[-1] in named:
            keep.append(f"{at:.0f} {' '.join(ids)}\n")
            continue
        for oid in ids:
            if oid in young or len(oid) < 3:
                continue
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(own, oid[:2], oid[2:]))
                gone += 1
    if keep:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, "".join(keep).encode())
        finally:
            os.close(fd)
    for t in taken:
        with contextlib.suppress(FileNotFoundError):
            t.unlink()
    return gone


def _take(path: Path, now: float) -> list[Path]:
    """The journal renamed aside for this sweep, with the files of sweeps that died (older than
    a grace), each renamed to a name of this sweep first so that no two sweeps read one file."""
    mine = f"{path.name}{TAKEN}{os.getpid()}-{threading.get_ident()}"
    out: list[Path] = []
    candidates = [path]
    with contextlib.suppress(OSError):
        for name in os.listdir(path.parent):
            if name.startswith(path.name + TAKEN):
                p = path.parent / name
                with contextlib.suppress(OSError):
                    if now - p.stat().st_ctime > GRACE:  # ctime: when it was renamed
                        candidates.append(p)
    for i, p in enumerate(candidates):
        dest = path.parent / f"{mine}-{i}"
        try:
            os.rename(p, dest)
        except OSError:
            continue
        out.append(dest)
    return out

