"""The real agent CLIs as the second reviewer of a quorum (issue 40): `review_quorum 2` and two
reviewers of the same CLI, against the scripted model server. Every approval that merges carries
two votes from two distinct reviewers, each recorded with the CLI that cast it; the first draft's
blocker still rejects it once; `verify` accepts the history (it replays the quorum rule)."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Callable

import pytest

from tests.agentcli import clis
from tests.agentcli.modelserver import Server
from tests.agentcli.conftest import liza
from tests.agentcli.team_check import check_team_result, denials
from tests.agentcli.test_team import _metric, run_team


@pytest.mark.slow
@pytest.mark.parametrize("name", ["claude", "codex", "gemini", "mistral"])
def test_a_real_cli_is_the_second_reviewer_of_a_quorum(
        name: str, agent_cli: Callable[[str], clis.Cli], board: Path,
        agent_env: dict[str, str], server: Server) -> None:
    agent_cli(name)
    r = liza(board, agent_env, "config", "review_quorum", "2")
    assert r.returncode == 0, r.stderr
    out, took = run_team(board, agent_env, name, reviewers=2)
    try:
        check_team_result(board, agent_env, server, f"{name}-quorum2")
        assert denials(server) == [], denials(server)
        for task in ("hello", "bye"):
            shown = json.loads(liza(board, agent_env, "show", task, "--json").stdout)
            votes = shown["review_votes"]
            assert shown["review_quorum"] == 2, shown["review_quorum"]
            assert len({v["agent"] for v in votes}) == 2, votes
            assert all(v["cli"] for v in votes), votes
        # Each of the two reviewers' agents really ran (a real CLI, not the supervisor alone).
        reviewers = {m.group(1) for e in server.turns("code-reviewer")
                     if (m := re.search(r"Agent ID: (\S+)\.", e.prompt or ""))}
        assert len(reviewers) == 2, reviewers
    except AssertionError as e:
        raise AssertionError(f"{e}\n--- team output ---\n{out[-6000:]}") from None
    print(f"{name}-quorum2: {took:.1f}s")
    _metric(f"{name}-quorum2", took)
