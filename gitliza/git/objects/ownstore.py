"""gitliza's own object store: where the objects gitliza writes itself live, out of reach of the
user's git maintenance.

A transition writes its objects (a pack, gitliza/git/objects/packs.py) and only then moves
refs/liza/state onto them. Between the two the objects are referenced by nothing, and git's
maintenance deletes exactly such objects: `git repack -ad` (and `gc --prune=now`, whose repack
leaves out what no ref reaches) drops unreferenced objects from the packs it replaces, and `git
prune` deletes unreferenced loose ones, whatever their age (its default expiry is "now"). A user's
`git gc --prune=now` beside a busy team then left the board ref on a commit that was gone.

So gitliza writes into a store of its own, `<git common dir>/liza-objects/`, which the
repository lists in `objects/info/alternates` (a relative line, so moving the repository keeps it).
Every git command and libgit2 read an alternate's objects as the repository's own, but no
maintenance command ever deletes from one: `gc`, `repack` (with or without `-l`), `prune`,
`maintenance run` and `multi-pack-index expire` only remove files of the repository's own
`objects/` directory. (One exception, which gitliza never offers: gc deletes an `.idx` without its
`.pack` in every pack directory, alternates included; packfile.temp_paths names the index being
written so that gc does not take it for one.) Safety therefore does not depend on timing, grace
periods or locks. The
store only ever gains objects, almost all of them reachable (the board's history is append-only);
gitliza's pack merging (packs.consolidate) keeps its pack count low, as before.

A local `git clone` of a repository copies `info/alternates`, turning our relative line into an
absolute one naming the *origin's* store: the clone would silently depend on its origin. The first
gitliza write in such a clone dissociates it: the origin store's packs are copied (packs never
change, so a hard link will do) into the clone's own store, then the line is dropped.

An agent's git writes here too: its supervisor runs it with GIT_OBJECT_DIRECTORY set to the store
and the repository's objects as an alternate (`agent_env`), so the commit an agent is making is
not unreferenced loose garbage in objects/ for the moment before its branch moves (a `git prune`
in that moment left a task branch on a missing commit). A merge made through libgit2 is copied
here as soon as it is made (gitliza/git/merge.py). What is still written into objects/ (the user's
own git) is git's own race with `git prune`, which `git liza doctor` detects and `git liza repair`
restores from the remote (docs/maintenance.md).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import time
import weakref
from typing import Any

from gitliza.git.objects import packs

STORE = "liza-objects"  # beside objects/ in the git common dir
LINE = f"../{STORE}"  # as listed in objects/info/alternates: relative to objects/
LOCK_WAIT = 2.0  # seconds to wait for another writer of info/alternates (git's lock file too)

_READY: dict[str, str] = {}  # the repository's objects dir -> its own store, set up already
# Repository objects told about the store in this process (those opened before the alternates
# line existed do not read it by themselves).
_TOLD: weakref.WeakSet[Any] = weakref.WeakSet()
_ADDED_HERE: set[str] = set()


def target(repo: Any) -> str | None:
    """Where gitliza writes the objects it makes for `repo`: its own store, set up on first use;
    None where objects must land where git says (a hook's quarantine, GIT_OBJECT_DIRECTORY)."""
    base = packs.objects_dir(repo)
    if base is None:
        base = _redirected_here(repo)
        if base is None:
            return None
    own = _READY.get(base)
    if own is None:
        own = _READY[base] = ensure(base)
    if base in _ADDED_HERE and repo not in _TOLD:
        with contextlib.suppress(Exception):  # a repo object that already reads it: harmless
            repo.odb.add_disk_alternate(own)
        _TOLD.add(repo)
    return own


def _redirected_here(repo: Any) -> str | None:
    """The repository's objects dir when git's writes are redirected to its own store (an agent's
    environment, `agent_env`), not into a quarantine: gitliza then writes there too."""
    redirected = os.environ.get("GIT_OBJECT_DIRECTORY")
    if not redirected or "GIT_QUARANTINE_PATH" in os.environ:
        return None
    from gitliza.git.repository import common_dir
    base = str(common_dir(repo) / "objects")
    return base if os.path.realpath(redirected) == os.path.realpath(store_of(base)) else None


def agent_env(repo: Any) -> dict[str, str]:
    """The environment that makes an agent's git write its objects (its commits, the blobs it
    adds) into the own store, and read the repository's through an alternate: a user's `git
    prune` then cannot delete a commit between its writing and its branch's update, which git
    itself does not guard against (`git prune` expires everything unreferenced, at once)."""
    base = packs.objects_dir(repo)
    if base is None:
        return {}
    own = target(repo)
    if own is None:
        return {}
    alternates = [base] + [p for p in os.environ.get("GIT_ALTERNATE_OBJECT_DIRECTORIES",
                                                     "").split(os.pathsep) if p]
    return {"GIT_OBJECT_DIRECTORY": own,
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": os.pathsep.join(alternates)}


def prepare(repo: Any) -> None:
    """Set the store up before `repo` reads its first object: libgit2 reads the alternates file
    once, when it first needs the object database, so a repository object that read objects
    before the line existed never sees the store (Store opens every repository through here).
    A repository gitliza cannot write to is left alone: its writes fail later, clearly."""
    with contextlib.suppress(OSError):
        target(repo)


def store_of(objects_dir: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(objects_dir)), STORE)


def ensure(objects_dir: str) -> str:
    """Make the own store of the repository whose objects are in `objects_dir` and list it in its
    alternates (once; a line naming another repository's store is dissociated). Its path."""
    own = store_of(objects_dir)
    path = os.path.join(objects_dir, "info", "alternates")
    lines = _lines(path)
    mine, foreign = _classify(objects_dir, own, lines)
    if mine and not foreign and os.path.isdir(own):
        return own
    os.makedirs(os.path.join(own, "pack"), exist_ok=True)
    with _locked(path):
        lines = _lines(path)  # again, under the lock
        mine, foreign = _classify(objects_dir, own, lines)
        for line in foreign:
            _adopt(_resolve(objects_dir, line), own)
        keep = [ln for ln in lines if ln not in foreign]
        if not mine:
            keep.append(LINE)
            _ADDED_HERE.add(objects_dir)
        _write(path, keep)
    return own


def listed(objects_dir: str) -> bool:
    """Whether the repository lists its own store (doctor: a store not listed is invisible to
    git, which would then call the board's objects missing)."""
    own = store_of(objects_dir)
    return _classify(objects_dir, own, _lines(os.path.join(objects_dir, "info",
                                                           "alternates")))[0]


def _lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as f:
            return [ln.rstrip("\n") for ln in f if ln.strip()]
    except FileNotFoundError:
        return []


def _resolve(objects_dir: str, line: str) -> str:
    return os.path.normpath(os.path.join(objects_dir, line.strip()))


def _classify(objects_dir: str, own: str, lines: list[str]) -> tuple[bool, list[str]]:
    """Whether `lines` list `own`, and the lines naming another repository's gitliza store."""
    mine = False
    foreign = []
    real_own = os.path.realpath(own)
    for line in lines:
        if line.startswith("#"):
            continue
        where = os.path.realpath(_resolve(objects_dir, line))
        if where == real_own:
            mine = True
        elif os.path.basename(where) == STORE:
            foreign.append(line)
    return mine, foreign


def _adopt(other: str, own: str) -> None:
    """Copy every pack of another repository's store into ours (a local clone's origin): its pack
    file before its index, so that no reader sees an index without its pack. A pack the origin
    merged away meanwhile is in the merged pack, which a second listing finds."""
    src = os.path.join(other, "pack")
    dst = os.path.join(own, "pack")
    for _attempt in range(3):
        try:
            names = sorted(os.listdir(src), key=lambda n: n.endswith(".idx"))
        except FileNotFoundError:
            return  # the origin is gone: nothing left to copy (doctor reports what is missing)
        vanished = False
        for name in names:
            if not name.startswith("pack-") or not name.endswith((".pack", ".idx")):
                continue
            if os.path.exists(os.path.join(dst, name)):
                continue
            try:
                _copy(os.path.join(src, name), os.path.join(dst, name))
            except FileNotFoundError:
                vanished = True
        if not vanished:
            return


def _copy(src: str, dst: str) -> None:
    tmp = f"{dst}.tmp{os.getpid()}"
    try:
        os.link(src, tmp)
    except OSError:
        shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


@contextlib.contextmanager
def _locked(path: str) -> Any:
    """git's own lock on the alternates file (`<file>.lock`, as `git clone --reference` takes it),
    held while the file is rewritten."""
    lock = path + ".lock"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    deadline = time.monotonic() + LOCK_WAIT
    while True:
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            break
        except FileExistsError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)
    os.close(fd)
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock)


def _write(path: str, lines: list[str]) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("".join(ln + "\n" for ln in lines))
    os.replace(tmp, path)
