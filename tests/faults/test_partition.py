"""A partition that heals (issue 29, item 2): two real clones and a real bare remote with the
server hook; clone B is cut off (its remote's URL leads nowhere), both work on the same task, the
partition heals, and B's sync drops its ops.

Afterwards nothing dropped stays where the team builds: B's integration branch and task branch
are the shared ones again, the dropped commits are on a rescue ref that the sync's one line names,
B's next claim starts from the shared integration tip, and `doctor` reported the diverged
integration branch before the sync.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pygit2
import pytest

from gitliza.services.sync import droplog

from tests.conftest import git
from tests.services.test_multi_machine import Team, contains, make_team, remote_ref

pytestmark = pytest.mark.slow

INTEG = "refs/heads/integration"


def _lifecycle(tm: Team, clone: Path, *flags: str) -> str:
    """t1 claimed, worked, submitted, approved and merged in `clone`; the task's commit."""
    tm.liza(clone, "claim", "t1", *flags, agent="coder-1")
    work = tm.commit(clone / ".worktrees" / "t1", "feature.txt", f"made in {clone.name}\n",
                     "coder-1")
    tm.liza(clone, "submit", "t1", *flags, agent="coder-1")
    tm.liza(clone, "claim-review", "t1", *flags, agent="rev-1")
    tm.liza(clone, "verdict", "t1", "approve", *flags, agent="rev-1")
    tm.liza(clone, "merge", "t1", *flags, agent="rev-1")
    return work


def test_a_healed_partition_leaves_no_dropped_work_where_the_team_builds(
        tmp_path: Path) -> None:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    tm, a, b, _c = make_team(tmp_path, bare, str(bare))
    # The cut: B's remote leads nowhere. Its commands say so unless told --no-sync.
    git(b, "remote", "set-url", "origin", str(tmp_path / "unreachable.git"))
    b_work = _lifecycle(tm, b, "--no-sync")
    b_merge = git(b, "rev-parse", INTEG)
    assert contains(b, b_merge, b_work)
    # Still cut off, B's next claim starts from the team's integration tip as last fetched, not
    # from B's own unreviewed merge.
    team_tip = git(b, "rev-parse", "refs/remotes/origin/integration")
    offline = json.loads(tm.liza(b, "claim", "t2", "--json", "--no-sync", agent="coder-1"))
    assert offline["base_commit"] == team_tip != b_merge
    # Meanwhile A does the same task, shared at once.
    a_work = _lifecycle(tm, a)
    shared = remote_ref(bare, INTEG)
    assert shared is not None and contains(bare, shared, a_work)

    # Healed. Before B syncs, a plain fetch lets doctor see the two integration branches part.
    git(b, "remote", "set-url", "origin", str(bare))
    git(b, "fetch", "-q", "origin")
    seen = tm.run(b, "git", "liza", "doctor", ok=False)
    assert "diverged-integration integration:" in seen.stdout, seen.stdout
    assert "commit(s) the team's lacks" in seen.stdout and seen.returncode == 4

    r = tm.run(b, "git", "liza", "sync", ok=False)
    assert r.returncode == 0, r.stderr
    out = r.stdout + r.stderr
    report = json.loads(tm.liza(b, "log", "--json"))  # the board is the shared one now
    assert report and git(b, "rev-parse", "refs/liza/state") == remote_ref(bare,
                                                                          "refs/liza/state")
    # The one line that reports the drops names the rescue ref, and the ref keeps B's work.
    lines = [ln for ln in out.splitlines() if re.search(r"dropped [1-9]", ln)]
    assert len(lines) == 1 and "refs/liza-rescue/" in lines[0], out  # claim..merge: 5 ops
    rescue = next(w.strip("(),;:.") for w in lines[0].split() if w.startswith("refs/liza-rescue/"))
    kept = git(b, "rev-parse", rescue)
    assert contains(b, kept, b_merge) and contains(b, kept, b_work)
    # Not silent past this command (issue 48): the clone's drop record raises DROPPED_OPS,
    # naming the rescue ref, for the team's output, `watch` and the webhook.
    [alert] = droplog.alerts(pygit2.Repository(str(b)))
    said = re.search(r"dropped ([1-9][0-9]*)", lines[0])
    assert said is not None and alert.subject == rescue
    assert f"{said.group(1)} acknowledged op(s)" in alert.text, (lines[0], alert.text)
    # Where the team builds, only the shared work.
    assert git(b, "rev-parse", INTEG) == shared
    assert not contains(b, shared, b_work)
    task_branch = git(b, "rev-parse", "--verify", "-q", "refs/heads/liza/t1", check=False)
    assert task_branch in ("", remote_ref(bare, "refs/heads/liza/t1") or "")
    assert not task_branch or not contains(b, task_branch, b_work)
    # doctor is content now, and B's next claim starts from the shared integration tip.
    clean = tm.run(b, "git", "liza", "doctor", ok=False)
    assert "diverged" not in clean.stdout, clean.stdout
    tm.liza(a, "register", "coder-2", "--role", "coder")
    tm.liza(a, "add", "t3", "--desc", "more", "--spec-ref", "spec.md", "--done-when", "done",
            "--scope", "src", "--ready", agent="planner-1")
    claimed = json.loads(tm.liza(b, "claim", "t3", "--json", agent="coder-2"))
    assert claimed["base_commit"] == remote_ref(bare, INTEG)
    assert not contains(b, git(b / ".worktrees" / "t3", "rev-parse", "HEAD"), b_work)
    # The rescue ref is local only: it never reaches the remote.
    assert remote_ref(bare, rescue) is None
