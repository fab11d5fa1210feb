"""`git liza add --from FILE` (issue 27): the tasks of a YAML or Markdown file in one transition,
dependencies by task id in any order, errors by line with nothing added."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli.firstday import liza, ok, state
from tests.conftest import commit_specs, git
from tests.team.procs import env_for

PLAN = """\
tasks:
  - id: t2
    description: retry get_orders
    depends_on: [t1]
    spec_ref: specs/a.md
    done_when: retries 3x
    scope: api/orders.py
    ready: true
  - id: t1
    description: retry get_user
    spec_ref: specs/a.md
    done_when: retries 3x
    scope: api/users.py
    priority: 1
    ready: true
  - id: t3
    desc: a draft for later
"""


@pytest.fixture
def board(repo: Path) -> Path:
    commit_specs(repo, "specs/a.md")
    ok(liza(repo, "init", "Goal"))
    ok(liza(repo, "register", "planner-1", "--role", "planner"))
    return repo


def _tasks(repo: Path) -> dict[str, dict[str, object]]:
    return {t["id"]: t for t in json.loads(ok(liza(repo, "status", "--json")))["tasks"]}


def test_a_file_is_one_transition_with_dependencies_by_id(board: Path) -> None:
    (board / "tasks.yaml").write_text(PLAN)
    before = state(board)
    out = ok(liza(board, "add", "--from", "tasks.yaml", agent="planner-1"))
    assert "add-tasks 3 task(s)" in out
    assert git(board, "rev-list", "--count", f"{before}..refs/liza/state") == "1"
    tasks = _tasks(board)
    assert {k: t["status"] for k, t in tasks.items()} == {
        "t1": "UNCLAIMED", "t2": "UNCLAIMED", "t3": "DRAFT"}
    assert tasks["t2"]["depends_on"] == ["t1"] and tasks["t1"]["priority"] == 1
    ready = [t["id"] for t in json.loads(ok(liza(board, "ready", "--json")))]
    assert ready == ["t1"]  # t2 waits for t1
    ok(liza(board, "verify"))  # the new op replays


BAD = [
    ("unknown dependency", PLAN.replace("depends_on: [t1]", "depends_on: [t9]"), 2,
     "task t2: depends on t9, which does not exist"),
    ("cycle in the file", PLAN.replace("    priority: 1\n", "    depends_on: [t2]\n"), 2,
     "cycle"),
    ("missing gate", PLAN.replace("    scope: api/users.py\n", ""), 9,
     "task t1: cannot be --ready: missing scope"),
    ("spec not on integration", PLAN.replace("spec_ref: specs/a.md\n    done_when: retries 3x\n"
                                             "    scope: api/users", "spec_ref: specs/no.md\n"
                                             "    done_when: retries 3x\n    scope: api/users"),
     9, "specs/no.md does not exist on the integration branch"),
    ("listed twice", PLAN.replace("id: t3", "id: t1"), 9, "listed twice"),
    ("unknown key", PLAN.replace("    desc: a draft", "    colour: red\n    desc: a draft"), 17,
     "unknown key 'colour'"),
    ("bad priority", PLAN.replace("priority: 1", "priority: high"), 14,
     "priority must be an integer"),
    ("no description", PLAN.replace("    desc: a draft for later\n", ""), 16,
     "a task needs a description"),
    ("not yaml", PLAN + "  - [\n", 19, "not valid YAML"),
]


@pytest.mark.parametrize("name,text,line,message", BAD, ids=[b[0] for b in BAD])
def test_an_error_names_its_line_and_nothing_is_added(board: Path, name: str, text: str,
                                                      line: int, message: str) -> None:
    (board / "tasks.yaml").write_text(text)
    before = state(board)
    r = liza(board, "add", "--from", "tasks.yaml", agent="planner-1")
    assert r.returncode == 1, r.stdout
    assert f"tasks.yaml:{line}:" in r.stderr and message in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert state(board) == before and _tasks(board) == {}


def test_an_existing_task_on_the_board_refuses_the_whole_file(board: Path) -> None:
    ok(liza(board, "add", "t3", "--desc", "already here", agent="planner-1"))
    (board / "tasks.yaml").write_text(PLAN)
    before = state(board)
    r = liza(board, "add", "--from", "tasks.yaml", agent="planner-1")
    assert r.returncode == 1 and "tasks.yaml:16: task t3: already exists" in r.stderr
    assert state(board) == before and set(_tasks(board)) == {"t3"}


def test_only_a_planner_or_the_human_adds_from_a_file(board: Path) -> None:
    ok(liza(board, "register", "coder-1", "--role", "coder"))
    (board / "tasks.yaml").write_text(PLAN)
    before = state(board)
    r = liza(board, "add", "--from", "tasks.yaml", agent="coder-1")
    assert r.returncode == 1 and "not allowed for coder-1" in r.stderr
    assert state(board) == before


def test_markdown_and_stdin(board: Path) -> None:
    (board / "plan.md").write_text(
        "# The plan\n\nSome intro.\n\n## t1: Retry get_user\nspec_ref: specs/a.md\n"
        "done_when: retries 3x\nscope: api\nready: true\n\nThree tries, then fail.\n\n"
        "## t2: Retry orders\n- depends_on: t1\n- priority: 2\n")
    ok(liza(board, "add", "--from", "plan.md", agent="planner-1"))
    tasks = _tasks(board)
    assert tasks["t1"]["status"] == "UNCLAIMED"
    assert tasks["t1"]["description"] == "Retry get_user Three tries, then fail."
    assert tasks["t2"]["depends_on"] == ["t1"] and tasks["t2"]["status"] == "DRAFT"
    r = subprocess.run(["git", "liza", "add", "--from", "-"], cwd=board, text=True,
                       capture_output=True, input="- id: t9\n  description: from stdin\n",
                       env=env_for("planner-1"), timeout=60)
    assert r.returncode == 0, r.stderr
    assert "t9" in _tasks(board)
    bad = board / "bad.md"
    bad.write_text("## t5: five\n\n## t6: six\ndepends_on: t7\n")
    r = liza(board, "add", "--from", "bad.md", agent="planner-1")
    assert r.returncode == 1 and "bad.md:3: task t6: depends on t7" in r.stderr


def test_add_takes_comma_separated_dependencies(board: Path) -> None:
    for t in ("a", "b"):
        ok(liza(board, "add", t, "--desc", t, agent="planner-1"))
    ok(liza(board, "add", "c", "--desc", "c", "--depends-on", "a,b", agent="planner-1"))
    ok(liza(board, "add", "d", "--desc", "d", "--depends-on", "a, b", "--depends-on", "c",
            agent="planner-1"))
    tasks = _tasks(board)
    assert tasks["c"]["depends_on"] == ["a", "b"] and tasks["d"]["depends_on"] == ["a", "b", "c"]
    ok(liza(board, "edit", "d", "--depends-on", "b,c", agent="planner-1"))
    assert _tasks(board)["d"]["depends_on"] == ["b", "c"]


def test_add_without_an_id_or_with_both_forms_is_refused(board: Path) -> None:
    before = state(board)
    r = liza(board, "add", "--desc", "x", agent="planner-1")
    assert r.returncode == 1 and "add needs a TASK id and --desc" in r.stderr
    (board / "tasks.yaml").write_text(PLAN)
    r = liza(board, "add", "t1", "--from", "tasks.yaml", agent="planner-1")
    assert r.returncode == 1 and "no TASK or --desc" in r.stderr
    assert state(board) == before
