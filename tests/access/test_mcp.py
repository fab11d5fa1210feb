"""`git liza mcp` driven over stdio by the SDK's client, as an agent CLI drives it: the tools each
role sees, a whole claim -> submit -> claim_review -> verdict -> merge cycle through tools only,
bad arguments and a coder's reviewer call refused with the board untouched, a held ref lock
reported as CONCURRENCY_CONFLICT, the resources, and exit 5 without the SDK."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from gitliza.services.api import Liza
from tests.access.mcp_client import agent_session, call, setup_board
from tests.conftest import git

STATE = "refs/liza/state"


def tip(repo: Path) -> str:
    return git(repo, "rev-parse", STATE)


@pytest.fixture
def board(repo: Path) -> Path:
    setup_board(repo)
    return repo


def run(coro: Any) -> Any:
    return anyio.run(lambda: coro)


def test_each_role_lists_only_its_tools(board: Path) -> None:
    async def tools(agent: str, role: str | None = None) -> dict[str, Any]:
        async with agent_session(board, agent, role) as s:
            return {t.name: t for t in (await s.list_tools()).tools}

    async def main() -> None:
        coder, reviewer, planner = (await tools("c1"), await tools("r1", "code_reviewer"),
                                    await tools("p1"))
        human = await tools("human")
        reads = {"status", "show", "ready", "log"}
        assert reads <= set(coder) & set(reviewer) & set(planner) & set(human)
        assert {"claim", "submit", "release", "handoff", "heartbeat", "block"} <= set(coder)
        assert not {"verdict", "merge", "claim_review", "add", "abandon"} & set(coder)
        assert {"claim_review", "verdict", "merge", "heartbeat"} <= set(reviewer)
        assert not {"claim", "submit", "add", "finalize"} & set(reviewer)
        assert {"add", "finalize", "rescope", "abandon", "unblock", "spec_change"} <= set(planner)
        assert not {"claim", "submit", "verdict", "claim_review"} & set(planner)
        assert "merge" in human and "claim" not in human
        # The actor is the server's agent: no tool takes one. Schemas come from the op records.
        for t in [*coder.values(), *reviewer.values(), *planner.values()]:
            assert not {"actor", "agent", "time"} & set(t.input_schema["properties"]), t.name
            assert t.input_schema["additionalProperties"] is False
        assert coder["claim"].input_schema.get("required") is None  # best claimable by default
        assert set(coder["claim"].input_schema["properties"]) == {"task"}  # no worktree field
        assert reviewer["verdict"].input_schema["required"] == ["task", "verdict"]
        add = planner["add"].input_schema
        assert add["properties"]["depends_on"] == {"type": "array", "items": {"type": "string"}}
        assert add["properties"]["priority"]["type"] == "integer"
        assert coder["status"].annotations.read_only_hint is True
    run(main())


def test_whole_cycle_through_tools_only(board: Path) -> None:
    async def main() -> None:
        async with agent_session(board, "c1") as coder:
            ok, claimed = await call(coder, "claim")
            assert ok and claimed["task"] == "t1" and claimed["to"] == "CLAIMED"
            assert claimed["actor"] == "c1" and claimed["state"] == tip(board)
            wt = Path(claimed["worktree"])
            assert wt.is_dir() and git(wt, "rev-parse", "--abbrev-ref", "HEAD") == "liza/t1"
            (wt / "feature.py").write_text("print('hi')\n")
            git(wt, "add", "feature.py")
            git(wt, "commit", "-q", "-m", "feature")
            sha = git(wt, "rev-parse", "HEAD")
            before = tip(board)
            ok, hb = await call(coder, "heartbeat", task="t1")
            assert ok and hb["task"] == "t1" and hb["live_commit"], hb
            assert tip(board) == before  # a renewal off the audit chain (refs/liza/live/c1)
            ok, sub = await call(coder, "submit", task="t1")
            assert ok and sub["to"] == "READY_FOR_REVIEW"
            assert sub["task_record"]["review_commit"] == sha
        async with agent_session(board, "r1") as reviewer:
            ok, ready = await call(reviewer, "ready")
            assert ok and [t["id"] for t in ready["tasks"]] == ["t1"]
            ok, rev = await call(reviewer, "claim_review")
            assert ok and rev["task"] == "t1" and rev["review_commit"] == sha
            ok, ver = await call(reviewer, "verdict", task="t1", verdict="approve")
            assert ok and ver["to"] == "APPROVED"
            ok, merged = await call(reviewer, "merge", task="t1")
            assert ok and merged["to"] == "MERGED" and merged["result"] == "merged"
            assert git(board, "rev-parse", "integration") == merged["merge_commit"]
            assert git(board, "show", "integration:feature.py") == "print('hi')"
            ok, shown = await call(reviewer, "show", task="t1")
            assert ok and shown["status"] == "MERGED"
            ok, log = await call(reviewer, "log", n=5)
            assert ok and [e["op"] for e in log["result"]] == [
                "merge", "verdict", "claim-review", "submit", "claim"]
    run(main())
    assert Liza.open(board).board().task("t1").status == "MERGED"
    # What the tools did is on the board like any CLI transition: `verify` replays it.
    r = subprocess.run([sys.executable, "-m", "gitliza", "verify"], cwd=board,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_a_merge_conflict_is_exit_3_with_the_recorded_integration_failure(
        board: Path, tmp_path: Path) -> None:
    def land_theirs() -> str:  # someone else's change to the same file lands after the claim
        other = tmp_path / "other"
        git(board, "worktree", "add", "-q", str(other), "integration")
        (other / "feature.py").write_text("theirs\n")
        git(other, "add", "feature.py")
        git(other, "commit", "-q", "-m", "theirs")
        git(board, "worktree", "remove", str(other))
        return git(board, "rev-parse", "integration")

    async def main() -> str:
        async with agent_session(board, "c1") as coder:
            wt = Path((await call(coder, "claim"))[1]["worktree"])
            (wt / "feature.py").write_text("ours\n")
            git(wt, "add", "feature.py")
            git(wt, "commit", "-q", "-m", "ours")
            assert (await call(coder, "submit", task="t1"))[0]
        async with agent_session(board, "r1") as reviewer:
            assert (await call(reviewer, "claim_review", task="t1"))[0]
            # Landed while the review runs: a conflict found at claim-review would have sent
            # t1 back to its coder instead (docs/locks.md); under review, the merge finds it.
            integration = land_theirs()
            assert (await call(reviewer, "verdict", task="t1", verdict="approve"))[0]
            ok, data = await call(reviewer, "merge", task="t1")
            assert not ok
            assert (data["error"]["code"], data["error"]["exit_code"]) == ("INTEGRATION_FAILED", 3)
            assert data["result"]["to"] == "INTEGRATION_FAILED"
            assert data["result"]["state"] == tip(board) and data["result"]["reason"]
        return integration
    integration = run(main())
    assert git(board, "rev-parse", "integration") == integration  # the branch is untouched


def test_bad_arguments_and_foreign_tools_are_refused_with_nothing_changed(board: Path) -> None:
    async def main() -> None:
        before = tip(board)
        async with agent_session(board, "c1") as coder:
            for tool, args, code, text in [
                ("claim", {"task": 7}, "VALIDATION", "expected string"),
                ("claim", {"task": "t1", "actor": "r1"}, "VALIDATION", "unknown argument"),
                ("submit", {}, "VALIDATION", "missing argument(s) task"),
                ("block", {"task": "t1", "reason": "x", "questions": "why?"}, "VALIDATION",
                 "expected a list"),
                ("claim", {"task": "nope"}, "NOT_FOUND", "no task"),
                ("submit", {"task": "t1"}, "INVALID_TRANSITION", "UNCLAIMED"),
                ("verdict", {"task": "t1", "verdict": "approve"}, "NOT_ALLOWED",
                 "not a coder tool"),
                ("merge", {"task": "t1"}, "NOT_ALLOWED", "not a coder tool"),
                ("no_such_tool", {}, "VALIDATION", "unknown tool"),
            ]:
                ok, data = await call(coder, tool, **args)
                assert not ok, (tool, args)
                err = data["error"]
                assert (err["code"], err["exit_code"]) == (code, 1), (tool, args, err)
                assert text in err["message"], (tool, err)
                assert tip(board) == before, (tool, args)
        async with agent_session(board, "p1") as planner:
            ok, data = await call(planner, "add", task="t2", description="d", priority=True)
            assert not ok and "expected integer" in data["error"]["message"]
            ok, data = await call(planner, "add", task="t2", description="d", priority="high")
            assert not ok and data["error"]["code"] == "VALIDATION"
            ok, data = await call(planner, "add", task="t2", description="d", ready=True,
                                  spec_ref="missing.md", done_when="w", scope="s")
            assert not ok and "missing.md" in data["error"]["message"]  # the CLI's spec gate
            assert tip(board) == before
            ok, data = await call(planner, "add", task="t2", description="d2",
                                  depends_on=["t1"])
            assert ok and data["to"] == "DRAFT" and tip(board) != before
    run(main())


def test_a_held_ref_lock_is_a_concurrency_conflict_after_the_retries(board: Path) -> None:
    lock = board / ".git" / (STATE + ".lock")  # libgit2's own ref lock, held by "a writer"

    async def main() -> None:
        async with agent_session(board, "p1") as planner:
            before = tip(board)
            lock.write_text("")
            try:
                ok, data = await call(planner, "note", message="hello")
            finally:
                lock.unlink()
            assert not ok
            assert (data["error"]["code"], data["error"]["exit_code"]) == (
                "CONCURRENCY_CONFLICT", 2)
            assert tip(board) == before
            ok, _ = await call(planner, "note", message="hello")
            assert ok and tip(board) != before
    run(main())


def test_a_superseded_supervisor_generation_stands_the_server_down(board: Path) -> None:
    from gitliza.core.ops.control import Supervise
    c1 = Liza.open(board, "c1")
    gen = c1.do(Supervise, mode="start").outcome.board.get("supervisors", "c1").generation

    async def main() -> None:
        async with agent_session(board, "c1", gen=gen) as coder:
            ok, data = await call(coder, "discover", description="flaky test")
            assert ok and data["op"] == "discover"
            Liza.open(board, "c1").do(Supervise, mode="takeover")  # another supervisor
            before = tip(board)
            ok, data = await call(coder, "discover", description="another one")
            assert not ok and data["error"]["code"] == "LEASE_LOST", data
            assert "superseded" in data["error"]["message"] and tip(board) == before
    run(main())


def test_an_agent_under_a_supervisor_sees_only_the_tools_its_prompt_allows(board: Path) -> None:
    """The supervisor claims, takes review leases, merges and heartbeats for its agent (the
    prompt forbids them): a server started under a generation lists none of them and refuses
    a call of one with nothing changed."""
    from gitliza.core.ops.control import Supervise
    gen = Liza.open(board, "c1").do(Supervise, mode="start").outcome.board.get(
        "supervisors", "c1").generation

    async def main() -> None:
        async with agent_session(board, "c1", gen=gen) as coder:
            names = {t.name for t in (await coder.list_tools()).tools}
            assert {"submit", "release", "block", "handoff", "status"} <= names
            assert not names & {"claim", "heartbeat", "claim_review", "merge", "verdict"}
            before = tip(board)
            ok, data = await call(coder, "claim", task="t1")
            assert not ok and data["error"]["code"] == "NOT_ALLOWED", data
            assert tip(board) == before and not (board / ".worktrees" / "t1").exists()
        async with agent_session(board, "r1", role="code-reviewer") as reviewer:
            names = {t.name for t in (await reviewer.list_tools()).tools}
            assert "verdict" in names and "submit" not in names
    run(main())


def test_wait_blocks_beside_the_agents_other_calls(board: Path) -> None:
    async def main() -> None:
        async with agent_session(board, "c1") as coder:
            ok, data = await call(coder, "wait", condition="change", timeout=0)
            assert ok and data["met"] is False  # a timeout is an answer, not an error
            waited: dict[str, Any] = {}

            async def wait() -> None:
                waited.update((await call(coder, "wait", condition="status", task="t1",
                                          status="CLAIMED", timeout=120))[1])
            async with anyio.create_task_group() as tg:
                tg.start_soon(wait)
                ok, hb = await call(coder, "heartbeat")  # not queued behind the wait
                assert ok and not waited
                ok, claimed = await call(coder, "claim", task="t1")
                assert ok
            assert waited["met"] is True and waited["state"] == claimed["state"]
            ok, data = await call(coder, "wait", condition="sometime")
            assert not ok and data["error"]["code"] == "VALIDATION"
    run(main())


def test_resources_board_task_and_log(board: Path) -> None:
    async def main() -> None:
        async with agent_session(board, "p1") as s:
            uris = {str(r.uri) for r in (await s.list_resources()).resources}
            assert {"liza://board", "liza://log", "liza://task/t1"} <= uris
            templates = (await s.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == ["liza://task/{task}"]

            async def read(uri: str) -> Any:
                res = await s.read_resource(uri)
                return json.loads(res.contents[0].text)  # type: ignore[union-attr]
            board_res = await read("liza://board")
            assert board_res["state"] == tip(board)
            # The same library answers the CLI: `status --json` says what the tool says.
            ok, status = await call(s, "status")
            cli = subprocess.run([sys.executable, "-m", "gitliza", "status", "--json"],
                                 cwd=board, capture_output=True, text=True, check=True)
            assert ok and status == json.loads(cli.stdout) == board_res
            assert (await read("liza://task/t1"))["status"] == "UNCLAIMED"
            assert (await read("liza://log"))[0]["op"] == "add"
    run(main())


def test_role_must_match_the_registration_and_an_unknown_agent_needs_one(board: Path) -> None:
    def start(*args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "LIZA_AGENT_ID"}
        return subprocess.run([sys.executable, "-m", "gitliza", "mcp", "--repo", str(board),
                               *args], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              env=env, timeout=60)
    r = start("--agent", "c1", "--role", "code_reviewer")
    assert r.returncode == 1 and "registered as coder" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and r.stdout == ""
    r = start("--agent", "ghost")
    assert r.returncode == 1 and "not a registered agent" in r.stderr


def test_without_the_sdk_the_server_exits_5_with_the_install_hint(board: Path) -> None:
    # A None entry in sys.modules makes `import mcp` fail, as in an install without the extra.
    code = ("import sys; sys.modules['mcp'] = None; from gitliza.cli.app import main; "
            "sys.exit(main(['mcp', '--agent', 'c1']))")
    r = subprocess.run([sys.executable, "-c", code], cwd=board, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=60)
    assert r.returncode == 5, r.stderr
    assert r.stderr.count("\n") == 1 and "pip install 'gitliza[mcp]'" in r.stderr
