"""A supervisor removes from the board only the agent it registered itself (issue 27): a person's
`git liza register planner-1` survives a `team` or `agent` run, so the Quickstart's next
`LIZA_AGENT_ID=planner-1 git liza add` still works."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_board import liza, ok
from tests.team.procs import Sup, make_board

pytestmark = pytest.mark.slow


def _agents(repo: Path) -> set[str]:
    return {a["id"] for a in json.loads(ok(liza(repo, "status", "--json", agent=None)))["agents"]}


def _stop(repo: Path, sup: Sup) -> None:
    sup.expect("generation 1")
    (repo / ".liza").mkdir(exist_ok=True)
    (repo / ".liza" / "ABORT").touch()
    assert sup.wait() == 0 and "ABORT; exiting" in sup.output()
    (repo / ".liza" / "ABORT").unlink()


def test_a_hand_registered_agent_stays_and_a_self_registered_one_goes(repo: Path) -> None:
    make_board(repo)
    ok(liza(repo, "register", "reviewer-1", "--role", "code_reviewer", agent=None))
    _stop(repo, Sup(repo, "code-reviewer", "reviewer-1", "--", "true"))
    assert "reviewer-1" in _agents(repo)
    log = json.loads(ok(liza(repo, "log", "--op", "supervise", "--json", agent=None)))
    end = [e for e in log if e["op"] == "supervise" and e["args"]["mode"] == "end"]
    assert len(end) == 1 and "agent removed" not in end[0]["summary"]
    # the same id, now registered by nobody but the supervisor that ran: kept as well (it was
    # there before this supervisor), while an id the supervisor registered itself is removed
    _stop(repo, Sup(repo, "code-reviewer", "reviewer-2", "--", "true"))
    assert "reviewer-2" not in _agents(repo) and "reviewer-1" in _agents(repo)
    ok(liza(repo, "verify", agent=None))
