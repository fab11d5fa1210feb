"""The integration test's full output, kept where wt-merge.sh keeps it:
`.liza/integration-test-<task>-<epoch>.log` (the board records a one-line reason that names it)."""
from __future__ import annotations

from pygit2 import Repository

from gitliza import atomic
from gitliza.core import clock
from gitliza.git.repository import common_dir
from gitliza.errors import LizaError
from gitliza.git.repository import LIZA_DIR, ensure_excluded, liza_dir


def keep(repo: Repository, task: str, now: str, output: str) -> str | None:
    """Write the log; its path relative to the main worktree, or None if it cannot be written
    (the merge's own failure is what matters then)."""
    name = f"integration-test-{task}-{int(clock.to_epoch(now))}.log"
    try:
        directory = liza_dir(repo)  # refused when tracked or a link: then no log is kept
        ensure_excluded(common_dir(repo), LIZA_DIR)
        atomic.write(directory, name, output.encode("utf-8", "replace"))
    except (OSError, LizaError):
        return None
    return f"{LIZA_DIR}/{name}"
