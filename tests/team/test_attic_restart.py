"""A SIGKILLed supervisor's session leaves work in its task's worktree; the next `git liza agent`
for the same id keeps it in the attic before it resumes or rebuilds anything (issue 38, item 4).
And a coder session that ended well keeps nothing there. Real supervisors, a real SIGKILL."""
from __future__ import annotations

import os
import signal
from pathlib import Path

import pygit2
import pytest

from tests.conftest import git
from tests.team.procs import Sup, add_task, commits_then_hangs, make_board, script

pytestmark = pytest.mark.slow

# Commits once, leaves an uncommitted edit and an untracked file, says so through the FIFO, hangs.
DIRTY = commits_then_hangs("echo ready > {fifo}")
DONE = """test -n "$LIZA_TASK_ID"
git checkout -q -- README.md
rm -f new.txt
echo done > done.txt
git add done.txt
git commit -q -m "finish $LIZA_TASK_ID"
git liza submit "$LIZA_TASK_ID"
"""


def _attic(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname)", "refs/liza-attic/").split()


def _killed_session(repo: Path, tmp_path: Path, text: str) -> None:
    """A coder session of t1 that ran `text` (its agent) and was SIGKILLed with its supervisor."""
    make_board(repo, lease_duration="600")
    add_task(repo, "t1")
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    first = Sup(repo, "coder", "coder-1", "--", str(script(tmp_path, "first.sh",
                                                            text.format(fifo=fifo))))
    with open(fifo) as f:  # the agent has made its mess (bounded by the test's timeout)
        assert f.read().strip() == "ready"
    first.kill()  # SIGKILL: no handler runs, the token stays live, the agent is orphaned


def test_a_restart_keeps_the_killed_sessions_work_before_it_resumes(repo: Path,
                                                                     tmp_path: Path) -> None:
    _killed_session(repo, tmp_path, DIRTY)
    assert _attic(repo) == []
    second = Sup(repo, "coder", "coder-1", "--", str(script(tmp_path, "done.sh", DONE)))
    line = second.expect("a dead session's leftovers")
    started = second.expect("started agent")
    assert second.lines.index(line) < second.lines.index(started)  # kept before the relaunch
    refs = _attic(repo)
    assert len(refs) == 1 and refs[0] in line, (refs, line)
    r = pygit2.Repository(str(repo))
    snap = r.revparse_single(refs[0]).peel(pygit2.Commit)
    assert snap.tree["new.txt"].data == b"untracked\n"  # type: ignore[union-attr]
    assert snap.tree["README.md"].data == b"an uncommitted edit\n"  # type: ignore[union-attr]
    assert snap.parents[0].message.startswith("wip on t1")  # the killed session's commit too
    second.expect("agent completed")
    second.signal(signal.SIGINT)
    assert second.wait() == 0
    # The session that ended well (exit 0 after its submit) added nothing to the attic.
    assert _attic(repo) == refs


COMMITTED = commits_then_hangs("echo ready > {fifo}", edits=False)


def test_a_restart_over_committed_work_resumes_and_keeps_nothing(repo: Path,
                                                                 tmp_path: Path) -> None:
    """Issue 49: the killed session's commits are on its task branch, which the restart resumes:
    nothing would be lost, so nothing goes to the attic, and the line says "resumed"."""
    _killed_session(repo, tmp_path, COMMITTED)
    second = Sup(repo, "coder", "coder-1", "--", str(script(tmp_path, "done.sh", DONE)))
    line = second.expect("resumed")
    assert line.split("] ")[-1].startswith("t1: resumed"), line
    second.expect("agent completed")
    second.signal(signal.SIGINT)
    assert second.wait() == 0
    assert _attic(repo) == []
    assert not [x for x in second.lines if "attic" in x]
