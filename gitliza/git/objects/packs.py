"""Objects written as one pack per transition (or per batch) instead of one loose file each.

A transition writes about six objects (a blob, the trees on its path, the commit). As loose objects
that is six files, each created, written and renamed into a fan-out directory by libgit2: ~0.1 ms
apiece on tmpfs, most of the transition. Here the same bytes go into one pack and its index, two
files, written whole by packfile.py (the format, and how a pack appears atomically). This module
decides when packs are written and merged, and cleans up after them.

Packs pile up, one per transition, and every pack is one more index to search, so small packs are
merged as they accumulate (`consolidate`): when there are more than PACK_LIMIT, the smallest
ones, as many as keep the sizes a geometric progression (git's `repack --geometric=2` rule), are
copied entry by entry (no recompression) into one pack, which is renamed into place; the old ones
are marked and removed, index first, by a later merge once the mark is GRACE_SECONDS old, so that a
reader that listed the directory before they were merged still opens them. Two processes merging
at once each mark only packs they copied completely. Packs with deltas (those git made) and packs
marked .keep or .promisor are left alone.

Living beside git's own housekeeping:
- the marks are kept outside the pack directory (`<common dir>/liza-merged-packs/`): git knows
  every file name in objects/pack/, and `git count-objects -v` calls anything else garbage;
- git's `gc --auto` (run by git's own commits, merges and fetches) repacks when objects/pack/ holds
  more than `gc.autoPackLimit` (50) packs, marked ones included. The packs stay below PACK_BUDGET:
  past it, marked packs are removed once MIN_GRACE_SECONDS old instead of GRACE_SECONDS (still a
  hundred thousand times the window a reader needs), or at once beyond the KEEP_YOUNG newest (so
  that the count has a bound in counts, `most_packs`, not in the machine's speed), and a process
  that marked packs removes its own on exit (atexit), so that a burst that ends leaves the
  directory below the budget;
- a write that fails (a full disk) removes what it wrote; what a killed writer leaves (a pack
  without its index, tmp_* files) is `leftovers()`, which `git liza doctor --fix` removes;
- `git gc` and `git repack -d` may remove any of these packs: their objects are in git's new pack,
  and a mark whose pack is gone is dropped.
"""
from __future__ import annotations

import atexit
import contextlib
import os
import time
from typing import Any, Iterable

from gitliza.git.objects import packfile
from gitliza.git.objects.packfile import Obj
from gitliza.git.repository import common_dir

PACK_LIMIT = 16  # packs in objects/pack/ before the small ones are merged
# A merged pack (index and pack file) stays this long, marked, before a later merge removes it.
# libgit2 and git rescan the pack directory once per miss and open an index lazily: an index
# listed by a rescan and unlinked before the reader opens it is a miss with no second rescan, so
# removing merged packs at once (or their indexes) made concurrent readers (pygit2, `git cat-file
# --batch`, `git cat-file -p`) fail on objects that were there, dozens of times in 25 s of bursts;
# with the packs kept, none. Every pack in the directory is also one more index libgit2 searches on
# a miss and when a ref is set, so under sustained writes the packs number rate x grace: with 60 s,
# ~3,000 packs and ~25 ms of CPU per transition instead of ~3 ms (benchmarks/bench_agents.py).
# A few seconds is far more than the microseconds between a rescan and the opening of an index.
GRACE_SECONDS = 5.0
# git's gc.autoPackLimit is 50: stay below it (with room for git's own packs).
PACK_BUDGET = 24
MIN_GRACE_SECONDS = 0.1
# A process looks at the pack directory (merges, removes) after at most this many of its writes,
# and after its first: a short-lived writer (an agent's `git liza submit`) looks once, so the packs
# nobody looked after are those of the long-lived writers' last few writes.
LOOK_EVERY = 12
# Past PACK_BUDGET, the marked packs younger than MIN_GRACE_SECONDS are kept too, but no more than
# this many (the newest: those of the last merge, which a reader may have listed just before it).
# A time alone did not bound the count: packs pile up by the merges made within the grace, which
# a busy machine's writers (slow writes, late looks) made up to 80 of. A merge marks at
# most the packs one look finds unmerged: PACK_LIMIT, and the writes made since the last look.
KEEP_YOUNG = PACK_LIMIT + LOOK_EVERY


def most_packs(writers: int) -> int:
    """The most packs a pack directory holds while `writers` long-lived processes write to it,
    whatever the load (counts, not times). After any look: the unmerged packs are PACK_LIMIT at
    most (more are merged then), the marked ones the young KEEP_YOUNG past the budget, and the
    look's own merged pack; then each writer adds what it wrote before its next look (LOOK_EVERY
    at most; a short-lived writer looks after its first write)."""
    return max(PACK_BUDGET, PACK_LIMIT + KEEP_YOUNG) + 1 + writers * LOOK_EVERY
MERGED = ".merged"
# Beside objects/, in the git common dir. A pack is removed together with its mark, so every
# removal changes this directory: odbfresh.py watches its mtime to know when a long-lived
# repository handle must let go of the packs libgit2 still holds open.
MARKS_DIR = "liza-merged-packs"
# A pack file without its index, or a tmp_* file, this old is a crashed writer's (a transition
# writes both in milliseconds; git's own index-pack of a slow fetch keeps its tmp file growing).
LEFTOVER_SECONDS = 600.0


def add(objects_dir: str, objs: Iterable[Obj], *, durable: bool = False) -> str | None:
    """`write`, then merge small packs when it is due. A failed merge is only housekeeping: the
    new pack is complete and in place, so it is not an error."""
    name = packfile.write(objects_dir, objs, durable=durable)
    if name is None:
        return None
    # `due` picks one write in eight by chance; a run of misses (1 in 50 runs 30 long) would let
    # the packs pile past git's gc.autoPackLimit, so a process looks after LOOK_EVERY writes
    # anyway, and after its first (a command that writes once would otherwise look by chance).
    since = _SINCE.get(objects_dir, 0) + 1
    _SINCE[objects_dir] = since
    if due(name) or since >= LOOK_EVERY or since == 1 or objects_dir in _PRESSED:
        _SINCE[objects_dir] = 0
        try:
            consolidate(objects_dir)
        except OSError:
            pass
    return name


def due(name: str | None) -> bool:
    """Whether to look for packs to merge after writing pack `name`: one write in eight (the
    pack's hash decides, so no state is kept), which spares seven directory listings of eight."""
    return name is not None and name[5] in "01"


def consolidate(objects_dir: str, limit: int | None = None, grace: float | None = None
                ) -> str | None:
    """Merge the smallest packs when there are more than `limit`; the merged pack's name.

    A merged pack is not removed at once: a reader that listed the directory just before the
    merge would then find neither (libgit2 and git rescan once per miss). It is marked
    (MARKS_DIR/<pack>) and removed by a later call once the mark is `grace` seconds old, or
    MIN_GRACE_SECONDS old while the directory holds more than PACK_BUDGET packs."""
    pack_dir = os.path.join(objects_dir, "pack")
    try:
        names = os.listdir(pack_dir)
    except FileNotFoundError:
        return None
    marks_dir = _marks_dir(objects_dir)
    try:
        marked = os.listdir(marks_dir)
    except FileNotFoundError:
        marked = []
    now = time.time()
    grace = GRACE_SECONDS if grace is None else grace
    # Marks of earlier versions lived in the pack directory as <pack>.merged: still honoured.
    legacy = {n[: -len(MERGED)] for n in names if n.endswith(MERGED)}
    merged_marks = legacy | set(marked)
    idx_all = [n[:-4] for n in names if n.startswith("pack-") and n.endswith(".idx")]
    left = _remove_old(pack_dir, marks_dir, merged_marks, legacy, now - grace,
                       len(idx_all) - PACK_BUDGET, now - MIN_GRACE_SECONDS)
    # Still over the budget (marks too young): look again at every write until it is not.
    if len(idx_all) - left > PACK_BUDGET:
        _PRESSED.add(objects_dir)
    else:
        _PRESSED.discard(objects_dir)
    # Only finished packs: a writer's tmp_* files are not ours to take (it renames them next).
    idx_names = [n for n in idx_all if n not in merged_marks]
    if len(idx_names) <= (PACK_LIMIT if limit is None else limit):
        return None
    held = {n.rsplit(".", 1)[0] for n in names if n.endswith((".keep", ".promisor"))}
    sizes = []
    for base in idx_names:
        if base in held:
            continue
        try:  # objects in an index v2: (size - header and fan-out - trailer) / 28 per object
            sizes.append(((os.stat(os.path.join(pack_dir, base + ".idx")).st_size - 1072) // 28,
                          base))
        except FileNotFoundError:  # merged away by another process meanwhile
            continue
    sizes.sort()
    chosen: list[str] = []
    total = 0
    for count, base in sizes:
        if chosen and count > 2 * total:
            break
        chosen.append(base)
        total += count
    if len(chosen) < 2:
        return None
    # Streamed (packmerge.py): reading the chosen packs whole, the biggest holding most of the
    # history, made a long-lived writer's memory step up with every merge of it. Imported here:
    # a command that merges nothing (status, log) need not load it (and mmap) at start-up.
    from gitliza.git.objects import packmerge
    merged, paths = packmerge.merge(objects_dir, [os.path.join(pack_dir, b) for b in chosen])
    if merged is None:
        return None
    copied = [os.path.basename(p) for p in paths]
    for base in copied:
        if base != merged:
            _mark(marks_dir, base)
    _MARKED_BY_US.add(objects_dir)
    return merged


def _marks_dir(objects_dir: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(objects_dir)), MARKS_DIR)


def _mark(marks_dir: str, base: str) -> None:
    """Create (or leave) a mark. Another process may have marked the same pack: keep its time."""
    path = os.path.join(marks_dir, base)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    except FileExistsError:
        pass
    except FileNotFoundError:
        os.makedirs(marks_dir, exist_ok=True)
        _mark(marks_dir, base)


# When each pending mark was made, per pack directory: a mark is created once and never changed,
# so a process stats it once. In a burst of writes (an import, a sync replay, a busy board) a
# minute's marks number in the hundreds, and statting them all on every merge cost more than the
# writes themselves.
_MARK_TIMES: dict[str, dict[str, float]] = {}
# Object directories where this process marked packs: it removes what it can on exit.
_MARKED_BY_US: set[str] = set()
# Object directories found over PACK_BUDGET at the last look: looked at after every write.
_PRESSED: set[str] = set()
_SINCE: dict[str, int] = {}  # writes since this process last looked, per object directory


def _remove_old(pack_dir: str, marks_dir: str, marks: set[str], legacy: set[str], before: float,
                over_budget: int, budget_before: float) -> int:
    """Remove the marked packs marked before `before`; and while `over_budget` > 0, the oldest
    of the others marked before `budget_before`. How many it removed."""
    known = _MARK_TIMES.get(pack_dir, {})
    pending: dict[str, float] = {}
    ripe: list[str] = []
    for base in marks:
        made = known.get(base)
        if made is None:
            try:
                made = os.stat(os.path.join(pack_dir, base + MERGED) if base in legacy
                               else os.path.join(marks_dir, base)).st_mtime
            except FileNotFoundError:
                continue
        if made > before:
            pending[base] = made
        else:
            ripe.append(base)
    over_budget -= len(ripe)
    if over_budget > 0:
        young = sorted((m, b) for b, m in pending.items())
        for i, (made, base) in enumerate(young):
            if over_budget <= 0:
                break
            # The newest KEEP_YOUNG are kept until MIN_GRACE_SECONDS old: the count stays bounded
            # however many merges a slow machine's grace saw.
            if made > budget_before and len(young) - i <= KEEP_YOUNG:
                break
            ripe.append(base)
            del pending[base]
            over_budget -= 1
    for base in ripe:
        for ext in (".idx", ".pack", ".rev", MERGED):  # index first: readers stop seeing it at once
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(pack_dir, base + ext))
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(marks_dir, base))
    _MARK_TIMES[pack_dir] = pending
    return len(ripe)


@atexit.register
def _settle() -> None:
    """On exit, a process that merged packs removes the marked ones it may (their grace, or the
    short grace past the budget, permitting): a burst of writes that ends leaves no pile of packs
    for git's gc --auto to find, without waiting for the next write."""
    for objects_dir in list(_MARKED_BY_US):
        with contextlib.suppress(OSError):
            if settle(objects_dir) > PACK_BUDGET:  # marks too young yet: a burst just ended
                time.sleep(MIN_GRACE_SECONDS)
                settle(objects_dir)


def settle(objects_dir: str) -> int:
    """Remove the marked packs that are due now (no merge); how many packs are left. `doctor
    --fix` and exit run it."""
    consolidate(objects_dir, limit=1 << 30)
    try:
        return sum(1 for n in os.listdir(os.path.join(objects_dir, "pack")) if n.endswith(".idx"))
    except FileNotFoundError:
        return 0


def leftovers(objects_dir: str, min_age: float = LEFTOVER_SECONDS) -> list[str]:
    """Files in objects/pack/ that a crashed writer left, at least `min_age` old: a pack without
    its index (cut short, or killed between the two), a `tmp_*` file (ours or git's), and marks
    of earlier versions whose pack is gone. Their paths."""
    pack_dir = os.path.join(objects_dir, "pack")
    try:
        names = set(os.listdir(pack_dir))
    except FileNotFoundError:
        return []
    now = time.time()
    out = []
    for n in sorted(names):
        if n.startswith("tmp_") or (n.startswith("pack-") and n.endswith(".pack")
                                    and n[:-5] + ".idx" not in names) \
                or (n.endswith(MERGED) and n[: -len(MERGED)] + ".idx" not in names):
            path = os.path.join(pack_dir, n)
            try:
                if now - os.stat(path).st_mtime >= min_age:
                    out.append(path)
            except FileNotFoundError:
                continue
    return out


_DIRS: dict[str, str] = {}


def objects_dir(repo: Any) -> str | None:
    """Where `repo` keeps its objects (a worktree's are in the common dir), or None when this
    process must write through libgit2: inside a hook's quarantine or with a redirected object
    directory (GIT_OBJECT_DIRECTORY), where objects must land where git says."""
    if "GIT_OBJECT_DIRECTORY" in os.environ or "GIT_QUARANTINE_PATH" in os.environ:
        return None
    gitdir = str(repo.path)
    found = _DIRS.get(gitdir)
    if found is None:
        found = _DIRS[gitdir] = str(common_dir(repo) / "objects")
    return found
