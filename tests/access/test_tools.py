"""The tool table without MCP: schemas generated from the op records, argument checking, roles
from the transition table, every op an agent may run offered as a tool."""
from __future__ import annotations

import tomllib
import json
from pathlib import Path

import pytest

from gitliza.access import mcp_config, tools
from gitliza.core.ops import load_all
from gitliza.core.states import Role
from gitliza.errors import PermissionDenied, ValidationError


def test_every_op_but_init_and_register_is_a_tool_with_its_record_fields() -> None:
    table = tools.all_tools()
    for name, cls in load_all().items():
        if name in tools.NOT_TOOLS:  # no tool writes it (a view may share its name: usage)
            other = table.get(name.replace("-", "_"))
            assert other is None or (other.op is None and other.read_only), name
            continue
        tool = table[name.replace("-", "_")]
        assert tool.op == name
        fields = set(cls.__dataclass_fields__) - {"actor", "time"}
        assert set(tool.schema["properties"]) <= fields, name
        assert tool.roles, name


def test_excluded_fields_are_what_the_library_fills_in() -> None:
    t = tools.all_tools()
    assert set(t["claim"].schema["properties"]) == {"task"}
    assert set(t["merge"].schema["properties"]) == {"task"}
    assert t["submit"].schema["required"] == ["task"]
    assert t["anomaly"].schema["properties"]["details"]["type"] == "object"


def test_roles_come_from_the_transition_table() -> None:
    t = tools.all_tools()
    assert t["claim"].roles == {Role.CODER}
    assert t["verdict"].roles == {Role.CODE_REVIEWER}
    assert t["merge"].roles == {Role.CODE_REVIEWER, Role.HUMAN}
    assert t["block"].roles == {Role.CODER, Role.PLANNER, Role.HUMAN}
    assert t["status"].roles == set(Role)


def test_check_args_converts_to_the_record_types_and_refuses_bad_ones() -> None:
    t = tools.all_tools()
    got = tools.check_args(t["anomaly"], {"type": "x", "details": {"a": 1, "b": "c"}})
    assert got == {"type": "x", "details": (("a", 1), ("b", "c"))}
    got = tools.check_args(t["add"], {"task": "t", "description": "d", "depends_on": ["a"],
                                      "spec_ref": None})
    assert got == {"task": "t", "description": "d", "depends_on": ("a",)}
    for args in ({"task": "t", "description": "d", "priority": True},
                 {"task": "t", "description": "d", "ready": 1},
                 {"task": "t", "description": "d", "depends_on": "a"},
                 {"task": "t"}, {"task": "t", "description": "d", "actor": "x"}):
        with pytest.raises(ValidationError):
            tools.check_args(t["add"], args)


def test_call_refuses_another_roles_tool_before_touching_anything() -> None:
    with pytest.raises(PermissionDenied, match="not a coder tool"):
        tools.call(object(), Role.CODER, "verdict", {"task": "t1", "verdict": "approve"})


@pytest.mark.parametrize("cli", ["claude", "gemini", "codex", "vibe"])
def test_mcp_config_for_each_agent_cli(cli: str, tmp_path: Path) -> None:
    name, text = mcp_config.for_cli(cli, tmp_path, "coder-1", "coder", python="/py")
    data = tomllib.loads(text) if name.endswith(".toml") else json.loads(text)
    servers = data["mcpServers" if cli in ("claude", "gemini") else "mcp_servers"]
    entry = servers[0] if isinstance(servers, list) else servers["gitliza"]
    assert entry["command"] == "/py"
    assert entry["args"] == ["-P", "-m", "gitliza", "mcp", "--repo", str(tmp_path), "--agent",
                              "coder-1", "--role", "coder"]
    assert entry["env"] == {"LIZA_AGENT_ID": "coder-1"}
    if cli == "vibe":
        assert entry["name"] == "gitliza" and entry["transport"] == "stdio"
    with pytest.raises(ValidationError):
        mcp_config.for_cli("nope", tmp_path, "a")


def test_the_usage_tool_reads_and_no_tool_records_a_run(repo: Path) -> None:
    from gitliza.core.ops import Init, Register
    from gitliza.core.ops.usage import RecordUsage
    from gitliza.services.api import Liza
    human = Liza.open(repo, "human")
    human.do(Init, goal="g")
    human.do(Register, agent="coder-1", role="coder")
    coder = Liza.open(repo, "coder-1")
    coder.do(RecordUsage, run_id="coder-1.1.1", cli="codex", duration=3, input_tokens=900,
             output_tokens=100, cached_tokens=300)
    data = tools.call(coder, Role.CODER, "usage", {"by_agent": "coder-1"}, supervised=True)
    assert data["total"]["tokens"] == 1000 and data["agent"]["coder-1"]["runs"] == 1
    assert [r["run"] for r in data["runs"]] == ["coder-1.1.1"]
    # An agent cannot record (or forge) a run's usage through its tools: its supervisor does.
    assert tools.all_tools()["usage"].op is None and tools.all_tools()["usage"].read_only


def test_reassign_is_the_humans_alone_in_mcp_and_through_the_sandbox() -> None:
    from gitliza.sandbox import rules
    t = tools.all_tools()["reassign"]
    assert t.roles == {Role.HUMAN} and set(t.schema["properties"]) == {"task", "to"}
    for role in (Role.CODER, Role.CODE_REVIEWER, Role.PLANNER):
        assert "reassign" not in {x.name for x in tools.tools_for(role)}
        with pytest.raises(PermissionDenied, match="not a .* tool"):
            tools.call(object(), role, "reassign", {"task": "t1", "to": "coder-1"})
        # A sandboxed agent's `git liza reassign` is refused by its supervisor's broker.
        v = rules.check_command(role, "coder-1", ["reassign", "t1", "--to", "coder-1"])
        assert not v.ok and "the human's" in v.rule


def test_verdict_takes_evidence_but_never_the_reviewers_cli_or_model() -> None:
    t = tools.all_tools()
    props = t["verdict"].schema["properties"]
    assert props["evidence"] == {"type": "array", "items": {"type": "string"},
                                 "description": props["evidence"]["description"]}
    assert not {"cli", "model", "counted"} & set(props)
    with pytest.raises(ValidationError, match="unknown argument"):
        tools.check_args(t["verdict"], {"task": "t1", "verdict": "approve", "cli": "claude"})
    assert tools.check_args(t["verdict"], {"task": "t1", "verdict": "approve",
                                           "evidence": ["1=test:x"]})["evidence"] == ("1=test:x",)
    assert Role.PLANNER in t["root_cause"].roles and Role.CODER not in t["root_cause"].roles
