"""A board fetched shallow: git's own shallow clone, for the state ref only.

A new clone of a long board does not need its whole chain: it verifies from the newest seal (the
human's signed checkpoint, gitliza/services/verify/seals.py). `fetch` brings the state ref's newest
`depth` commits (`git fetch --depth`; again with a longer depth to reach further back, since
`--deepen` would deepen every boundary of the repository, a shallow checkout's branches too),
`unshallow` fetches the rest (`git fetch --unshallow`: what `git liza verify --full` runs). git
records the boundary commits in `<common dir>/shallow`; libgit2 honours that file, so a boundary
commit reads as if it had no parent: every walk of the history (log, analyze, events) stops there
by itself. `points` tells a boundary from a real root, `boundary_below` one of the board's chain
from one of a shallow checkout's branches.

Always through the `git` executable: the in-process transport (direct.py) copies whole chains.
The code branches are fetched by the ordinary fetch afterwards and stay as they were: only the
board's chain is cut.
"""
from __future__ import annotations

from pathlib import Path

import pygit2

from gitliza.errors import GitFailure
from gitliza.git.gitcmd import error_line, run_git
from gitliza.git.remotes.remote import STATE_REF, Remote, tracking_of
from gitliza.git.repository import common_dir

SHALLOW = "shallow"  # the file git keeps the boundary commits in, in the common dir


def points(repo: pygit2.Repository) -> frozenset[str]:
    """The shallow boundary commits (full hex oids); empty for a complete repository."""
    try:
        text = (common_dir(repo) / SHALLOW).read_text()
    except OSError:
        return frozenset()
    return frozenset(line.strip() for line in text.splitlines() if line.strip())


def is_boundary(repo: pygit2.Repository, oid: pygit2.Oid | str) -> bool:
    """True when `oid` is a shallow boundary: its parents exist on the remote, not here."""
    return str(oid) in points(repo)


def _fetch(path: Path, rem: Remote, depth_args: list[str], timeout: float) -> str | None:
    tracking = tracking_of(rem, STATE_REF)
    run = run_git(path, ["fetch", "--no-tags", "--no-write-fetch-head", *depth_args, "--",
                         rem.arg, f"+{STATE_REF}:{tracking}"], timeout=timeout)
    if run.returncode != 0 and "couldn't find remote ref" in run.stderr:
        return None  # the remote has no board (yet): nothing to join
    if run.returncode != 0:
        raise GitFailure(f"git fetch {' '.join(depth_args)} from {rem.arg} failed: "
                         f"{error_line(run.stderr)}")
    return tracking


def fetch(path: Path, remote: Remote, depth: int, timeout: float) -> str | None:
    """The remote's newest `depth` state commits into the tracking ref (returned; None: the
    remote has no board). Only for a clone that has none of the board yet: git cuts the chain
    `depth` commits below the tip."""
    return _fetch(path, remote, [f"--depth={depth}"], timeout)


def unshallow(path: Path, rem: Remote, timeout: float) -> None:
    """The rest of the chain: the repository is complete again (git drops its shallow file).
    Objects only: no ref moves, so a remote tip newer than the local board is not taken for
    the remote's word before a sync has checked it."""
    run = run_git(path, ["fetch", "--no-tags", "--no-write-fetch-head", "--unshallow", "--",
                         rem.arg, STATE_REF], timeout=timeout)
    if run.returncode != 0:
        raise GitFailure(f"git fetch --unshallow from {rem.arg} failed: {error_line(run.stderr)}")


def boundary_below(repo: pygit2.Repository, tip: pygit2.Oid | None) -> str | None:
    """The shallow boundary the history of `tip` stops at (a walk from `tip` ends there, not at
    the root), or None when that history is complete here."""
    if tip is None:
        return None
    for p in sorted(points(repo)):
        try:
            if p == str(tip) or repo.descendant_of(tip, pygit2.Oid(hex=p)):
                return p
        except (KeyError, ValueError, pygit2.GitError):
            continue
    return None


def note(repo: pygit2.Repository, tip: pygit2.Oid | None) -> str | None:
    """One line for a command that walked the history of `tip` and stopped at a boundary."""
    p = boundary_below(repo, tip)
    if p is None:
        return None
    return (f"the history before {p[:12]} is not in this clone (it joined at a seal): "
            "`git liza verify --full` fetches it")
