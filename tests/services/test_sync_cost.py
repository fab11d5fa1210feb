"""A sync's cost does not grow with the remote's task branches: they are fetched only when a local
task branch may have to be pushed, and a pushed one is remembered."""
from __future__ import annotations

from pathlib import Path

from gitliza.services.lifecycle.claim import claim
from gitliza.services.lifecycle.review import submit
from gitliza.services.sync import engine
from gitliza.services.sync.branches import task_leases
from gitliza.core.ops import Note
from gitliza.git.store import Store
from tests.conftest import git, remote_of
from tests.services.test_sync import clone, liza, seed


def _task_tracking(path: Path) -> list[str]:
    out = git(path, "for-each-ref", "--format=%(refname)", "refs/remotes/origin/liza-tasks/")
    return out.split()


def test_a_sync_does_not_fetch_the_remotes_task_branches(tmp_path: Path) -> None:
    bare, work = seed(tmp_path)
    for i in range(1, 4):  # the remote has task branches (work submitted from other machines)
        git(work, "push", "-q", "origin", f"main:refs/heads/liza/task-{i}")
    mine = clone(bare, tmp_path / "mine")
    for ref in _task_tracking(mine):  # whatever the clone's first pull brought
        git(mine, "update-ref", "-d", ref)
    h = liza(mine, agent="a1")
    h.do(Note, message="one op to share")
    rep = engine.sync(h.store, remote_of(h.store, "origin"))
    assert rep.pushed and _task_tracking(mine) == []  # the op went, the branches did not come
    assert git(bare, "rev-parse", "refs/liza/state") == git(mine, "rev-parse", "refs/liza/state")


def test_a_submitted_branch_is_pushed_once_and_remembered(tmp_path: Path) -> None:
    bare, _work = seed(tmp_path)
    mine = clone(bare, tmp_path / "mine")
    git(mine, "branch", "integration")
    h = liza(mine, agent="a1")
    wt = claim(h, "task-1").worktree
    assert wt is not None
    (wt / "f.txt").write_text("work\n")
    git(wt, "add", "f.txt")
    git(wt, "commit", "-q", "-m", "work")
    submit(h, "task-1")
    engine.sync(Store.discover(mine), remote_of(Store.discover(mine), "origin"))
    head = git(mine, "rev-parse", "refs/heads/liza/task-1")
    assert git(bare, "rev-parse", "refs/heads/liza/task-1") == head
    assert git(mine, "rev-parse", "refs/remotes/origin/liza-tasks/task-1") == head
    unsure, known = task_leases(Store.discover(mine), "refs/remotes/origin/")
    assert not unsure and known == {"refs/heads/liza/task-1": head}
