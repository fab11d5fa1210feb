"""Route around it with the real CLIs (docs/agents.md "Route around it"): a coder supervisor with
`--cli claude,codex`, in the sandbox, against the scripted model server refusing the Anthropic
dialect (429, retry-after one hour) and serving the OpenAI one: the first run ends rate limited,
the next runs with Codex and finishes the task; the task's usage records show both CLIs, and it
is never counted failed."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import pytest

from tests.agentcli import clis
from tests.agentcli.conftest import liza
from tests.agentcli.modelserver import Server, Trouble
from tests.team.procs import Sup

pytestmark = pytest.mark.slow


def test_a_rate_limited_claude_hands_the_task_to_codex(
        agent_cli: Callable[[str], clis.Cli], board: Path, agent_env: dict[str, str],
        server: Server) -> None:
    agent_cli("claude")
    agent_cli("codex")
    server.trouble = Trouble("rate_limit", retry_after=3600, dialect="anthropic")
    liza(board, agent_env, "add", "hello", "--desc", "Create hello.txt holding the line: Hello",
         "--spec-ref", "specs/vision.md", "--done-when", "hello.txt exists", "--scope",
         "hello.txt", "--ready")
    sup = Sup(board, "coder", "coder-1", "--cli", "claude,codex", "--sandbox", "on",
              env={**agent_env, "LIZA_SANDBOX": "on"})
    try:
        sup.expect("next run with codex", timeout=300)
        liza(board, agent_env, "wait", "status", "--task", "hello", "--status",
             "READY_FOR_REVIEW", "--timeout", "600")
    finally:
        liza(board, agent_env, "abort")
        sup.wait(60)
    out = sup.output()
    assert "claude rate limited until" in out, out
    prompts = sorted((board / ".liza" / "agent-prompts").glob("coder-1-*.txt"))
    show = json.loads(liza(board, agent_env, "show", "hello", "--json").stdout)
    clis_used = [r["cli"] for r in show["usage"]]
    # Claude first, Codex the run that finished it. (Claude Code with an API key reports its
    # own capped retry delay, not the hour of retry-after: its wait is short, and on a slow
    # machine it may be back, refused again, before Codex is done; the hour-long case is
    # tests/team/test_fallback.py's.)
    assert clis_used[0] == "claude" and clis_used[-1] == "codex", (show["usage"], out)
    assert not show.get("failed_by"), show
    refused = sum(1 for e in server.log if str(e.answer).startswith("refused"))
    print(f"claude refused {refused} requests; {len(prompts)} launches; runs {clis_used}")
    print("\n".join(x for x in sup.lines if "next run" in x or "kept" in x))
