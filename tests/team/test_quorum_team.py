"""Issue 40 with real supervisors: two scripted reviewers under `review_quorum 2` and
`review_diversity model`; each supervisor records its agent's CLI and its own model on the
verdict (the agent passes no such thing), the last approval's supervisor merges."""
from __future__ import annotations

from pathlib import Path

from gitliza.services.api import Liza
from tests.cli.test_board import liza, ok
from tests.team.procs import Sup, add_task, make_board, script, task_of
from tests.team.test_supervisor import SUBMIT

APPROVE = """test "$(git rev-parse HEAD)" = "$LIZA_REVIEW_COMMIT"
git liza verdict "$LIZA_TASK_ID" approve --commit "$LIZA_REVIEW_COMMIT"
"""


def test_two_supervised_reviewers_of_two_models_approve_and_the_last_merges(
        repo: Path, tmp_path: Path) -> None:
    make_board(repo, reviewer_max_wait="3", review_quorum="2", review_diversity="model")
    add_task(repo, "t1")
    coder = Sup(repo, "coder", "coder-1", "--once", "--", str(script(tmp_path, "c.sh", SUBMIT)))
    assert coder.wait() == 0, coder.output()
    reviewer = str(script(tmp_path, "r.sh", APPROVE))
    first = Sup(repo, "code-reviewer", "reviewer-1", "--", reviewer,
                env={"LIZA_AGENT_MODEL": "model-a"})
    second = Sup(repo, "code-reviewer", "reviewer-2", "--", reviewer,
                 env={"LIZA_AGENT_MODEL": "model-b"})
    assert first.wait() == 0, first.output()
    assert second.wait() == 0, second.output()
    assert task_of(repo, "t1")["status"] == "MERGED"
    t = Liza.open(repo).board().task("t1")
    assert t is not None
    assert sorted((v.agent, v.cli, v.model) for v in t.review_votes) == [
        ("reviewer-1", "r.sh", "model-a"), ("reviewer-2", "r.sh", "model-b")]
    merger = "merged t1 into integration"
    assert (merger in first.output()) != (merger in second.output())  # the last approver's
    ok(liza(repo, "verify", agent=None))
