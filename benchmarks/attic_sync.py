#!/usr/bin/env python3
"""What sharing the attic adds to a sync (issue 38 item 3; not part of `dev.py bench`).

A bare remote and a clone with a board and ENTRIES attic entries already shared. Measured in
process (engine.sync, median of RUNS each, milliseconds):

    plain        a sync with nothing to do and the attic not due (what autosync pays nearly always)
    exchange     the same sync with the attic exchanged (fetch, check, nothing new): `git liza sync`,
                 or an autosync once every atticshare.SHARE_EVERY seconds
    one new      a sync that pushes one new entry (kept here since the last exchange)

Usage: python3 benchmarks/attic_sync.py [RUNS] [ENTRIES]   (default 15, 50)
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pygit2  # noqa: E402

from gitliza.git.store import Store  # noqa: E402
from gitliza.services import attic  # noqa: E402
from gitliza.services.sync import engine  # noqa: E402
from tests.conftest import IDENTITY, git, remote_of  # noqa: E402
from tests.services.test_sync import seed  # noqa: E402


def _entry(repo: Path, n: int) -> None:
    commit = git(repo, "commit-tree", git(repo, "rev-parse", "HEAD^{tree}"), "-p", "HEAD",
                 "-m", f"kept {n}")
    attic.to_attic(pygit2.Repository(str(repo)), f"t{n % 7}", pygit2.Oid(hex=commit), "bench")


def _ms(fn: object) -> float:
    t = time.perf_counter()
    fn()  # type: ignore[operator]
    return (time.perf_counter() - t) * 1000


def main(runs: int, entries: int) -> None:
    os.environ.update(IDENTITY)
    tmp = Path(tempfile.mkdtemp(prefix="attic-sync-"))
    bare, work = seed(tmp)
    git(work, "config", "liza.remote", "origin")
    for n in range(entries):
        _entry(work, n)
    store = Store.discover(work)
    engine.sync(store, remote_of(store, "origin"), attic=True)
    plain, exchange, new = [], [], []
    for i in range(runs):
        exchange.append(_ms(lambda: engine.sync(store, remote_of(store, "origin"), attic=True)))
        plain.append(_ms(lambda: engine.sync(store, remote_of(store, "origin"))))
        _entry(work, entries + i)
        new.append(_ms(lambda: engine.sync(store, remote_of(store, "origin"))))
    for name, xs in (("plain", plain), ("exchange", exchange), ("one new", new)):
        print(f"{name:9} median {statistics.median(xs):7.1f} ms  (min {min(xs):.1f}, "
              f"max {max(xs):.1f}, {len(xs)} runs, {entries}+ entries)")
    shared = git(bare, "for-each-ref", "refs/liza-attic/").count("\n") + 1
    print(f"entries on the remote at the end: {shared}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15,
         int(sys.argv[2]) if len(sys.argv) > 2 else 50)
