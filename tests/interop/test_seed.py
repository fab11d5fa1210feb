"""The seed-schema reader: the blackboard-schema example, and a corpus of bad inputs each refused
with one line naming its place in the file."""
from __future__ import annotations

from pathlib import Path

import pytest

from gitliza.core.states import TaskState
from gitliza.errors import ValidationError
from gitliza.interop import seed

DATA = Path(__file__).parent / "data"
EXAMPLE = (DATA / "schema_example.yaml").read_text()
# The spec's example breaks three of the spec's own rules, and liza-validate.sh's "one agent on
# one active task" twice; each fix is one line.
DEFECTS = [
    ("converted_to_task: task-3a", "converted_to_task: task-4a",
     "discovered[1].converted_to_task: task 'task-3a' does not exist"),
    ("    base_commit: a1b2c3d4  # Integration HEAD",
     "    lease_expires: 2025-01-17T16:36:00Z\n    base_commit: a1b2c3d4  # Integration HEAD",
     "tasks[7]: CLAIMED task must have valid lease_expires"),
    ("    assigned_to: coder-1\n    worktree: .worktrees/task-2",
     "    assigned_to: coder-2\n    worktree: .worktrees/task-2",
     "tasks[7]: agent coder-1 is assigned to multiple active tasks (task-2 and task-7)"),
    ("    assigned_to: coder-1\n    worktree: .worktrees/task-8",
     "    assigned_to: coder-3\n    worktree: .worktrees/task-8",
     "tasks[9]: agent coder-1 is assigned to multiple active tasks (task-7 and task-8)"),
    ("    status: WAITING\n    task: null", "    status: IDLE\n    task: null",
     "agents.planner-1: only coders can be WAITING"),
]


def fixed_example() -> str:
    text = EXAMPLE
    for bad, good, _msg in DEFECTS:
        assert bad in text
        text = text.replace(bad, good)
    return text


def line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


def test_the_schema_example_is_refused_for_each_of_its_defects_with_its_line() -> None:
    text = EXAMPLE
    for bad, good, msg in DEFECTS:
        with pytest.raises(ValidationError) as e:
            seed.read_state(text)
        assert msg in str(e.value)
        assert str(e.value).startswith("state.yaml:")
        text = text.replace(bad, good)
    seed.read_state(text)


def test_the_fixed_example_reads_every_section() -> None:
    s = seed.read_state(fixed_example())
    b = s.board()
    assert b.goal.id == "goal-1" and len(b.goal.alignment_history) == 2
    assert {t.id for t in b.all_tasks()} == {"task-1", "task-2", "task-3", "task-4", "task-4a",
                                              "task-4b", "task-5", "task-6", "task-7", "task-8"}
    assert b.get("archive", "task-1").status == TaskState.MERGED  # terminal tasks are archived
    assert b.task("task-4b").depends_on == ("task-4a",)
    assert b.task("task-7").history[0].task == "task-1-retry"
    assert b.agent("planner-1").current_task is None  # `task:` read as current_task
    assert b.agent("coder-1").context_percent == 34
    assert b.get("handoff", "task-5").files_modified == ("src/api/client.py",)
    assert [n.for_task for n in b.values("human_notes")] == ["task-2"]
    assert len(list(b.values("spec_changes"))) == 2
    anomalies = list(b.values("anomalies"))
    assert [a.type for a in anomalies] == ["retry_loop", "trade_off", "external_blocker"]
    assert anomalies[1].detail()["debt_created"] is True
    assert b.sprint.scope.stretch == ("task-6",)
    assert b.circuit_breaker.history[0].result == "OK"
    assert b.config.lease_duration == 300


GOOD = fixed_example()
CORPUS = [
    ("malformed YAML", GOOD.replace("tasks:\n", "tasks: [\n", 1), "not valid YAML"),
    ("not a mapping", "- 1\n- 2\n", "must be a mapping"),
    ("unknown section", GOOD + "extra: 1\n", "unknown section 'extra'"),
    ("missing sprint", GOOD[: GOOD.index("sprint:\n  id")], "missing required section 'sprint'"),
    ("wrong version", GOOD.replace("version: 1", "version: 2"), "schema version 2"),
    ("unknown status", GOOD.replace("status: DRAFT  #", "status: DONE  #"),
     "'DONE' is not one of DRAFT"),
    ("unknown agent status", GOOD.replace("status: IDLE\n    current_task: null",
                                          "status: SLEEPING\n    current_task: null"),
     "'SLEEPING' is not one of"),
    ("unknown role", GOOD.replace("role: code_reviewer", "role: boss"), "'boss' is not one of"),
    ("unknown severity", GOOD.replace("severity: high", "severity: urgent"), "'urgent'"),
    ("unknown anomaly type", GOOD.replace("type: retry_loop", "type: oops"), "'oops' is not one of"),
    ("anomaly without its details", GOOD.replace("      blocker_service:", "      service:"),
     "requires details.blocker_service"),
    ("missing required field", GOOD.replace('    description: "Add rate limit handling"\n', ""),
     "missing required field 'description'"),
    ("unknown field", GOOD.replace("    priority: 1\n", "    priority: 1\n    colour: red\n", 1),
     "unknown key 'colour'"),
    ("wrong type", GOOD.replace("    priority: 1\n", "    priority: high\n", 1),
     "expected an integer"),
    ("bad timestamp", GOOD.replace("created: 2025-01-17T15:00:00Z", "created: yesterday", 1),
     "is not an ISO 8601 UTC timestamp"),
    ("dependency on a missing task", GOOD.replace("depends_on: [task-4a]", "depends_on: [task-9]"),
     "dependency 'task-9' does not exist"),
    ("dependency cycle", GOOD.replace("depends_on: []  # No", "depends_on: [task-4b]  # No"),
     "circular dependencies"),
    ("successor missing", GOOD.replace("superseded_by: [task-4a, task-4b]",
                                       "superseded_by: [task-4a, task-4c]"),
     "successor 'task-4c' does not exist"),
    ("handoff for a missing task", GOOD.replace("handoff:\n  task-5:", "handoff:\n  task-50:"),
     "task 'task-50' does not exist"),
    ("unsafe task id", GOOD.replace("- id: task-3\n", "- id: ../../etc\n"), "not kebab-case"),
    ("unsafe agent id", GOOD.replace("  coder-1:\n", "  Coder_1:\n"), "not kebab-case"),
    ("the reserved human id", GOOD.replace("  planner-1:\n", "  human:\n"), "reserved"),
    ("duplicate task", GOOD.replace("- id: task-4b\n", "- id: task-4a\n"), "duplicate task id"),
    ("duplicate key", GOOD.replace("    priority: 1\n", "    priority: 1\n    priority: 2\n", 1),
     "not valid YAML"),
    ("sprint of another goal", GOOD.replace("goal_ref: goal-1", "goal_ref: goal-2"),
     "is not the goal"),
    ("scope names a missing task", GOOD.replace("planned: [task-1,", "planned: [task-11,"),
     "task 'task-11' does not exist"),
    ("bad config", GOOD.replace("lease_duration: 300", "lease_duration: -5"),
     "must be a positive integer"),
    ("claimed by nobody registered", GOOD.replace("    assigned_to: coder-1\n    worktree: "
                                                  ".worktrees/task-7",
                                                  "    assigned_to: coder-9\n    worktree: "
                                                  ".worktrees/task-7"),
     "agent 'coder-9' does not exist"),
]


@pytest.mark.parametrize("name,text,message", CORPUS, ids=[c[0] for c in CORPUS])
def test_bad_input_is_refused_with_one_line_and_its_place(name: str, text: str,
                                                          message: str) -> None:
    assert text != GOOD, name
    with pytest.raises(ValidationError) as e:
        seed.read_state(text)
    err = str(e.value)
    assert message in err and "\n" not in err
    assert err.startswith("state.yaml")


def test_the_line_number_points_at_the_offending_line() -> None:
    text = GOOD.replace("depends_on: [task-4a]", "depends_on: [task-9]")
    with pytest.raises(ValidationError) as e:
        seed.read_state(text)
    # The error is reported at the task's entry (its `- id:` line).
    task_line = line_of(text, "- id: task-4b")
    assert str(e.value).startswith(f"state.yaml:{task_line}: tasks[")
    text = GOOD.replace("status: DRAFT  #", "status: DONE  #")
    with pytest.raises(ValidationError) as e:
        seed.read_state(text)
    assert str(e.value).startswith(f"state.yaml:{line_of(text, 'status: DONE')}: tasks[")


def test_log_yaml_is_read_strictly() -> None:
    good = "- timestamp: 2025-01-17T14:00:00Z\n  agent: planner-1\n  action: goal_created\n" \
           "  detail: start\n"
    assert seed.read_log(good) == [{"timestamp": "2025-01-17T14:00:00Z", "agent": "planner-1",
                                    "action": "goal_created", "detail": "start"}]
    with pytest.raises(ValidationError, match=r"log.yaml:6: \[1\].who: unknown key 'who'"):
        seed.read_log(good + "- timestamp: 2025-01-17T14:00:00Z\n  who: x\n")
    with pytest.raises(ValidationError, match="missing required field 'action'"):
        seed.read_log("- timestamp: 2025-01-17T14:00:00Z\n  agent: a\n")
