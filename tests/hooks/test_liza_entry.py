"""No task tree may hold a `.liza` entry (issue 46, core/treerules.py): a coder's commit of
`.liza/PAUSE` is refused at submit; the same commit slipped past the commands (the core's op
written directly: what a forger with the Python API does) is refused by `verify` and by the
server hook, whether it comes as a submit, an approval or a merge, or as the integration
branch itself; a merge of it records INTEGRATION_FAILED and never checks it out."""
from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from gitliza.core import treerules
from gitliza.core.ops import ClaimReview, Submit, Verdict
from gitliza.core.states import TaskState
from gitliza.git.store import Store
from gitliza.services.api import Liza
from tests.conftest import git
from tests.hooks.test_enforce import clone, liza, push, remote_ref, run, state_push_refused, team

__all__ = ["team"]  # the fixture


def _planted(tmp_path: Path, bare: Path, name: str = ".liza/PAUSE") -> tuple[Path, Path, str]:
    """A clone where coder-1 claimed t1 and committed `name` in its worktree: (clone, worktree,
    the commit)."""
    c = clone(tmp_path, bare, "c")
    liza(c, "claim", "t1", agent="coder-1")
    wt = c / ".worktrees" / "t1"
    (wt / name).parent.mkdir(parents=True, exist_ok=True)
    (wt / name).write_text("stop the team\n")
    git(wt, "add", "-f", name)  # .liza is in info/exclude: a coder forces it
    git(wt, "commit", "-q", "-m", "a harmless change")
    return c, wt, git(wt, "rev-parse", "HEAD")


@pytest.mark.parametrize("name", [".liza/PAUSE", ".LIZA/ABORT", ".liza./x"])
def test_submit_refuses_a_tree_holding_liza(tmp_path: Path, team: tuple[Path, Path],
                                            name: str) -> None:
    bare, _seed = team
    c, wt, head = _planted(tmp_path, bare, name)
    before = git(c, "rev-parse", "refs/liza/state")
    r = run(wt, "git", "liza", "submit", "t1", agent="coder-1")
    assert r.returncode == 1, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if "error" in ln]
    assert len(lines) == 1 and name.split("/")[0] in lines[0] and head[:12] in lines[0], r.stderr
    assert git(c, "rev-parse", "refs/liza/state") == before  # nothing recorded
    assert not (c / ".liza" / "PAUSE").exists()


def test_a_forged_submit_approval_and_merge_are_refused_by_verify_and_the_server(
        tmp_path: Path, team: tuple[Path, Path]) -> None:
    bare, _seed = team
    before = remote_ref(bare, "refs/liza/state")
    c, _wt, head = _planted(tmp_path, bare)
    # The commands' check skipped: the core's op written directly, as a forger would.
    Liza.open(c, "coder-1").do(Submit, task="t1", commit=head)
    r = run(c, "git", "liza", "verify")
    assert r.returncode == 4 and "(submit)" in r.stderr and "'.liza'" in r.stderr, r.stderr
    # The server sees the commit (pushed with the board, as a merge's push would carry it).
    r = push(c, "liza/t1", "refs/liza/state:refs/liza/state")
    assert r.returncode != 0
    line = [ln for ln in r.stderr.splitlines() if "refused refs/liza/state" in ln][0]
    assert "(submit)" in line and ".liza" in line, r.stderr
    assert remote_ref(bare, "refs/liza/state") == before
    # An approval of it, and the integration branch moved onto it by hand, are refused too.
    Liza.open(c, "rev-1").do(ClaimReview, task="t1")
    Liza.open(c, "rev-1").do(Verdict, task="t1", verdict="approve", commit=head, counted=True)
    git(c, "update-ref", "refs/heads/integration", head)
    r = push(c, "liza/t1", "integration", "refs/liza/state:refs/liza/state")
    assert r.returncode != 0
    assert "holds '.liza'" in r.stderr, r.stderr
    assert remote_ref(bare, "refs/liza/state") == before
    assert remote_ref(bare, "refs/heads/integration") != head


def test_a_merge_of_it_is_refused_and_never_checked_out(tmp_path: Path,
                                                        team: tuple[Path, Path]) -> None:
    bare, _seed = team
    c, _wt, head = _planted(tmp_path, bare)
    git(c, "checkout", "-q", "integration")  # the main worktree follows a merge
    tip = git(c, "rev-parse", "integration")
    Liza.open(c, "coder-1").do(Submit, task="t1", commit=head)
    Liza.open(c, "rev-1").do(ClaimReview, task="t1")
    # The verdict command refuses to approve it...
    r = run(c, "git", "liza", "verdict", "t1", "approve", agent="rev-1")
    assert r.returncode == 1 and "'.liza'" in r.stderr, r.stderr
    # ...so the approval is forged, and the merge command is what stands in the way.
    Liza.open(c, "rev-1").do(Verdict, task="t1", verdict="approve", commit=head, counted=True)
    r = run(c, "git", "liza", "merge", "t1", agent="rev-1")
    assert r.returncode == 3 and "'.liza'" in r.stderr, r.stderr
    assert git(c, "rev-parse", "integration") == tip
    assert not (c / ".liza" / "PAUSE").exists()
    board = Store.discover(c).board()[0]
    t = board.task("t1")
    assert t is not None and t.status == TaskState.INTEGRATION_FAILED
    assert any(a.task == "t1" and "'.liza'" in dict(a.details).get("question", "")
               for a in board.values("anomalies")), "no anomaly names the task"


def test_the_rule_is_the_name_a_case_folding_file_system_sees() -> None:
    for name in (".liza", ".LIZA", ".Liza", ".liza.", ".liza ", ".liza. ."):
        assert treerules.is_liza_name(name), name
    for name in (".lizard", "liza", "a.liza", ".liz", "..liza"):
        assert not treerules.is_liza_name(name), name
    assert pygit2  # the tree walk itself is exercised by the tests above
