"""A machine that dies loses at most one snapshot interval (issue 48): two real clones of a real bare
remote with the server hook, real supervisors, scripted agents, a real SIGKILL.

B's coder commits, leaves an uncommitted edit and an untracked file, and works on; its supervisor
snapshots the worktree every `wip_snapshot_interval` and its follower pushes the snapshot. B is
SIGKILLed (supervisor and agent): the edit is on the remote under refs/liza/wip/t1/coder-1. A's
coder takes t1 over once B's lease lapses: its prompt names the snapshot, now an attic entry, and
`git liza attic t1 --restore` gives it back the dead coder's files, uncommitted ones included.
"""
from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.cli.test_board import liza, ok
from tests.conftest import git
from tests.team.procs import Sup, add_task, commits_then_hangs, script, task_of, until
from tests.team.test_follow_remote import _machines

pytestmark = pytest.mark.slow

WORKS_ON = commits_then_hangs("echo $$ > {pid}", subject="first half of $LIZA_TASK_ID")
# The coder taking over: restores the snapshot its prompt names, takes its files, submits.
TAKES_OVER = """test -n "$LIZA_TASK_ID"
oid=$(sed -n 's/.*git liza attic t1 --restore \\([0-9a-f]*\\).*/\\1/p' "$LIZA_PROMPT_FILE" | head -1)
test -n "$oid"
git liza attic t1 --restore "$oid" --into {restored}
cp {restored}/README.md {restored}/new.txt {restored}/committed.txt .
git add -A
git commit -q -m "finish $LIZA_TASK_ID from coder-1's work"
git liza submit "$LIZA_TASK_ID"
"""


def _kill_agent(pid: Path) -> None:
    """The scripted agent whose pid is written in `pid`, if it started (it outlives a killed
    supervisor)."""
    if pid.exists():
        try:
            os.kill(int(pid.read_text()), signal.SIGKILL)
        except ProcessLookupError:
            pass


def _show(repo: Path, what: str) -> str | None:
    out = git(repo, "show", what, check=False)
    return None if "fatal" in out else out


def test_a_killed_machines_uncommitted_edit_is_on_the_remote_and_the_takeover_restores_it(
        repo: Path, tmp_path: Path) -> None:
    bare, a, b = _machines(tmp_path, repo, wip_snapshot_interval="1")
    git(a, "config", "liza.machine", "machine-a")  # two machines, though on one host
    git(b, "config", "liza.machine", "machine-b")
    pid, restored = tmp_path / "agent.pid", tmp_path / "restored"
    first = Sup(b, "coder", "coder-1", "--",
                str(script(tmp_path, "works.sh", WORKS_ON.format(pid=pid))))
    second: Sup | None = None
    ref = "refs/liza/wip/t1/coder-1"
    try:
        first.expect("supervising coder-1")
        add_task(a, "t1")
        until(pid.exists, "B's coder never started on t1")
        # Within an interval or so the remote holds the uncommitted edit and the untracked file.
        until(lambda: _show(bare, f"{ref}:README.md") == "an uncommitted edit" and
              _show(bare, f"{ref}:new.txt") == "untracked", "the snapshot never reached the remote")
        # The machine dies: its supervisor and its agent, no handler run.
        first.kill()
        os.kill(int(pid.read_text()), signal.SIGKILL)
        snap = git(bare, "rev-parse", ref)
        assert _show(bare, f"{snap}:committed.txt") == "committed"  # its commit too
        # A's coder takes t1 over once B's lease lapses; its prompt names the snapshot.
        second = Sup(a, "coder", "coder-2", "--",
                     str(script(tmp_path, "takes.sh", TAKES_OVER.format(restored=restored))))
        second.expect("agent completed")
        t = task_of(a, "t1")
        assert (t["status"], t["assigned_to"]) == ("READY_FOR_REVIEW", "coder-2"), t
        assert (restored / "README.md").read_text() == "an uncommitted edit\n"
        assert (restored / "new.txt").read_text() == "untracked\n"
        prompt = next(Path(line.split("prompt ")[-1]) for line in second.lines
                      if "started agent" in line and "prompt " in line)
        text = prompt.read_text()
        assert f"coder-1, who held t1 before you" in text and snap[:12] in text
        assert "first half of t1" in text  # its last commit's subject, quoted
        # The snapshot became an attic entry on the remote, and the wip ref was dropped there.
        entry = f"refs/liza-attic/t1/{snap}"
        until(lambda: git(bare, "for-each-ref", "--format=%(refname)", entry) == entry,
              "the snapshot's attic entry never reached the remote")
        until(lambda: git(bare, "for-each-ref", "--format=%(refname)", ref) == "",
              "the dead coder's wip ref was never dropped")
        # B comes back: before anything else its coder's supervisor keeps what the dead session
        # left in B's worktree (t1 has left it: the commit and the uncommitted edits) and shares it.
        second.signal(signal.SIGINT)
        second.wait()
        back = Sup(b, "coder", "coder-1", "--", str(script(tmp_path, "idle.sh", "exit 0\n")))
        line = back.expect("a dead session's leftovers")
        kept = [w.rstrip(",") for w in line.split() if w.startswith("refs/liza-attic/t1/")]
        assert kept, line
        shared = back.expect("pushed")  # the sync that shares them, before anything else
        assert shared.split("] ")[-1].startswith("attic:"), shared
        for k in kept:
            assert _show(bare, f"{k}:README.md") == "an uncommitted edit", k  # on the remote
            assert _show(bare, f"{k}:committed.txt") == "committed"
        # Kept whole and shared, the dead coder's checkout goes: t1 is coder-2's now, and a review
        # of it on B must check out the submitted commit, not find the leftover in the way.
        cleared = back.expect("its worktree and branch here removed")
        assert cleared.split("] ")[-1].startswith("t1:"), cleared
        assert not (b / ".worktrees" / "t1").exists()
        assert git(b, "branch", "--list", "liza/t1") == ""
        back.signal(signal.SIGINT)
        back.wait()
        said = liza(b, "doctor", agent=None)
        assert "t1" not in said.stdout.replace("elsewhere t1", ""), said.stdout
    finally:
        ok(liza(a, "abort", agent=None))
        first.kill()
        if second is not None:
            second.wait()
            second.kill()
        _kill_agent(pid)


def test_a_new_snapshot_reaches_the_remote_without_waiting_for_the_followers_sync(
        repo: Path, tmp_path: Path) -> None:
    """The snapshot thread pushes each new snapshot itself (services/sync/wipshare.py): with a
    follower that checks the remote only every 600 s (its first check at its start, the next
    450 s or more later), B's first snapshot still reaches the remote within seconds of the work.
    Before, it waited for the follower's next check and its whole sync (on a loaded machine the
    fleet scenario's B had no snapshot on the remote 5.5 s into its work)."""
    bare, a, b = _machines(tmp_path, repo, wip_snapshot_interval="1", follow_interval="600")
    pid = tmp_path / "agent.pid"
    sup = Sup(b, "coder", "coder-1", "--",
              str(script(tmp_path, "works.sh", WORKS_ON.format(pid=pid))))
    ref = "refs/liza/wip/t1/coder-1"
    try:
        sup.expect("supervising coder-1")
        add_task(b, "t1")  # on B, shared by B's own add: B's follower need not hear of it
        until(pid.exists, "B's coder never started on t1")
        until(lambda: _show(bare, f"{ref}:README.md") == "an uncommitted edit" and
              _show(bare, f"{ref}:new.txt") == "untracked", lambda: "the snapshot never reached "
              "the remote (no follower sync in 450 s or more):\n" + sup.output())
        snap = git(bare, "rev-parse", ref)
        assert _show(bare, f"{snap}:committed.txt") == "committed"  # its commit too
        # The clone knows the remote holds it (its tracking ref moves once the push returns): the
        # follower's next check has no snapshot of ours to sync for.
        until(lambda: git(b, "for-each-ref", "--format=%(objectname)",
                          "refs/remotes/origin/liza/wip/t1/coder-1") == git(b, "rev-parse", ref),
              "B's tracking ref of its snapshot never moved")
        assert "not pushed yet" not in sup.output()
    finally:  # (an ABORT waits for the session to end: the agent here never does)
        sup.kill()
        _kill_agent(pid)
