"""Fixtures for the tests against the real agent CLIs: the pinned installs (cached outside the
clone, one install per CLI across xdist workers), the scripted model server, and a board made as
the README's quickstart shows, with a vision the planner turns into tasks."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable, Iterator

import pytest

from tests.agentcli import clis
from tests.agentcli.modelserver import Server
from tests.conftest import git

BIN = Path(sys.executable).parent

VISION = """\
# Vision: greetings

Two files at the top of the repository, one task each:

1. `hello.txt` holds `Hello, World!`
2. `bye.txt` holds `Goodbye!`

Every file ends with the line `-- liza`.
"""

CONFIG = {"heartbeat_interval": "5", "lease_duration": "120", "coder_max_wait": "600",
          "planner_max_wait": "600", "reviewer_max_wait": "600", "restart_delay": "1",
          "crash_delay": "1", "crash_delay_max": "4"}

_install_results: dict[str, str | None] = {}


@pytest.fixture(scope="session")
def agent_cli() -> Callable[[str], clis.Cli]:
    """`agent_cli(NAME)`: the installed CLI, or the test skips with one line saying why."""
    def get(name: str) -> clis.Cli:
        cli = clis.CLIS[name]
        if name not in _install_results:
            _install_results[name] = clis.install(cli)
        why = _install_results[name]
        if why is not None:
            pytest.skip(why)
        return cli
    return get


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    with Server(log_file=tmp_path / "model-requests.jsonl") as srv:
        yield srv


@pytest.fixture
def agent_env(server: Server) -> dict[str, str]:
    """The environment of the supervisors: HOME (the test's own) with every CLI configured for
    the server, the installed CLIs and this venv on PATH."""
    home = Path(os.environ["HOME"])
    clis.configure_home(home, server.url)
    bins = [c.bin for c in clis.CLIS.values() if c.installed] + [BIN]
    return clis.environment(dict(os.environ), home, server.url, bins)


def make_board(path: Path, env: dict[str, str], vision: str = VISION) -> Path:
    """A repository with specs/vision.md and a board, as the README's quickstart makes it."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "specs").mkdir()
    (path / "specs" / "vision.md").write_text(vision)
    (path / "README.md").write_text("greetings\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "vision")
    liza(path, env, "init", "Build the greetings per specs/vision.md")
    for k, v in CONFIG.items():
        liza(path, env, "config", k, v)
    return path


def liza(repo: Path, env: dict[str, str], *args: str, check: bool = True,
         agent: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    e = dict(env)
    e.pop("LIZA_AGENT_ID", None)
    if agent:
        e["LIZA_AGENT_ID"] = agent
    r = subprocess.run(["git", "liza", *args], cwd=repo, env=e, capture_output=True, text=True,
                       timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"git liza {' '.join(args)} failed ({r.returncode}): {r.stderr}")
    return r


# Where the projects live: not under /tmp. Gemini CLI skips a settings file (gitliza's per-run
# MCP and policy settings) when any directory above it is group- or world-writable, as /tmp is.
RUNS = clis.CACHE.parent / "gitliza-agentcli-runs"


@pytest.fixture
def private_dir() -> Iterator[Path]:
    RUNS.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="run-", dir=RUNS))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def board(private_dir: Path, agent_env: dict[str, str]) -> Path:
    return make_board(private_dir / "project", agent_env)
