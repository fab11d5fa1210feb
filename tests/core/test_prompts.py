"""Prompt builders against golden files (tests/core/golden/prompt-*.txt).

`LIZA_UPDATE_GOLDEN=1 pytest tests/core/test_prompts.py` rewrites them after a deliberate change;
review the diff like code."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitliza.core import prompts, wake
from gitliza.core.model import HumanNote
from gitliza.core.ops import Add, Claim
from gitliza.core.ops.journal import Discover, Note
from gitliza.core.states import Role
from tests.core.boards import BASE, add_ready, board_in, claim, team, to_review, verdict

GOLDEN = Path(__file__).parent / "golden"
ROOT = "/work/project"


def _check(name: str, text: str) -> None:
    path = GOLDEN / f"prompt-{name}.txt"
    if os.environ.get("LIZA_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{path} differs (LIZA_UPDATE_GOLDEN=1 to accept)"


def _boot(role: Role, agent: str) -> prompts.Bootstrap:
    return prompts.Bootstrap(role=role, agent=agent, project=ROOT, goal="Retry logic")


def test_coder_prompt_for_a_rejected_task_with_human_notes() -> None:
    r = team()
    add_ready(r)
    to_review(r)
    verdict(r, "reject", reason="Blockers: 1\n- [blocker] a.py:3 - no test for the retry limit")
    r.do(Note, "human", message="Use the retry helper in utils.", for_task="task-1")
    r.do(Claim, "coder-1", task="task-1", worktree=".worktrees/task-1", base_commit=BASE)
    t = r.board.task("task-1")
    notes = [n for n in r.board.values("human_notes") if n.for_task == "task-1"]
    text = prompts.base_prompt(_boot(Role.CODER, "coder-1")) + prompts.coder_section(
        t, f"{ROOT}/.worktrees/task-1", notes) + prompts.resume_line("task-1")
    assert "ITERATION: 2" in text and "PRIOR REJECTION FEEDBACK" in text
    _check("coder", text)


def test_reviewer_prompt() -> None:
    r = board_in(wake.S.READY_FOR_REVIEW)
    t = r.board.task("task-1")
    text = prompts.base_prompt(_boot(Role.CODE_REVIEWER, "reviewer-1")) + \
        prompts.reviewer_section(t, f"{ROOT}/.worktrees/task-1")
    assert "=== REVIEW TASK ===" in text and f"REVIEW COMMIT: {t.review_commit}" in text
    _check("reviewer", text)


@pytest.mark.parametrize("trigger", list(wake.WakeTrigger))
def test_planner_prompt_per_trigger(trigger: wake.WakeTrigger) -> None:
    r = team()
    add_ready(r, "task-1")
    add_ready(r, "task-2")
    claim(r, "task-2")
    r.do(Discover, "coder-1", id="disc-1", description="x", urgency="immediate")
    state = wake.sprint_state(r.board)
    note = HumanNote(timestamp="2025-01-17T15:00:00Z", message="Ship by Friday", author="human")
    text = prompts.base_prompt(_boot(Role.PLANNER, "planner-1")) + prompts.planner_section(
        trigger, state, notes=[note])
    assert f"WAKE TRIGGER: {trigger.value}" in text and "- Total tasks: 2" in text
    _check(f"planner-{trigger.value.lower()}", text)


def test_sections_are_pure_functions_of_their_inputs() -> None:
    r = team()
    r.do(Add, "planner-1", task="task-1", description="d", spec_ref="s", done_when="w",
         scope="x", ready=True)
    claim(r)
    t = r.board.task("task-1")
    assert prompts.coder_section(t, "/w") == prompts.coder_section(t, "/w")
    assert "PRIOR REJECTION" not in prompts.coder_section(t, "/w")
    assert "HUMAN NOTES" not in prompts.coder_section(t, "/w")
