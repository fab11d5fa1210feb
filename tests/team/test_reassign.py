"""`git liza reassign TASK --to CODER` with real supervisors: the holder's supervisor sees its
task go to another coder and stops its agent (the stand-down), the chosen coder's supervisor
claims the task with a lease of its own and its agent continues the task's branch to a submit;
the audit trail says the human did it; a coder's own `git liza reassign` is refused."""
from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.cli.test_board import liza, ok
from tests.conftest import git
from tests.team.procs import (WAIT, Sup, add_task, make_board, ops, script, task_of,
                              wait_status)

pytestmark = pytest.mark.slow


def test_the_holder_stands_down_and_the_chosen_coder_takes_over(repo: Path,
                                                                tmp_path: Path) -> None:
    make_board(repo, lease_duration="600")
    add_task(repo, "t1")
    started = tmp_path / "started"
    # coder-1 commits a first step, then tries to take the task back for itself (refused: it
    # is a coder), then works on and on.
    hold = script(tmp_path, "hold.sh",
                  "echo step1 > step1.txt && git add step1.txt && git commit -q -m step1\n"
                  f"git liza reassign t1 --to coder-1 2> {tmp_path}/grab.err || "
                  f"echo $? > {tmp_path}/grab.rc\n"
                  f"touch {started}\nexec sleep 600\n")
    finish = script(tmp_path, "finish.sh",
                    "test -f step1.txt\n"  # it continues coder-1's branch
                    "echo step2 > step2.txt && git add step2.txt && git commit -q -m step2\n"
                    'git liza submit "$LIZA_TASK_ID"\n')
    one = Sup(repo, "coder", "coder-1", "--", str(hold))
    two: Sup | None = None
    try:
        one.expect("started agent")
        two = Sup(repo, "coder", "coder-2", "--", str(finish))
        two.expect("generation 1")
        end = time.monotonic() + WAIT  # a bound, not a timed assertion
        while not started.exists() and time.monotonic() < end:
            time.sleep(0.1)
        assert started.exists(), one.output()
        assert (tmp_path / "grab.rc").read_text().strip() == "1"
        assert "allowed: human" in (tmp_path / "grab.err").read_text()

        r = ok(liza(repo, "reassign", "t1", "--to", "coder-2", agent=None))
        assert "reassign t1 to coder-2 (from coder-1) by the human" in r
        one.expect("agent stopped (t1 was taken over by coder-2)")
        two.expect("claimed t1")
        wait_status(repo, "t1", "READY_FOR_REVIEW")
        t = task_of(repo, "t1")
        assert t["assigned_to"] == "coder-2" and t["iteration"] == 1
        assert "coder-1" not in t.get("failed_by", [])
        files = git(repo, "ls-tree", "--name-only", t["review_commit"]).split()
        assert {"step1.txt", "step2.txt"} <= set(files)
        trail = [(op, actor) for op, actor, task in ops(repo) if task == "t1"
                 and op in ("claim", "reassign", "submit")]
        assert trail == [("claim", "coder-1"), ("reassign", "human"), ("claim", "coder-2"),
                         ("submit", "coder-2")]
        ok(liza(repo, "validate", agent=None))
        ok(liza(repo, "verify", agent=None))
    finally:
        for s in (one, two):
            if s is not None:
                s.signal(signal.SIGTERM)
        for s in (one, two):
            if s is not None:
                assert s.wait() == 0, s.output()
