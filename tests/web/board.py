"""A real board for the web tests (and the screenshot): tasks in several states, a review diff
made in a real task worktree by the CLI, a block with questions, an agent log."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import commit_specs, git

PRIVATE = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n" \
          "-----END OPENSSH PRIVATE KEY-----\n"


def cli(repo: Path, *args: str, agent: str | None = None, check: bool = True
        ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "LIZA_AGENT_ID"}
    if agent is not None:
        env["LIZA_AGENT_ID"] = agent
    r = subprocess.run([sys.executable, "-m", "gitliza", *args], cwd=repo, env=env,
                       capture_output=True, text=True, timeout=120)
    if check and r.returncode != 0:
        raise AssertionError(f"git liza {' '.join(args)}: {r.returncode} {r.stderr}")
    return r


def make_board(repo: Path) -> dict[str, str]:
    """t1 in review (a diff touching app.py and a file holding a private key), t2 after t1, t3
    blocked with questions, t4 claimed by c2, d1 a draft; agents p1, c1, c2, r1."""
    (repo / "specs").mkdir()
    (repo / "specs" / "greet.md").write_text("# Greeting\n\nSay **hello** to `NAME`.\n\n"
                                             "- one\n- two\n\n<script>alert(1)</script>\n")
    commit_specs(repo, "spec.md")
    git(repo, "add", "specs")
    git(repo, "commit", "-q", "-m", "the greet spec")
    cli(repo, "init", "Ship the hello CLI")
    for agent, role in (("p1", "planner"), ("c1", "coder"), ("c2", "coder"),
                        ("r1", "code-reviewer")):
        cli(repo, "register", agent, "--role", role)
    add = ("--spec-ref", "specs/greet.md", "--done-when", "it greets", "--scope", "src",
           "--ready")
    cli(repo, "add", "t1", "--desc", "Greet by name", *add, "--priority", "1", agent="p1")
    cli(repo, "add", "t2", "--desc", "Add a --shout flag", *add, "--depends-on", "t1",
        agent="p1")
    cli(repo, "add", "t3", "--desc", "Localise the greeting", *add, agent="p1")
    cli(repo, "add", "t4", "--desc", "Write the README", *add, agent="p1")
    cli(repo, "add", "d1", "--desc", "Maybe a GUI", agent="p1")
    import json
    wt = repo / json.loads(cli(repo, "claim", "t1", "--json", agent="c1").stdout)["worktree"]
    (wt / "app.py").write_text("def greet(name):\n    return f'hello {name}'\n")
    (wt / "id_test").write_text(PRIVATE)
    git(wt, "add", "app.py", "id_test")
    git(wt, "commit", "-q", "-m", "greet by name")
    cli(repo, "submit", "t1", agent="c1")
    cli(repo, "claim", "t3", agent="c2")
    cli(repo, "block", "t3", "--reason", "which languages?", "--question",
        "Which languages first?", "--question", "Who translates?", agent="c2")
    cli(repo, "claim", "t4", agent="c2")
    logs = repo / ".liza" / "agent-logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "c1--t1--20260101T000000Z.log").write_text("starting t1\nwrote app.py\n" + PRIVATE)
    return {"worktree": str(wt)}


def small_board(repo: Path) -> None:
    """In process and quick (set-up, not under test): t1..t3 ready, t1 blocked by c1 with two
    questions (a board-level claim: no worktree needed), agents p1, c1."""
    from gitliza.core.ops import Add, Init, Register
    from gitliza.core.ops.work import Block, Claim
    from gitliza.services.api import Liza
    from gitliza.services.lifecycle.integration import ensure_integration_branch
    commit_specs(repo, "spec.md")
    human = Liza.open(repo, "human")
    done = human.do(Init, goal="build it")
    ensure_integration_branch(human, done.outcome.board.config.integration_branch)
    human.do(Register, agent="p1", role="planner")
    human.do(Register, agent="c1", role="coder")
    planner = Liza.open(repo, "p1")
    for tid in ("t1", "t2", "t3"):
        planner.do(Add, task=tid, description=f"do {tid}", spec_ref="spec.md",
                   done_when="it works", scope="src", ready=True)
    coder = Liza.open(repo, "c1")
    base = git(repo, "rev-parse", "main")
    coder.do(Claim, task="t1", worktree=".worktrees/t1", base_commit=base)
    coder.do(Block, task="t1", reason="unclear", questions=("Which way?", "How far?"))
