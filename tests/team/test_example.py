"""The main job as a test: examples/team.py runs a planner, two coders and a reviewer as real
supervisor processes with the scripted agents, and checks the result itself (every task MERGED,
`python -m hello` on the integration branch, its tests, `git liza verify`)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["checkout", "under-tmp"])
def examples(request: pytest.FixtureRequest) -> Iterator[Path]:
    """examples/ where it is, and in a clone under /tmp: the sandbox gives every agent a /tmp of
    its own, so the agents' scripts (named on their command line) must be shown again there;
    a fresh clone in /tmp once had every agent die at once with "can't open file"."""
    if request.param == "checkout":
        yield ROOT / "examples"
        return
    d = Path(tempfile.mkdtemp(prefix="gitliza-clone-", dir="/tmp"))
    try:
        shutil.copytree(ROOT / "examples", d / "examples")
        yield d / "examples"
    finally:
        shutil.rmtree(d)


@pytest.mark.slow
def test_the_team_builds_the_hello_cli_end_to_end(tmp_path: Path, examples: Path) -> None:
    env = dict(os.environ, TMPDIR=str(tmp_path))
    r = subprocess.run([sys.executable, str(examples / "team.py")], env=env,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    out = r.stdout
    assert "add greeting (new -> UNCLAIMED) by planner-1" in out
    assert "verdict greeting (READY_FOR_REVIEW -> REJECTED) by reviewer-1" in out
    assert "merge cli (APPROVED -> MERGED) by reviewer-1" in out
    assert "complete-goal goal-1 by planner-1" in out
    assert "every task MERGED: cli, greeting, readme" in out
    assert "`python -m hello` -> 'Hello, World!', --name Bob -> 'Hello, Bob!'" in out
    assert "verified " in out and "team run complete" in out
    assert not list(tmp_path.glob("gitliza-team-*"))  # a successful run cleans up after itself
    # ... and so it names no log directory it is about to delete; it says how to keep them
    assert "Supervisor logs" not in out and "run it with --keep to look around" in out


def test_with_a_real_cli_the_supervisors_run_it_instead_of_the_scripted_agents() -> None:
    """`examples/team.py --cli NAME`: each supervisor runs `git liza agent ROLE --cli NAME`
    (tests/agentcli/ runs it against the scripted model server)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("team_example", ROOT / "examples" / "team.py")
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    argv = example.agent_argv("code-reviewer", "reviewer.py", "codex", True, "bypass")
    assert argv[1:] == ["agent", "code-reviewer", "--cli", "codex", "--mcp", "--permissions",
                        "bypass"]
    assert example.agent_argv("coder", "coder.py")[-1].endswith("coder.py")
    args = example.parse(["--cli", "gemini"])
    assert (args.cli, args.mcp, args.permissions) == ("gemini", False, None)
    with pytest.raises(SystemExit):
        example.parse(["--mcp"])  # --mcp without --cli: nothing to hand it to
