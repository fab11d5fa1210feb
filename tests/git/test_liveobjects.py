"""A renewal's objects (git/liveobjects.py): in gitliza's own store, out of the user's maintenance's
reach, and dropped by gitliza itself a grace after a newer renewal replaced them (issue 38)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pygit2
import pytest

from gitliza.core.presence.renewals import Renewal
from gitliza.git import liveobjects, liveref
from tests.conftest import git

AGENTS = ("coder-1", "coder-2", "reviewer-1")
# What a user's cron, IDE or habit runs; each one deletes unreferenced loose objects of objects/
# at once (--prune=now, --expire=now), the case git's documentation calls racy.
PRUNING = (("prune", "--expire=now"), ("gc", "--prune=now", "--quiet"), ("repack", "-ad", "-q"),
           ("gc", "--aggressive", "--prune=now", "--quiet"))
ROUNDS = 25  # rounds of the whole list, each racing the renewals


def _renewal(agent: str, n: int) -> Renewal:
    beat = f"2026-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}Z"
    return Renewal(agent=agent, heartbeat=beat, generation=1, task=None, lease_expires=None,
                   supervisor_expires=f"2026-01-01T01:{n // 60 % 60:02d}:{n % 60:02d}Z")


def _renew(repo: Path, agent: str, n: int) -> str:
    done = liveref.write(pygit2.Repository(str(repo)), agent, lambda _c: _renewal(agent, n),
                         lambda body, _a: body)
    assert done.commit is not None
    return done.commit


# A supervisor's lease keeper, as far as the objects go: renewals of three agents in a loop, in a
# process of its own (real writes racing real git), until the file STOP appears.
RENEWER = textwrap.dedent("""
    import os, sys, pygit2
    sys.path.insert(0, {root!r})
    from tests.git.test_liveobjects import AGENTS, _renewal
    from gitliza.errors import ConcurrencyConflict
    from gitliza.git import liveref
    repo = pygit2.Repository({repo!r})
    n = conflicts = 0
    errors = []
    while not os.path.exists({stop!r}):
        for a in AGENTS:
            try:
                liveref.write(repo, a, lambda _c: _renewal(a, n), lambda body, _a: body)
            except ConcurrencyConflict:  # the user's gc held the ref's lock: the next beat
                conflicts += 1
            except Exception as e:  # the lease keeper retries at the next beat too
                errors.append(f"{{type(e).__name__}}: {{e}}")
        n += 1
        if n == 1:
            print("started", flush=True)
    print(n, conflicts)
    print(" | ".join(errors[:5]))
""")


@pytest.mark.slow
def test_renewals_racing_the_users_prune_and_gc_never_fail_a_user_command(
        repo: Path, tmp_path: Path) -> None:
    """Real `git prune --expire=now`, `gc --prune=now`, `repack -ad` in a loop beside a process
    renewing three live refs as fast as it can: every user command succeeds, and afterwards every
    live ref names a commit git can read (before: the objects were loose in objects/, and a prune
    whose ref scan came first deleted them after the ref moved)."""
    stop = tmp_path / "STOP"
    script = RENEWER.format(root=str(Path(__file__).resolve().parents[2]), repo=str(repo),
                            stop=str(stop))
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    failures: list[str] = []
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "started\n", proc.communicate()
        for _ in range(ROUNDS):
            for cmd in PRUNING:
                r = subprocess.run(["git", *cmd], cwd=repo, capture_output=True, text=True)
                if r.returncode != 0:
                    failures.append(f"git {' '.join(cmd)}: {r.stderr.strip()[:200]}")
    finally:
        stop.touch()
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    counts, _, errors = out.partition("\n")
    renewals, conflicts = map(int, counts.split())
    assert renewals > ROUNDS, renewals  # the renewals ran throughout the loop
    assert failures == []
    assert errors.strip() == ""  # and none of them failed (a lock held too long aside)
    assert conflicts < renewals // 10, conflicts
    for a in AGENTS:
        git(repo, "cat-file", "-e", liveref.ref_of(a) + "^{tree}")
    git(repo, "gc", "--prune=now", "--quiet")
    git(repo, "fsck", "--no-dangling", "--connectivity-only")


def test_a_replaced_renewal_goes_a_grace_later_and_a_named_one_never(repo: Path) -> None:
    r = pygit2.Repository(str(repo))
    first, second, third = (_renew(repo, "coder-1", n) for n in range(3))
    # A remote's copy (what sync mirrors) still names the first one.
    git(repo, "update-ref", "refs/remotes/origin/liza/live/coder-1", first)
    # An agent's own commit, loose in the same store (its GIT_OBJECT_DIRECTORY): not a renewal.
    own = str(repo / ".git" / "liza-objects")
    env = {"GIT_OBJECT_DIRECTORY": own,
           "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(repo / ".git" / "objects")}
    agents = git(repo, "commit-tree", "-m", "an agent's", "HEAD^{tree}", env=env)

    def loose(oid: str) -> bool:
        return os.path.exists(os.path.join(own, oid[:2], oid[2:]))

    tree = {c: str(r[c].peel(pygit2.Tree).id) for c in (first, second, third)}
    assert all(loose(c) and loose(tree[c]) for c in (first, second, third))
    assert not any(os.path.exists(repo / ".git" / "objects" / c[:2] / c[2:])
                   for c in (first, second, third))  # none in objects/: no prune reaches them
    named = set(liveref.tips(r).values())
    t0 = os.stat(liveobjects.journal(r)).st_mtime
    assert liveobjects.sweep(r, named, t0 + liveobjects.GRACE / 2) == 0  # young: all stay
    assert loose(second)
    gone = liveobjects.sweep(r, named, t0 + liveobjects.GRACE + 5)
    assert gone == 3  # the second renewal's blob, tree and commit
    assert not loose(second) and not loose(tree[second])
    assert loose(first) and loose(tree[first])  # the remote's copy names it
    assert loose(third) and loose(tree[third])  # the live ref names it
    assert loose(agents)  # never listed in the journal, never touched
    # The entries still named stay in the journal: once nothing names them, they go too.
    git(repo, "update-ref", "-d", "refs/remotes/origin/liza/live/coder-1")
    assert liveobjects.sweep(r, set(liveref.tips(r).values()),
                             t0 + liveobjects.GRACE + 5) == 3
    assert not loose(first) and loose(third)
    assert liveref.local(pygit2.Repository(str(repo)), "coder-1") is not None
    git(repo, "fsck", "--no-dangling", "--connectivity-only")


def test_a_renewal_written_while_a_sweep_runs_starts_a_new_journal(repo: Path) -> None:
    """A sweep takes the journal aside by renaming it: what writers note meanwhile is kept for the
    next sweep, and a dead sweep's taken file is adopted once a grace old."""
    r = pygit2.Repository(str(repo))
    _renew(repo, "coder-1", 0)
    path = liveobjects.journal(r)
    aside = path.with_name(path.name + liveobjects.TAKEN + "999999-1-0")
    os.rename(path, aside)  # a sweep that died holding the journal
    newer = _renew(repo, "coder-1", 1)
    assert newer in path.read_text()
    t = os.stat(aside).st_ctime
    liveobjects.sweep(r, {newer}, t + liveobjects.GRACE / 2)
    assert aside.exists()  # not a grace old yet: maybe a sweep still at work
    assert liveobjects.sweep(r, {newer}, t + liveobjects.GRACE + 5) == 3
    assert not aside.exists() and newer in path.read_text()


def test_renewals_map_no_pack_of_the_store_they_write_into(repo: Path) -> None:
    """The renewals' object database writes loose objects only. With libgit2's pack backend, each
    write's existence check rescanned the pack directory and mapped every index there, for the
    life of the process: beside a board whose packs are merged and removed a few seconds after
    they appear, one more deleted index mapped per pack (issue 39: 2,600 in a supervisor after 17
    minutes of a busy team, 12 MB of RSS, and no open file to show it)."""
    from tests.git.test_odbfresh import _board, beat, deleted_maps

    store = _board(repo)
    handle = store.repo  # a lease keeper renews through the handle it reads the board with
    own = liveobjects.store(handle)
    assert own is not None
    packs_dir = Path(own[0]) / "pack"
    for n in range(300):  # a board write (a new pack, merged away soon) and a renewal, in turn
        beat(store)
        done = liveref.write(handle, "coder-1", lambda _c: _renewal("coder-1", n),
                             lambda body, _a: body)
        assert done.commit is not None and liveref.read(handle, done.commit) is not None
    assert len(os.listdir(packs_dir)) > 0
    with open("/proc/self/maps") as f:
        mapped = [line for line in f if str(packs_dir) in line]
    # The board's handle maps the packs it reads (and frees them when removed: odbfresh.py);
    # nothing removed stays mapped, whoever mapped it.
    assert deleted_maps(repo) == 0, mapped[:5]
