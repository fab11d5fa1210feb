"""Drained machines and labels with real supervisors (issue 48, docs/multi-machine.md): two
machines (two clones of one remote with the server hook), the drained one takes nothing while
the other takes every task; a task that needs `gpu` goes to the coder whose supervisor offers it,
never to the one beside it that does not."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_board import liza, ok
from tests.conftest import git
from tests.team.procs import Sup, add_task, make_board, script, wait_status
from tests.team.test_follow_remote import _machines
from tests.team.test_supervisor import SUBMIT

pytestmark = pytest.mark.slow


def _task(repo: Path, task: str) -> dict[str, object]:
    data: dict[str, object] = json.loads(ok(liza(repo, "show", task, "--json", agent=None)))
    return data


def test_a_drained_machine_takes_nothing_new_while_the_other_takes_it_all(
        repo: Path, tmp_path: Path) -> None:
    bare, a, b = _machines(tmp_path, repo)
    git(a, "config", "liza.machine", "machine-a")
    git(b, "config", "liza.machine", "machine-b")
    out = ok(liza(a, "drain", "machine-b", "--reason", "maintenance", agent=None))
    assert "drain machine-b" in out
    ok(liza(a, "push", agent=None))
    add_task(a, "t1")
    ok(liza(a, "push", agent=None))
    work = str(script(tmp_path, "submit.sh", SUBMIT))
    sup_b = Sup(b, "coder", "coder-2", "--", work)
    try:
        sup_b.expect("supervising coder-2")
        # B's supervisor sees the task and does not take it; its `ready` says why.
        ok(liza(b, "pull", agent=None))
        ready = ok(liza(b, "ready", agent="coder-2"))
        assert "machine machine-b is drained: coder-2 takes no new work" in ready
        # A claim by hand (what a sandboxed agent could try) is refused by the board.
        refused = liza(b, "claim", "t1", agent="coder-2")
        assert refused.returncode == 1 and "machine machine-b is drained" in refused.stderr
        sup_a = Sup(a, "coder", "coder-1", "--", work)
        try:
            wait_status(a, "t1", "READY_FOR_REVIEW")
            assert _task(a, "t1")["assigned_to"] == "coder-1"
            text = ok(liza(a, "machines", agent=None))
            assert "machine-b: live DRAINED" in text
            assert not any("claimed" in line for line in sup_b.lines)
            # Undrained, B takes the next task (A's coder waits for t1's review).
            ok(liza(a, "undrain", "machine-b", agent=None))
            add_task(a, "t2")
            ok(liza(a, "push", agent=None))
            wait_status(a, "t2", "READY_FOR_REVIEW")
            assert _task(a, "t2")["assigned_to"] == "coder-2"
        finally:
            sup_a.kill()
    finally:
        sup_b.kill()


def test_a_task_that_needs_gpu_goes_to_the_gpu_coder_only(repo: Path, tmp_path: Path) -> None:
    make_board(repo)
    ok(liza(repo, "add", "t1", "--desc", "train it", "--spec-ref", "README.md", "--done-when",
            "done", "--scope", "t1", "--ready", "--needs", "gpu", agent=None))
    work = str(script(tmp_path, "submit.sh", SUBMIT))
    plain = Sup(repo, "coder", "coder-1", "--", work)
    try:
        plain.expect("supervising coder-1")
        ready = ok(liza(repo, "ready", agent="coder-1"))
        assert "t1 waits for label gpu: no live, undrained machine offers it" in ready
        status = ok(liza(repo, "status", agent=None))
        assert "t1 waits for label gpu" in status
        refused = liza(repo, "claim", "t1", agent="coder-1")
        assert refused.returncode == 1 and "needs label(s) gpu" in refused.stderr
        gpu = Sup(repo, "coder", "coder-2", "--labels", "gpu", "--", work)
        try:
            wait_status(repo, "t1", "READY_FOR_REVIEW")
            assert _task(repo, "t1")["assigned_to"] == "coder-2"
            assert not any("claimed t1" in line for line in plain.lines)
            assert "waits for label" not in ok(liza(repo, "status", agent=None))
        finally:
            gpu.kill()
    finally:
        plain.kill()


def test_team_labels_reach_every_member_and_its_coder_takes_the_gpu_task(
        repo: Path, tmp_path: Path) -> None:
    """`git liza team --labels gpu`: the labels go on each member's command line and token; its
    coder claims the task that needs gpu and the team finishes by itself."""
    import subprocess
    import sys

    from tests.team.procs import env_for
    make_board(repo, coder_max_wait="3", reviewer_max_wait="3")  # idle 3 s: the team ends
    ok(liza(repo, "add", "train", "--desc", "train it", "--spec-ref", "README.md", "--done-when",
            "done", "--scope", "train", "--ready", "--needs", "gpu", agent=None))
    agent = script(tmp_path, "agent.sh", """cat > /dev/null
if [ "$LIZA_ROLE" = coder ]; then
  echo x >> train.txt && git add train.txt && git commit -qm "$LIZA_TASK_ID: train"
  git liza submit "$LIZA_TASK_ID"
else
  git liza verdict "$LIZA_TASK_ID" approve
fi
""")
    bad = subprocess.run([sys.executable, "-m", "gitliza", "team", "--planners", "0",
                          "--labels", "g p u", "--", str(agent)], cwd=repo, env=env_for(),
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "is not a label" in bad.stderr
    r = subprocess.run([sys.executable, "-m", "gitliza", "team", "--planners", "0", "--coders",
                        "1", "--labels", "gpu,cuda", "--", str(agent)], cwd=repo,
                       env=env_for(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    shown = json.loads(ok(liza(repo, "show", "train", "--json", agent=None)))
    assert shown["status"] == "MERGED"
    assert any(h.get("event") == "claimed" and h.get("agent") == "coder-1"
               for h in shown.get("history", [])), shown
