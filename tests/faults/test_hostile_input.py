"""What an agent or a cloned repository writes is hostile input (issue 26, item 8): a `gitliza/`
package planted in the repository, links committed under `.liza/`, escape sequences in board
text, spec paths that leave the repository. Each attack is made for real (a real repository, real
processes started the way gitliza starts them) and must change nothing it should not."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import git
from tests.team.procs import WAIT, add_task, env_for, make_board, script

SHADOW = "SHADOW GITLIZA EXECUTED"


def plant_gitliza(root: Path, marker: Path) -> None:
    """A `gitliza/` package at the repository's root, committed (so every worktree has it), that
    says so and leaves `marker` when Python imports it instead of the installed one."""
    pkg = root / "gitliza"
    pkg.mkdir()
    body = (f"import pathlib, sys\nprint({SHADOW!r}, flush=True)\n"
            f"pathlib.Path({str(marker)!r}).write_text('ran')\n")
    (pkg / "__init__.py").write_text(body)
    (pkg / "__main__.py").write_text(body + "sys.exit(0)\n")
    git(root, "add", "gitliza")
    git(root, "commit", "-q", "-m", "a gitliza of our own")


def test_the_plant_bites_without_dash_p(repo: Path, tmp_path: Path) -> None:
    """The attack is real: a plain `python -m gitliza` in the repository runs the planted one
    (so the tests below, where it must not, can fail)."""
    marker = tmp_path / "ran"
    plant_gitliza(repo, marker)
    r = subprocess.run([sys.executable, "-m", "gitliza", "--version"], cwd=repo,
                       capture_output=True, text=True, env=env_for(), timeout=WAIT)
    assert SHADOW in r.stdout and marker.exists()


@pytest.mark.slow
def test_a_planted_gitliza_never_runs_in_a_team(repo: Path, tmp_path: Path) -> None:
    """`git liza team` in a repository with a committed `gitliza/`: the supervisors it starts,
    the agent's `git liza` alias (run by git from the task worktree's top) and the MCP server
    its generated configuration starts (run from the worktree) are all the installed gitliza."""
    marker = tmp_path / "shadow-ran"
    plant_gitliza(repo, marker)
    make_board(repo)
    add_task(repo, "t1")
    out = tmp_path / "out"
    out.mkdir()
    agent = script(tmp_path, "agent.sh", f"""
git liza --version > {out}/alias.txt 2>&1
cp "$LIZA_MCP_CONFIG" {out}/mcp.json
pwd > {out}/cwd.txt
touch {out}/done
exec sleep 600
""")
    # The test's own start is the installed console script (a `python -m gitliza` here would be
    # the plant, as the test above shows).
    team = subprocess.Popen([str(Path(sys.executable).parent / "git-liza"), "team",
                             "--planners", "0", "--reviewers", "0", "--coders", "1", "--mcp",
                             "--", str(agent)], cwd=repo, env=env_for(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        git(repo, "liza", "wait", "status", "--task", "t1", "--status", "CLAIMED", "--timeout",
            str(WAIT), env=env_for())
        for _ in range(int(WAIT * 10)):
            if (out / "done").exists() or team.poll() is not None:
                break
            subprocess.run(["sleep", "0.1"])
        assert (out / "done").exists(), "the agent never ran"
    finally:
        team.send_signal(signal.SIGINT)
        output, _ = team.communicate(timeout=WAIT)
    assert SHADOW not in output and not marker.exists(), output
    assert (out / "alias.txt").read_text().startswith("git-liza version"), \
        (out / "alias.txt").read_text()
    cwd = Path((out / "cwd.txt").read_text().strip())
    assert (cwd / "gitliza" / "__main__.py").exists()  # the task worktree carries the plant
    entry = json.loads((out / "mcp.json").read_text())["mcpServers"]["gitliza"]
    assert "-P" in entry["args"]
    r = subprocess.run([entry["command"], *entry["args"]], cwd=cwd, stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, env={**env_for(), **entry["env"]},
                       timeout=WAIT)
    assert SHADOW not in r.stdout + r.stderr and not marker.exists(), r
