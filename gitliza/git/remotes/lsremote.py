"""The remote's board refs without fetching: one `git ls-remote` (what the remote follower asks every
few seconds, gitliza/services/sync/follower.py; a request of ls-remote's cost, no objects)."""
from __future__ import annotations

import re
from pathlib import Path

from gitliza.errors import GitFailure
from gitliza.git.gitcmd import error_line, run_git
from gitliza.git.remotes.remote import BOARD_PREFIX, Remote

_OID = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


def board_refs(repo_path: Path | str, rem: Remote, *, timeout: float) -> dict[str, str]:
    """Every ref under refs/liza/ on the remote (the board and its live refs), name -> oid."""
    run = run_git(repo_path, ["ls-remote", "--", rem.arg, BOARD_PREFIX + "*"], timeout=timeout)
    if run.returncode != 0:
        raise GitFailure(f"git ls-remote {rem.arg} failed: {error_line(run.stderr)}")
    out: dict[str, str] = {}
    for line in run.stdout.splitlines():
        oid, _, name = line.partition("\t")
        if name.startswith(BOARD_PREFIX) and _OID.fullmatch(oid):
            out[name] = oid
    return out
