"""Building an agent's prompt reads the board and writes nothing on it: the prompt carries a
pending handoff, `carried_handoff` names it, and the session (its caller) marks it given."""
from __future__ import annotations

from pathlib import Path

from gitliza.core.ops.work import HandoffOp
from gitliza.core.states import Role
from gitliza.services.api import Liza
from gitliza.services.lifecycle import claim as claiming
from gitliza.team import briefing
from gitliza.team.generation import Generation
from gitliza.team.work import Job
from tests.conftest import git
from tests.team.procs import add_task, make_board


def test_the_prompt_carries_a_pending_handoff_and_writes_nothing(repo: Path) -> None:
    make_board(repo)
    add_task(repo, "t1")
    lz = Liza.open(repo, agent="coder-1")
    Generation("coder-1").take(lz, Role.CODER, takeover=False)
    done = claiming.claim(lz, "t1")
    lz.do(HandoffOp, task="t1", summary="half done", next_action="finish the parser")
    board = lz.board()
    job = Job(task="t1", worktree=Path(done.worktree))
    before = git(repo, "rev-parse", "refs/liza/state")
    text = briefing.prompt(lz, Role.CODER, board, job, None)
    assert "finish the parser" in text
    assert git(repo, "rev-parse", "refs/liza/state") == before  # no op written
    assert briefing.carried_handoff(Role.CODER, board, job) == "t1"
    assert briefing.carried_handoff(Role.CODE_REVIEWER, board, job) is None
    assert briefing.carried_handoff(Role.CODER, board, Job(task=None, worktree=repo)) is None
