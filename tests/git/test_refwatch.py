"""RefWatcher: wakes on writes of the board ref (loose and packed) and of .liza/ control files,
from other processes and other worktrees; times out when nothing changes."""
from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from gitliza.services.api import Liza
from gitliza.core.ops.goal import Init
from gitliza.git.refwatch import RefWatcher
from tests.conftest import git

WAIT = 30.0  # generous upper bound; a correct watcher returns on the event, long before


def _board(repo: Path) -> Liza:
    liza = Liza.open(repo)
    liza.do(Init, goal="g")
    return liza


def _empty_commit(repo: Path) -> str:
    return git(repo, "commit-tree", "-m", "x", git(repo, "rev-parse", "HEAD^{tree}"))


def test_times_out_without_a_change_and_sees_the_tip(repo: Path) -> None:
    liza = _board(repo)
    with RefWatcher(repo) as w:
        assert w.tip() == str(liza.store.tip())
        assert w.wait(0.2) is False
        assert w.flags() == frozenset()


def test_a_board_write_by_another_process_wakes_the_waiter(repo: Path) -> None:
    _board(repo)
    with RefWatcher(repo) as w:
        results: list[bool] = []
        t = threading.Thread(target=lambda: results.append(w.wait(WAIT)))
        t.start()
        subprocess.run(["git", "liza", "pause", "--reason", "x"], cwd=repo, check=True,
                       capture_output=True, env=_path_env())
        t.join(WAIT + 5)
        assert results == [True]
        assert w.tip() == git(repo, "rev-parse", "refs/liza/state")
        assert w.wait(0) is False  # consumed: the next wait blocks again


def test_a_change_between_check_and_wait_is_not_lost(repo: Path) -> None:
    _board(repo)
    with RefWatcher(repo) as w:
        git(repo, "update-ref", "refs/liza/state", _empty_commit(repo))
        # No thread: the change happened before wait() was called; it must still be seen.
        assert w.wait(WAIT) is True


def test_packed_refs_and_ref_creation_wake(repo: Path) -> None:
    with RefWatcher(repo) as w:  # no board yet: refs/liza/ does not exist
        assert w.tip() is None
        _board(repo)
        assert w.wait(WAIT) is True
        git(repo, "pack-refs", "--all")
        assert w.wait(WAIT) is True
        assert not (repo / ".git/refs/liza/state").exists()  # now only in packed-refs
        old = w.tip()
        git(repo, "update-ref", "refs/liza/state", _empty_commit(repo))
        assert w.wait(WAIT) is True and w.tip() != old


def test_control_files_wake_and_show(repo: Path) -> None:
    _board(repo)
    with RefWatcher(repo) as w:
        (repo / ".liza" / "state.yaml").write_text("unrelated\n")
        assert w.wait(0.2) is False  # only PAUSE/ABORT/CHECKPOINT count
        (repo / ".liza" / "PAUSE").touch()
        assert w.wait(WAIT) is True and w.flags() == {"PAUSE"}
        (repo / ".liza" / "PAUSE").unlink()
        assert w.wait(WAIT) is True and w.flags() == frozenset()


def test_a_linked_worktree_watches_the_shared_refs(repo: Path) -> None:
    _board(repo)
    git(repo, "worktree", "add", "-q", str(repo.parent / "wt"), "-b", "side")
    with RefWatcher(repo.parent / "wt") as w:
        git(repo, "update-ref", "refs/liza/state", _empty_commit(repo))
        assert w.wait(WAIT) is True
        assert w.liza_dir == repo.resolve() / ".liza"


@pytest.fixture(autouse=True)
def _no_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LIZA_NOW", raising=False)


def _path_env() -> dict[str, str]:
    import os
    import sys
    return dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
