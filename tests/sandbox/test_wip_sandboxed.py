"""Work-in-progress snapshots with the sandbox on (issue 48): two real clones of a real bare remote
with the server hook, real supervisors running their agents under bubblewrap (`--sandbox on`), a
real SIGKILL.

B's sandboxed coder commits (into its private git directory: sandbox/gitview.py, which no ref of
the clone sees until its next `git liza` command), leaves an uncommitted edit and an untracked
file, and works on. Within a snapshot interval and a follower check the remote's
refs/liza/wip/t1/coder-1 holds all three. B's supervisor is SIGKILLed (its agent dies with it).
A's coder, sandboxed too, takes t1 over once B's lease lapses; its prompt names the snapshot and
`git liza attic t1` lists it inside the sandbox; `--restore` (a new worktree, outside the
sandbox's view) is refused there with the way that works, `git checkout COMMIT -- .`, which the
prompt names too: it gives the new coder the dead coder's files.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import git
from tests.sandbox.test_rogue import _agent_log, needs_bwrap
from tests.team.procs import Sup, add_task, script, task_of, until
from tests.team.test_follow_remote import _machines

pytestmark = [pytest.mark.slow, needs_bwrap]

WORKS_ON = """test -n "$LIZA_TASK_ID"
echo committed > committed.txt
git add committed.txt
git commit -q -m "first half of $LIZA_TASK_ID"
echo "an uncommitted edit" > README.md
echo "untracked" > new.txt
echo WROTE
exec sleep 600
"""
# The coder taking over, in its own sandbox: lists the attic, is told why `--restore` cannot
# serve it there (a worktree outside its view) and how, then brings the snapshot its prompt names
# into its own worktree, and submits.
TAKES_OVER = """test -n "$LIZA_TASK_ID"
oid=$(sed -n 's/.*git liza attic t1 --restore \\([0-9a-f]*\\).*/\\1/p' "$LIZA_PROMPT_FILE" | head -1)
test -n "$oid"
git liza attic t1 | grep -q "$oid" && echo "LISTED $oid"
git liza attic t1 --restore "$oid" || echo "REFUSED"
git checkout "$oid" -- .
git commit -q -m "finish $LIZA_TASK_ID from coder-1's work"
git liza submit "$LIZA_TASK_ID"
echo SUBMITTED
"""


def _show(repo: Path, what: str) -> str | None:
    out = git(repo, "show", what, check=False)
    return None if "fatal" in out else out


def test_a_sandboxed_coders_work_reaches_the_remote_and_a_sandboxed_takeover_restores_it(
        repo: Path, tmp_path: Path) -> None:
    bare, a, b = _machines(tmp_path, repo, wip_snapshot_interval="1")
    first = Sup(b, "coder", "coder-1", "--sandbox", "on", "--",
                str(script(tmp_path, "works.sh", WORKS_ON)))
    second: Sup | None = None
    ref = "refs/liza/wip/t1/coder-1"
    try:
        first.expect("supervising coder-1")
        add_task(a, "t1")
        until(lambda: "WROTE" in _agent_log(b, "coder-1"), "B's coder never wrote its work")
        # The commit is in the agent's private git directory only: no ref of B holds it ...
        assert "first half" not in git(b, "log", "--all", "--format=%s", check=False)
        # ... yet within an interval or so the remote's wip ref holds it, with the edits.
        until(lambda: _show(bare, f"{ref}:README.md") == "an uncommitted edit" and
              _show(bare, f"{ref}:new.txt") == "untracked" and
              _show(bare, f"{ref}:committed.txt") == "committed",
              "the sandboxed coder's work never reached the remote")
        snap = git(bare, "rev-parse", ref)
        assert "first half of t1" in git(bare, "log", "--format=%s", snap)
        first.kill()  # the machine dies: its agent with it (--die-with-parent)
        second = Sup(a, "coder", "coder-2", "--sandbox", "on", "--",
                     str(script(tmp_path, "takes.sh", TAKES_OVER)))
        second.expect("agent completed", timeout=120)
        log = _agent_log(a, "coder-2")
        assert "SUBMITTED" in log, log
        t = task_of(a, "t1")
        assert (t["status"], t["assigned_to"]) == ("READY_FOR_REVIEW", "coder-2"), (t, log)
        # What coder-2 submitted is the dead coder's work, uncommitted edit included.
        assert _show(bare, "refs/heads/liza/t1:README.md") == "an uncommitted edit"
        assert _show(bare, "refs/heads/liza/t1:new.txt") == "untracked"
        assert _show(bare, "refs/heads/liza/t1:committed.txt") == "committed"
        assert f"LISTED {snap[:12]}" in log and "REFUSED" in log, log
        assert f"`git checkout COMMIT -- .` brings the entry's files" in log, log
    finally:
        first.kill()
        if second is not None:
            second.kill()
