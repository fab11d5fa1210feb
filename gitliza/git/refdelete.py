"""Deleting a ref: by git's own `update-ref -d`, never by libgit2.

libgit2 (1.9, `refdb_fs.c`'s `packed_delete`) deletes a packed ref by reading `packed-refs`,
dropping the entry, and only then taking `packed-refs.lock` to write back what it read. A `git
pack-refs` (every `git gc`, `git maintenance run`, `gc --auto`) that commits a new `packed-refs`
in between, and then removes the loose files of the refs it packed, is undone: libgit2 writes the
older list back, and every ref packed meanwhile either goes back to its older value or vanishes.
Beside a user's gc loop, one branch clean-up after a merge put `refs/liza/state` back by one
commit (a recorded verdict gone: the task READY_FOR_REVIEW again, its reviewer's supervisor
stopping on the inconsistency) and took two task branches away with it; the five commits of one
of them were lost (the maintenance benchmark's run with 5 lost commits). Reproduced exactly with
a delay injected by strace between libgit2's read and its lock (tests/git/test_refdelete.py).

git takes `packed-refs.lock` before it reads the file, so a concurrent pack-refs either finishes
first (and git reads its result) or waits. Deleting through git costs a process (a few ms), paid
at teardowns, never per transition. Hooks are not run (`core.hooksPath` pointed at nothing): the
deletion is gitliza's own, as it was through libgit2, which runs none.
"""
from __future__ import annotations

import pygit2

from gitliza.errors import GitFailure
from gitliza.git import reflocks
from gitliza.git.gitcmd import error_line, local_git
from gitliza.git.repository import common_dir

_MOVED = ("is at ", "unable to resolve reference", "but expected")


def delete(repo: pygit2.Repository, name: str, old: pygit2.Oid | str | None = None,
           what: str | None = None) -> bool:
    """Delete ref `name` (full name), only while it points at `old` when that is given. False when
    it was not there or had moved (nothing changed); a held lock is waited out
    (reflocks.retrying), then RefLocked; any other failure GitFailure."""
    args = ["-c", "core.hooksPath=/dev/null", "update-ref", "--no-deref", "-d", name]
    if old is not None:
        args.append(str(old))
    where = common_dir(repo)
    label = what or f"cannot delete {name}"

    def run() -> bool:
        r = local_git(where, *args)
        if r.returncode == 0:
            return True
        if old is not None and any(m in r.stderr for m in _MOVED):
            return False
        if reflocks.locked_path(RuntimeError(r.stderr)) is not None:
            raise RuntimeError(r.stderr)  # retrying waits a held lock out
        raise GitFailure(f"{label}: {error_line(r.stderr)}")

    return reflocks.retrying(run, label)

