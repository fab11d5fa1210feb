"""The first `git liza sync` of a person's own repository to an empty remote (issue 27): the
integration branch goes with the board, and the history before the board is its base."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gitliza.core.ops import Init
from gitliza.services.api import Liza
from tests.cli.firstday import liza, merged_task, ok, own_repo, state
from tests.conftest import git
from tests.team.procs import env_for


def test_first_sync_before_any_merge_pushes_integration_with_the_board(tmp_path: Path) -> None:
    work, bare = own_repo(tmp_path)
    ok(liza(work, "init", "Goal"))
    base = git(work, "rev-parse", "main")
    assert ok(liza(work, "config", "integration_base")).strip() == base
    r = liza(work, "sync")
    assert r.returncode == 0, r.stderr
    assert "never approved" not in r.stderr
    assert git(bare, "rev-parse", "refs/heads/integration") == base
    assert git(bare, "rev-parse", "refs/liza/state") == state(work)


def test_first_sync_after_a_merge_pushes_the_merged_integration(tmp_path: Path) -> None:
    work, bare = own_repo(tmp_path)
    ok(liza(work, "init", "Goal"))
    merged_task(work)
    r = liza(work, "sync")
    assert r.returncode == 0, r.stderr
    assert git(bare, "rev-parse", "refs/heads/integration") == git(work, "rev-parse", "integration")
    # and a fresh clone adopts it: the remote's board verifies with its integration branch
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(bare), str(other))
    ok(liza(other, "pull"))
    assert git(other, "rev-parse", "integration") == git(work, "rev-parse", "integration")


def test_a_commit_added_after_init_is_still_refused(tmp_path: Path) -> None:
    """The base is the history before the board, not whatever the branch holds later: a commit
    made straight on integration after init stays local, and the board is pushed without it."""
    work, bare = own_repo(tmp_path)
    ok(liza(work, "init", "Goal"))
    git(work, "checkout", "-q", "integration")
    (work / "sneaky.txt").write_text("unreviewed\n")
    git(work, "add", "sneaky.txt")
    git(work, "commit", "-q", "-m", "sneaky")
    r = liza(work, "sync")
    assert "integration not pushed: it has 1 commit(s) never approved" in r.stderr
    assert "sneaky" in r.stderr
    assert git(bare, "rev-parse", "-q", "--verify", "refs/heads/integration", check=False) == ""


def test_only_the_human_moves_the_base(tmp_path: Path) -> None:
    work, _bare = own_repo(tmp_path)
    ok(liza(work, "init", "Goal"))
    ok(liza(work, "register", "planner-1", "--role", "planner"))
    before = state(work)
    r = liza(work, "config", "integration_base", "0" * 40, agent="planner-1")
    assert r.returncode == 1 and "changing integration_base after the first init is not allowed " \
        "for planner-1 (role planner); allowed: human" in r.stderr
    assert state(work) == before
    r = liza(work, "config", "integration_base", "main")
    assert r.returncode == 1 and "full commit id" in r.stderr
    assert state(work) == before


@pytest.mark.parametrize("merge", [False, True])
def test_a_board_without_a_base_says_why_not_a_lost_race(tmp_path: Path, merge: bool) -> None:
    """A board made before the base was recorded: the refusal names the real reason and the fix,
    never "moved on while this clone merged" when the remote has no integration branch at all."""
    work, bare = own_repo(tmp_path)
    Liza.open(work, "human").do(Init, goal="Goal")  # as older versions did: no base recorded
    git(work, "branch", "integration", "main")
    if merge:
        merged_task(work)
    r = liza(work, "sync")
    if merge:
        assert r.returncode == 1, r.stderr
        assert "origin has no integration branch and this clone's integration was not pushed" \
            in r.stderr and "moved on" not in r.stderr
        assert git(bare, "rev-parse", "-q", "--verify", "refs/liza/state", check=False) == ""
    else:
        assert r.returncode == 0
        assert "git liza config integration_base" in r.stderr
    base = git(work, "rev-parse", "main")
    ok(liza(work, "config", "integration_base", base))
    ok(liza(work, "sync"))
    assert git(bare, "rev-parse", "refs/heads/integration") == git(work, "rev-parse", "integration")


def test_a_server_with_hooks_accepts_the_base_and_refuses_anything_more(tmp_path: Path) -> None:
    """The server hook judges the integration branch with the same base: the first sync to an
    enforcing empty remote goes through; a hand-made push that carries an unreviewed commit on
    top of the base, or a base the board does not name, is refused."""
    work, bare = own_repo(tmp_path)
    ok(liza(bare, "hooks", "install", "--server"))
    ok(liza(work, "init", "Goal"))
    r = liza(work, "sync")
    assert r.returncode == 0 and "never approved" not in r.stderr, r.stderr
    assert git(bare, "rev-parse", "refs/heads/integration") == git(work, "rev-parse", "main")
    merged_task(work)
    ok(liza(work, "sync"))  # the merge travels, judged by the server against its board
    # an unreviewed commit straight on integration: refused by the server, whatever sync thinks
    git(work, "checkout", "-q", "integration")
    (work / "sneaky.txt").write_text("unreviewed\n")
    git(work, "add", "sneaky.txt")
    git(work, "commit", "-q", "-m", "sneaky")
    before = git(bare, "rev-parse", "refs/heads/integration")
    push = subprocess.run(["git", "push", "origin", "integration"], cwd=work, text=True,
                          capture_output=True, env=env_for())
    assert push.returncode != 0 and "never approved" in push.stderr, push.stderr
    assert git(bare, "rev-parse", "refs/heads/integration") == before


def test_a_planner_cannot_move_the_base_with_a_new_goal(tmp_path: Path) -> None:
    work, _bare = own_repo(tmp_path)
    ok(liza(work, "init", "Goal"))
    ok(liza(work, "register", "planner-1", "--role", "planner"))
    ok(liza(work, "complete-goal"))
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(f'integration_base = "{"1" * 40}"\n')
    before = state(work)
    r = liza(work, "init", "Next goal", "--config", str(cfg), agent="planner-1")
    assert r.returncode == 1 and "changing integration_base after the first init is not allowed" \
        in r.stderr
    assert state(work) == before
    # the next goal keeps the base the first init recorded
    ok(liza(work, "init", "Next goal", agent="planner-1"))
    assert ok(liza(work, "config", "integration_base")).strip() == git(work, "rev-parse", "main")
