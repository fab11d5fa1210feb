"""Every role rule is a row of core/states.py: the ops that move no task ask `BOARD_OPS` (through
`Ctx.allowed`) as the task ops ask `TASK_TRANSITIONS`, so a change of the table is a change of the
rule, and no op module keeps a copy. The op registry is derived from `@register_op` over the
package's modules, not listed."""
from __future__ import annotations

import ast
import pkgutil
from pathlib import Path
from typing import Any

import pytest

import gitliza.core.ops as ops
from gitliza.core import states
from gitliza.core.ops import load_all
from gitliza.core.ops.base import Op, op_modules
from gitliza.core.ops.control import Pause, Supervise
from gitliza.core.ops.goal import AbortGoal, CompleteGoal, ConfigSet, Init, Register
from gitliza.core.ops.governance import Circuit
from gitliza.core.ops.journal import Convert, Discover, SpecChangeOp
from gitliza.core.ops.keys import Seal
from gitliza.core.ops.sprint import SprintScopeOp
from gitliza.core.states import BOARD_OPS, HUMANS, PLANNING, Role
from gitliza.errors import PermissionDenied
from tests.core.boards import team

OPS_DIR = Path(ops.__file__).parent

# One op a coder may not run, per planner-or-human row, with arguments that pass every other check.
PLANNING_ONLY: list[tuple[str, type[Op], dict[str, Any]]] = [
    ("complete-goal", CompleteGoal, {}),
    ("abort-goal", AbortGoal, {"reason": "stop"}),
    ("config", ConfigSet, {"key": "max_coder_iterations", "value": "4"}),
    ("register:another", Register, {"agent": "coder-9", "role": "code_reviewer"}),
    ("circuit", Circuit, {"result": "OK"}),
    ("spec-change", SpecChangeOp, {"spec": "specs/a.md", "change": "more"}),
    ("sprint-scope", SprintScopeOp, {}),
    ("pause", Pause, {}),
]


@pytest.mark.parametrize("rule, cls, args", PLANNING_ONLY, ids=[p[0] for p in PLANNING_ONLY])
def test_a_planner_or_human_rule_refuses_a_coder_and_moves_nothing(
    rule: str, cls: type[Op], args: dict[str, Any]
) -> None:
    assert BOARD_OPS[rule] == PLANNING
    r = team()
    before = r.board
    with pytest.raises(PermissionDenied, match="allowed: human, planner"):
        r.do(cls, "coder-1", **args)
    assert r.board is before
    r.do(cls, "planner-1", **args)  # the role the row names passes


@pytest.mark.parametrize("rule, cls, args", PLANNING_ONLY, ids=[p[0] for p in PLANNING_ONLY])
def test_the_ops_read_the_table_not_a_copy_of_it(
    monkeypatch: pytest.MonkeyPatch, rule: str, cls: type[Op], args: dict[str, Any]
) -> None:
    # Widen the row: the same coder's op now passes the role check. A rule written in the op by
    # hand would still refuse it.
    monkeypatch.setitem(BOARD_OPS, rule, PLANNING | {Role.CODER})
    r = team()
    r.do(cls, "coder-1", **args)


def test_a_new_goal_and_the_humans_rows() -> None:
    r = team()
    r.do(AbortGoal, "human", reason="replan")
    with pytest.raises(PermissionDenied, match="a new goal is not allowed for coder-1"):
        r.do(Init, "coder-1", goal="next")
    for rule in ("config:human-key", "circuit:resolve", "rekey", "seal"):
        assert BOARD_OPS[rule] == HUMANS, rule
    with pytest.raises(PermissionDenied, match="seal is not allowed for planner-1"):
        r.do(Seal, "planner-1")
    with pytest.raises(PermissionDenied, match="config review_quorum is not allowed"):
        r.do(ConfigSet, "planner-1", key="review_quorum", value="2")
    r.do(ConfigSet, "human", key="review_quorum", value="2")


def test_convert_is_the_planners() -> None:
    r = team()
    r.do(Discover, "coder-1", id="disc-1", description="a leak")
    with pytest.raises(PermissionDenied, match="convert is not allowed for coder-1"):
        r.do(Convert, "coder-1", discovery="disc-1", task="t-leak")


def test_no_op_module_writes_a_role_rule_by_hand() -> None:
    """A role compared in an op module (`ctx.role() in ...`, `role not in PLANNING`, an actor
    compared with the human's id to grant a power) is a second copy of the table."""
    found = []
    for path in sorted(OPS_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Compare) and any(isinstance(o, (ast.In, ast.NotIn))
                                                     for o in node.ops):
                names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
                if names & {"PLANNING", "HUMANS", "CODERS", "REVIEWERS", "MERGERS", "BOARD_OPS",
                            "CONTROL_OPS"}:
                    found.append(f"{path.name}:{node.lineno}")
    assert found == [], found
    assert not hasattr(states, "CONTROL_OPS")


def test_the_registry_is_every_op_module_found_on_disk() -> None:
    on_disk = {f"gitliza.core.ops.{m.name}" for m in pkgutil.iter_modules([str(OPS_DIR)])}
    assert set(op_modules()) == on_disk
    registered = load_all()
    # Every class marked @register_op in the sources is in the registry, by its NAME.
    marked = set()
    for path in OPS_DIR.glob("*.py"):
        for node in ast.parse(path.read_text("utf-8")).body:
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(d, ast.Name) and d.id == "register_op" for d in node.decorator_list):
                marked.add(node.name)
    assert {c.__name__ for c in registered.values()} == marked
    # The face finds each by name without a list of where it lives.
    for cls in registered.values():
        assert getattr(ops, cls.__name__) is cls
    with pytest.raises(AttributeError):
        ops.NoSuchOp  # noqa: B018


def test_the_tables_are_whole() -> None:
    """Each row names a rule some op asks for; each op that moves no task and checks a role has
    its row (the tools' roles come from the same rows)."""
    from gitliza.access.tools import all_tools
    tools = all_tools()
    for name in ("complete-goal", "abort-goal", "config", "circuit", "convert", "spec-change",
                 "sprint-scope", "pause", "resume", "abort", "checkpoint"):
        assert tools[name.replace("-", "_")].roles == BOARD_OPS[name], name


def test_supervise_free_is_a_row_of_the_table() -> None:
    """`supervise free` (doctor --fix ending a dead supervisor's token) is the human's by its row,
    the other modes the agents' own supervisors' by theirs: refused with the table's message, and
    a row widened (or narrowed) changes who may, with no copy of the rule in the op."""
    assert BOARD_OPS["supervise:free"] == HUMANS
    assert Role.HUMAN not in BOARD_OPS["supervise"]
    r = team()
    r.do(Supervise, "coder-1", host="h", pid=1)
    before = r.board
    with pytest.raises(PermissionDenied, match="^supervise free is not allowed for planner-1 "
                                               "\\(role planner\\); allowed: human$"):
        r.do(Supervise, "planner-1", mode="free", agent="coder-1", replaces=1)
    with pytest.raises(PermissionDenied, match="^supervise start is not allowed for human "
                                               "\\(role human\\); allowed: code_reviewer"):
        r.do(Supervise, "human", mode="start")
    assert r.board is before


def test_supervise_free_reads_the_table_not_a_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(BOARD_OPS, "supervise:free", HUMANS | {Role.PLANNER})
    r = team()
    r.do(Supervise, "coder-1", host="h", pid=1)
    r.do(Supervise, "planner-1", mode="free", agent="coder-1", replaces=1)
    assert r.board.get("supervisors", "coder-1").expires is None
    monkeypatch.setitem(BOARD_OPS, "supervise:free", frozenset())
    with pytest.raises(PermissionDenied, match="for human \\(role human\\); allowed:$"):
        r.do(Supervise, "human", mode="free", agent="coder-1")
