"""`git liza forge ...` as a user meets it (no forge server needed): bad input is one line and
changes nothing, an agent cannot set the forge, the token is found outside the board (and never
written to it), a missing githubkit is exit 5 naming the pip extra, and `status`, `add` and
`heartbeat` never load the forge room."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.cli.test_board import liza, ok, tip
from tests.conftest import git
from tests.forge.test_bridge_standin import _path
from tests.team.procs import add_task, make_board


def test_bad_input_is_one_line_and_changes_nothing(repo: Path) -> None:
    make_board(repo)
    before = tip(repo)
    for args in (["--repo", "no-slash"], ["--repo", "a/b", "--api-url", "https://u:pw@h/api/v3"],
                 ["--repo", "a/b", "--api-url", "file:///etc"]):
        r = liza(repo, "forge", "github", *args, agent=None)
        assert r.returncode == 1 and len(r.stderr.strip().splitlines()) <= 2, r.stderr
    ok(liza(repo, "register", "planner-1", "--role", "planner", agent=None))
    before = tip(repo)
    r = liza(repo, "forge", "github", "--repo", "a/b", agent="planner-1")
    assert r.returncode == 1 and "docs/forge.md" in r.stderr
    r = liza(repo, "forge", "sync", "--once", agent=None)
    assert r.returncode == 1 and "no forge is set" in r.stderr
    assert tip(repo) == before


def test_the_token_comes_from_outside_the_board_and_never_onto_it(repo: Path) -> None:
    make_board(repo)
    env = {"PATH": _path(), "GITHUB_TOKEN": ""}
    # No token anywhere: the forge is set (the human's keys), the check says what to do, exit 5.
    r = liza(repo, "forge", "github", "--repo", "acme/app", "--api-url", "http://127.0.0.1:9",
             agent=None, env=env)
    assert r.returncode == 5 and "GITHUB_TOKEN" in r.stderr and "liza.forgeToken" in r.stderr
    # From git config (this clone's, which no push carries): found, and named by its source only.
    git(repo, "config", "liza.forgeToken", "ghp_from_git_config_123")
    r = liza(repo, "forge", "status", agent=None, env=env)
    assert "token from git config liza.forgeToken" in r.stderr + r.stdout
    assert "ghp_from_git_config_123" not in r.stderr + r.stdout
    assert "ghp_from_git_config_123" not in git(repo, "log", "-p", "refs/liza/state")
    assert "acme/app" in ok(liza(repo, "forge", "status", "--json", agent=None, env=env))
    # Nothing listens on port 9: the line names the refusal, not the client library's wrapper.
    said = r.stderr + r.stdout
    assert "GitHub unreachable (GET repository)" in said and "refused" in said.lower(), said
    assert "RequestError" not in said


def test_without_githubkit_the_forge_is_exit_5_naming_the_extra(repo: Path) -> None:
    make_board(repo)
    ok(liza(repo, "config", "forge", "github", agent=None))
    ok(liza(repo, "config", "forge_repo", "acme/app", agent=None))
    code = ("import sys; sys.modules['githubkit'] = None\n"
            "from gitliza.__main__ import main\nsys.argv = ['git-liza', 'forge', 'status']\n"
            "main()")
    r = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True,
                       timeout=60, env={"GITHUB_TOKEN": "x", "PATH": _path(),
                                        "HOME": str(repo.parent)})
    assert r.returncode == 5, r.stderr
    assert "pip install 'gitliza[forge]'" in r.stderr


def test_status_add_and_heartbeat_never_load_the_forge_room(repo: Path) -> None:
    make_board(repo)
    add_task(repo, "t1")
    for args in (["status"], ["add", "t2", "--desc", "d"], ["heartbeat"]):
        # -X importtime lists every module the command imported (main() ends the process
        # itself: nothing could run after it to look at sys.modules).
        r = subprocess.run([sys.executable, "-X", "importtime", "-m", "gitliza", *args],
                           cwd=repo, capture_output=True, text=True, timeout=60,
                           env={"PATH": _path(), "HOME": str(repo.parent),
                                "LIZA_AGENT_ID": "planner-1"})
        loaded = [ln.rsplit("|", 1)[-1].strip() for ln in r.stderr.splitlines()
                  if ln.startswith("import time:")]
        assert "gitliza.core.board" in loaded, (args, r.stderr[-500:])
        assert [m for m in loaded if m.startswith(("gitliza.forge", "githubkit"))] == [], args
