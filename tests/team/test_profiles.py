"""Launch profiles: what `git liza agent --cli NAME` runs for each agent CLI (argv, standard
input, environment, the configuration files written beside the prompts), per `--permissions`
choice, with and without MCP; role words and role-scoped tools; the `git liza` alias that
survives a login shell. The real CLIs' end-to-end runs are in tests/agentcli/."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from gitliza import agentcli
from gitliza.access import mcp_config, tools
from gitliza.core.states import Role
from gitliza.errors import PermissionDenied, ValidationError
from gitliza.agentcli import launch as planning
from gitliza.agentcli.base import Permissions as P
from tests.cli.test_board import liza, ok

SERVER = mcp_config.server("/work/project", "coder-1", "coder", python="/venv/bin/python", gen=3)


def ctx(tmp: Path, prompt: str = "You are a Liza coder agent.\n", mcp: bool = False,
        main_worktree: bool = False, base_env: dict[str, str] | None = None,
        **kw: Any) -> agentcli.Context:
    common = tmp / "repo" / ".git"
    return agentcli.Context(
        cwd=tmp / "repo" if main_worktree else tmp / "repo" / ".worktrees" / "t1",
        git_dir=common if main_worktree else common / "worktrees" / "t1", common_dir=common,
        liza_dir=tmp / "repo" / ".liza", run_dir=tmp / "repo" / ".liza" / "agent-prompts",
        agent="coder-1", prompt_file=tmp / "prompt.txt", prompt=prompt,
        gitliza=("/venv/bin/python", "-m", "gitliza"), base_env=base_env or {"HOME": "/home/u"},
        mcp=SERVER if mcp else None,
        tools=tuple(t.name for t in tools.tools_for(Role.CODER, supervised=True)), **kw)


def plan(cli: str, tmp: Path, perms: P = P.WORKTREE, **kw: Any) -> agentcli.Launch:
    return agentcli.plan(agentcli.profile(cli), perms, ctx(tmp, **kw))


def codex_overrides(argv: list[str]) -> dict[str, Any]:
    """The `-c key=value` overrides, parsed as codex parses them (TOML values)."""
    out: dict[str, Any] = {}
    for flag, kv in zip(argv, argv[1:]):
        if flag == "-c":
            key, _, value = kv.partition("=")
            out[key] = tomllib.loads(f"v = {value}")["v"]
    return out


# -- the prompt goes on standard input (no 128 KiB argument cap), never as an argument ------------
@pytest.mark.parametrize("cli", ["claude", "codex", "gemini"])
def test_the_prompt_is_the_standard_input_not_an_argument(cli: str, tmp_path: Path) -> None:
    big = "x" * (300 * 1024)
    for mcp in (False, True):
        launch = plan(cli, tmp_path, prompt=big, mcp=mcp)
        assert launch.stdin == tmp_path / "prompt.txt"
        assert all(len(a) < planning.ARG_MAX and "Liza" not in a for a in launch.argv)
    assert plan("codex", tmp_path).argv[-1] == "-"  # codex exec: `-` reads the prompt on stdin


def test_vibe_reads_the_prompt_file_by_name_and_mistral_is_vibe(tmp_path: Path) -> None:
    launch = plan("mistral", tmp_path)
    assert launch.argv[0] == "vibe"
    assert launch.argv[-2:] == ["--prompt-file", str(tmp_path / "prompt.txt")]
    assert agentcli.profile("vibe") is agentcli.profile("mistral")
    with pytest.raises(ValidationError, match="--cli must be one of"):
        agentcli.profile("emacs")
    with pytest.raises(ValidationError, match="--permissions must be one of"):
        agentcli.parse_permissions("yolo")
    assert agentcli.parse_permissions(None) is P.WORKTREE


def test_a_plain_command_gets_the_prompt_as_its_last_argument_while_it_fits(
        tmp_path: Path) -> None:
    small = agentcli.plan(agentcli.PLAIN, P.WORKTREE, ctx(tmp_path), ("my-agent", "--x"))
    assert small.argv == ["my-agent", "--x", "You are a Liza coder agent.\n"]
    assert small.stdin == tmp_path / "prompt.txt"
    big = agentcli.plan(agentcli.PLAIN, P.WORKTREE, ctx(tmp_path, prompt="y" * planning.ARG_MAX),
                        ("my-agent",))
    assert big.argv == ["my-agent"] and big.stdin == tmp_path / "prompt.txt"


# -- permissions -----------------------------------------------------------------------------------
def test_claude_worktree_posture_is_an_allow_list_that_works_as_root(tmp_path: Path) -> None:
    argv = plan("claude", tmp_path).argv
    assert argv[:2] == ["claude", "-p"]
    assert argv[argv.index("--permission-mode") + 1] == "acceptEdits"
    assert "--allowedTools=Bash,mcp__gitliza" in argv
    assert "--dangerously-skip-permissions" not in argv
    assert "--dangerously-skip-permissions" in plan("claude", tmp_path, P.BYPASS).argv
    assert plan("claude", tmp_path, P.OWN).argv == ["claude", "-p"]


def test_codex_worktree_sandbox_gives_back_exactly_the_git_metadata_a_commit_needs(
        tmp_path: Path) -> None:
    argv = plan("codex", tmp_path).argv
    assert argv[:2] == ["codex", "exec"]
    assert argv[argv.index("--sandbox") + 1] == "workspace-write"
    c = codex_overrides(argv)
    assert c["approval_policy"] == "never"
    common = tmp_path / "repo" / ".git"
    assert c["sandbox_workspace_write.writable_roots"] == [
        str(common / "worktrees" / "t1"), str(common / "objects"), str(common / "refs"),
        str(common / "logs"), str(common / "liza-objects"), str(common / "liza-merged-packs"),
        str(tmp_path / "repo" / ".liza")]  # not hooks, not config
    planner = agentcli.plan(agentcli.profile("codex"), P.WORKTREE,
                            ctx(tmp_path, main_worktree=True))
    assert codex_overrides(planner.argv)["sandbox_workspace_write.writable_roots"][0] == \
        str(common)  # the main worktree's index and HEAD live in the common dir
    bypass = plan("codex", tmp_path, P.BYPASS).argv
    assert "--dangerously-bypass-approvals-and-sandbox" in bypass and "--sandbox" not in bypass
    assert "--sandbox" not in plan("codex", tmp_path, P.OWN).argv


def test_codex_inside_gitlizas_sandbox_runs_without_its_own(tmp_path: Path) -> None:
    """Codex's bubblewrap cannot map a user namespace inside gitliza's (every command it ran
    failed): contained, it runs with no sandbox of its own and still never asks."""
    argv = plan("codex", tmp_path, contained=True).argv
    assert argv[argv.index("--sandbox") + 1] == "danger-full-access"
    c = codex_overrides(argv)
    assert c["approval_policy"] == "never" and "sandbox_workspace_write.writable_roots" not in c


def test_gemini_is_trusted_and_allowed_its_shell_mcp_in_per_run_system_settings(
        tmp_path: Path) -> None:
    admin = json.dumps({"mcpServers": {"corp": {"command": "x"}}, "telemetry": {"enabled": False}})
    launch = agentcli.plan(agentcli.profile("gemini"), P.WORKTREE,
                           ctx(tmp_path, mcp=True, system_settings=admin))
    assert launch.argv[0] == "gemini" and "--skip-trust" in launch.argv
    assert launch.argv[launch.argv.index("--approval-mode") + 1] == "auto_edit"
    policy = Path(launch.argv[launch.argv.index("--policy") + 1])
    rule = tomllib.loads(launch.files[policy])["rule"][0]
    assert (rule["toolName"], rule["decision"]) == ("run_shell_command", "allow")
    path = Path(launch.env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"])
    assert path.parent == policy.parent == tmp_path / "repo" / ".liza" / "agent-prompts"
    settings = json.loads(launch.files[path])
    assert settings["telemetry"] == {"enabled": False}  # the administrator's settings stay
    assert settings["mcpServers"]["corp"] == {"command": "x"}
    server = settings["mcpServers"]["gitliza"]
    assert server["trust"] is True and server["args"] == SERVER["args"]
    assert launch.mcp_config == path
    yolo = plan("gemini", tmp_path, P.BYPASS)
    assert yolo.argv[yolo.argv.index("--approval-mode") + 1] == "yolo"
    own = plan("gemini", tmp_path, P.OWN)
    assert own.argv == ["gemini", "--skip-trust"] and not own.files
    assert "trust" not in json.loads(plan("gemini", tmp_path, P.OWN, mcp=True).files[path])[
        "mcpServers"]["gitliza"]


def test_vibe_worktree_posture_allows_bash_and_gitlizas_tools_through_its_env_layer(
        tmp_path: Path) -> None:
    launch = plan("vibe", tmp_path, mcp=True)
    assert launch.argv[launch.argv.index("--agent") + 1] == "accept-edits"
    allowed = json.loads(launch.env["VIBE_TOOLS"])
    assert allowed["bash"] == {"permission": "always"}
    assert allowed["gitliza_submit"] == {"permission": "always"}
    assert "gitliza_claim" not in allowed and "gitliza_heartbeat" not in allowed
    servers = json.loads(launch.env["VIBE_MCP_SERVERS"])
    assert servers == [{"name": "gitliza", "transport": "stdio", **SERVER}]
    assert "--auto-approve" in plan("vibe", tmp_path, P.BYPASS).argv
    own = plan("vibe", tmp_path, P.OWN, mcp=True)
    assert "VIBE_TOOLS" not in own.env and "VIBE_MCP_SERVERS" in own.env


# -- MCP through each CLI's own mechanism ----------------------------------------------------------
def test_claude_mcp_config_is_one_word_so_it_cannot_swallow_anything(tmp_path: Path) -> None:
    launch = plan("claude", tmp_path, mcp=True)
    path = tmp_path / "repo" / ".liza" / "agent-prompts" / "coder-1-mcp.json"
    assert f"--mcp-config={path}" in launch.argv and "--mcp-config" not in launch.argv
    assert json.loads(launch.files[path]) == {
        "mcpServers": {"gitliza": {"type": "stdio", **SERVER}}}
    assert launch.mcp_config == path


def test_codex_gets_the_server_as_config_overrides_pre_approved(tmp_path: Path) -> None:
    launch = plan("codex", tmp_path, mcp=True)
    c = codex_overrides(launch.argv)
    assert c["mcp_servers.gitliza.command"] == SERVER["command"]
    assert c["mcp_servers.gitliza.args"] == SERVER["args"]
    assert c["mcp_servers.gitliza.env"] == SERVER["env"]
    assert c["mcp_servers.gitliza.default_tools_approval_mode"] == "approve"
    own = codex_overrides(plan("codex", tmp_path, P.OWN, mcp=True).argv)
    assert "mcp_servers.gitliza.default_tools_approval_mode" not in own
    # Waited for before the first turn in every posture: tool_search indexes only the servers
    # connected when the turn starts.
    assert c["mcp_servers.gitliza.required"] is True and own["mcp_servers.gitliza.required"]
    assert c["mcp_servers.gitliza.startup_timeout_sec"] == 60
    assert tomllib.loads(launch.files[launch.mcp_config])["mcp_servers"]["gitliza"] == SERVER


@pytest.mark.parametrize("argv0, fmt", [("/opt/bin/codex", "toml"), ("vibe", "toml"),
                                        ("gemini", "json"), ("my-agent", "json")])
def test_a_plain_commands_mcp_config_is_in_the_format_of_the_cli_it_names(
        argv0: str, fmt: str, tmp_path: Path) -> None:
    launch = agentcli.plan(agentcli.PLAIN, P.WORKTREE, ctx(tmp_path, mcp=True), (argv0, "exec"))
    assert launch.mcp_config is not None and launch.mcp_config.suffix == "." + fmt
    text = launch.files[launch.mcp_config]
    data = tomllib.loads(text) if fmt == "toml" else json.loads(text)
    if argv0 == "vibe":
        assert data["mcp_servers"][0]["name"] == "gitliza"
    elif fmt == "toml":
        assert data["mcp_servers"]["gitliza"]["args"] == SERVER["args"]
    else:
        assert data["mcpServers"]["gitliza"]["args"] == SERVER["args"]


def test_mcp_config_for_cli_knows_mistral_as_vibe(tmp_path: Path) -> None:
    assert mcp_config.for_cli("mistral", tmp_path, "c1")[0] == ".vibe/config.toml"


# -- `git liza` that survives a login shell --------------------------------------------------------
def test_the_git_alias_extends_an_existing_config_list() -> None:
    env = planning.git_alias_env({"GIT_CONFIG_COUNT": "2"}, ("/p y/python", "-m", "gitliza"),
                                 (("user.name", "Ann"),))
    assert env == {"GIT_CONFIG_COUNT": "4", "GIT_CONFIG_KEY_2": "alias.liza",
                   "GIT_CONFIG_VALUE_2": "!'/p y/python' -m gitliza",
                   "GIT_CONFIG_KEY_3": "user.name", "GIT_CONFIG_VALUE_3": "Ann"}


def test_the_committer_identity_reaches_git_even_without_the_global_config(
        repo: Path, tmp_path: Path) -> None:
    """Gemini's shell runs git with GIT_CONFIG_GLOBAL=/dev/null: the identity of the
    repository's config (here: the user's ~/.gitconfig) travels in the GIT_CONFIG list."""
    import pygit2
    from gitliza.team import prepare
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Ann Global\n\temail = ann@x.invalid\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_AUTHOR", "GIT_COMM"))}
    ok(liza(repo, "init", "Build hello", agent=None))
    level = pygit2.enums.ConfigLevel.GLOBAL
    old = pygit2.settings.search_path[level]
    pygit2.settings.search_path[level] = str(home)  # libgit2's ~/.gitconfig
    try:
        launch = prepare.launch(agentcli.profile("gemini"), P.WORKTREE, cwd=repo, main=repo,
                                run_dir=tmp_path / "run", agent="coder-1",
                                prompt_file=tmp_path / "p", prompt="x", env=env)
    finally:
        pygit2.settings.search_path[level] = old
    (repo / "f.txt").write_text("f\n")
    gemini_like = {**launch.env, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["add", "f.txt"], ["commit", "-q", "-m", "f"]):
        r = subprocess.run(["git", *args], cwd=repo, env=gemini_like, capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stderr
    author = subprocess.run(["git", "log", "-1", "--format=%an <%ae>"], cwd=repo,
                            capture_output=True, text=True).stdout.strip()
    assert author == "Ann Global <ann@x.invalid>"


def test_git_liza_works_in_a_login_shell_that_resets_path(repo: Path) -> None:
    """Codex runs commands with `bash -lc`: the profile resets PATH (a venv's git-liza is gone);
    the alias in the environment still finds gitliza."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_CONFIG", "LIZA_"))}
    env["PATH"] = "/usr/bin:/bin"
    env.update(planning.git_alias_env(env, (sys.executable, "-m", "gitliza")))
    ok(liza(repo, "init", "Build hello", agent=None))
    r = subprocess.run(["bash", "-lc", "export PATH=/usr/bin:/bin; git liza status --json"],
                       cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["goal"]["description"] == "Build hello"


# -- role words and role-scoped tools --------------------------------------------------------------
def test_a_supervised_agent_has_no_tool_its_supervisor_does_for_it() -> None:
    for role in (Role.PLANNER, Role.CODER, Role.CODE_REVIEWER):
        names = {t.name for t in tools.tools_for(role, supervised=True)}
        assert not names & tools.SUPERVISOR_TOOLS
    assert {"claim", "heartbeat"} <= {t.name for t in tools.tools_for(Role.CODER)}
    with pytest.raises(PermissionDenied, match="supervisor"):
        tools.call(object(), Role.CODER, "claim", {}, supervised=True)


@pytest.mark.parametrize("word", ["code-reviewer", "code_reviewer", "reviewer"])
def test_register_and_mcp_take_every_role_word(word: str, repo: Path) -> None:
    ok(liza(repo, "init", "Build hello", agent=None))
    ok(liza(repo, "register", "r1", "--role", word, agent=None))
    assert json.loads(ok(liza(repo, "status", "--json", agent=None)))["agents"][0]["role"] == \
        "code_reviewer"
    from gitliza.services.api import Liza
    board = Liza.open(repo, "r1").board()
    assert tools.resolve_role(board, "r1", word) is Role.CODE_REVIEWER
    bad = liza(repo, "register", "r2", "--role", "boss", agent=None)
    assert bad.returncode == 1


# -- the supervisor launches what the profile says -------------------------------------------------
FAKE_CLAUDE = """#!/bin/sh
# Stands in for the executable only to record what the supervisor hands it; the real CLIs run in
# tests/agentcli/.
out="$FAKE_OUT"
printf '%s\\n' "$@" > "$out/argv"
cat > "$out/stdin"
env > "$out/env"
PATH=/usr/bin:/bin git liza status --json > "$out/status" 2> "$out/status.err"
exit 0
"""


@pytest.mark.slow
def test_the_supervisor_runs_the_profile_prompt_on_stdin_config_beside_the_prompts(
        repo: Path, tmp_path: Path) -> None:
    from tests.team.procs import add_task, env_for, make_board
    make_board(repo)
    add_task(repo, "t1")
    bin_dir, out = tmp_path / "bin", tmp_path / "out"
    bin_dir.mkdir()
    out.mkdir()
    (bin_dir / "claude").write_text(FAKE_CLAUDE)
    (bin_dir / "claude").chmod(0o755)
    env = dict(env_for("coder-1"), FAKE_OUT=str(out))
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    r = subprocess.run([sys.executable, "-m", "gitliza", "agent", "coder", "--cli", "claude",
                        "--mcp", "--once"], cwd=repo, env=env, capture_output=True, text=True,
                       timeout=120)
    # The stand-in makes no progress, which `--once` reports with exit 1 (docs/agents.md).
    assert r.returncode == 1 and "no progress" in r.stdout, r.stdout + r.stderr
    argv = (out / "argv").read_text().splitlines()
    prompts = repo / ".liza" / "agent-prompts"
    # The usage capture's flags (gitliza/team/usage.py) after the headless words, then the
    # profile's posture.
    assert argv[:6] == ["-p", "--output-format", "stream-json", "--verbose", "--permission-mode",
                        "acceptEdits"]
    assert f"--mcp-config={prompts / 'coder-1-mcp.json'}" in argv
    prompt = next(prompts.glob("coder-1-*.txt")).read_text()
    assert (out / "stdin").read_text() == prompt and "TASK ID: t1" in prompt
    assert not any("TASK ID" in a for a in argv)
    server = json.loads((prompts / "coder-1-mcp.json").read_text())["mcpServers"]["gitliza"]
    assert server["args"][-2:] == ["--role", "coder"] and server["env"]["LIZA_SUPERVISOR_GEN"]
    # `git liza` worked with PATH reset (the alias in the environment), as the agent.
    assert json.loads((out / "status").read_text())["tasks"][0]["status"] == "CLAIMED", \
        (out / "status.err").read_text()
    assert not (repo / ".worktrees" / "t1" / ".mcp.json").exists()  # nothing in the worktree


# -- Codex's sandbox, measured with the real codex ------------------------------------------------
def _home() -> Path:
    import pwd
    return Path(pwd.getpwuid(os.getuid()).pw_dir)  # tests run with HOME set to a temp dir


def _codex() -> str | None:
    import glob
    import shutil
    found = shutil.which("codex")
    cache = os.environ.get("GITLIZA_AGENT_CLIS", str(_home() / ".cache/gitliza-agent-clis"))
    return found or next(iter(sorted(glob.glob(f"{cache}/codex-*/node_modules/.bin/codex"),
                                     reverse=True)), None)


def test_codex_workspace_write_commits_in_a_task_worktree_with_the_profiles_roots(
        tmp_path: Path) -> None:
    """workspace-write alone keeps a worktree's git dir read-only (no commit); the roots the
    profile adds make the commit and a ref update work and leave hooks read-only."""
    codex = _codex()
    if codex is None:
        pytest.skip("codex not installed (npm @openai/codex; tests/agentcli installs it)")
    from gitliza.git.repository import common_dir, open_repository
    # Outside /tmp: codex's workspace-write makes /tmp writable, which would hide the result.
    home = _home() / ".cache" / "gitliza-test-codex"
    home.mkdir(parents=True, exist_ok=True)
    import tempfile
    base = Path(tempfile.mkdtemp(dir=home))
    try:
        main = base / "main"
        main.mkdir()
        for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "x"],
                     ["worktree", "add", "-q", str(base / "wt"), "-b", "liza/t1"]):
            subprocess.run(["git", *args], cwd=main, check=True, capture_output=True)
        (main / ".liza").mkdir()
        wt = base / "wt"
        repo = open_repository(wt)
        c = agentcli.Context(cwd=wt, git_dir=Path(repo.path).resolve(),
                             common_dir=common_dir(repo), liza_dir=main / ".liza",
                             run_dir=main / ".liza", agent="coder-1", prompt_file=wt / "p",
                             prompt="", gitliza=("true",))
        roots = planning.writable_git_roots(c)
        ok(liza(main, "init", "Build hello", agent=None))
        # gitliza itself in the sandbox: codex mounts an empty read-only `.git` (another
        # filesystem) into each writable root, the worktree's git dir included, where libgit2
        # stops looking when opened by that git dir (repository.open_repository opens the worktree).
        script = ("echo hi > f.txt && git add f.txt && git commit -qm y && echo COMMITTED; "
                  "git update-ref refs/liza/x HEAD && echo REF; "
                  f"{sys.executable} -m gitliza status --json > /dev/null && echo GITLIZA; "
                  f"touch {common_dir(repo)}/hooks/evil && echo HOOKS")

        def run(*extra: str) -> str:
            r = subprocess.run([codex, "sandbox", "-c", 'sandbox_mode="workspace-write"', *extra,
                                "--", "bash", "-c", script], cwd=wt, capture_output=True,
                               text=True, timeout=120, env={**os.environ, "HOME": str(_home())})
            if "sandbox" in r.stderr.lower() and "panicked" in r.stderr:
                pytest.skip(f"codex's sandbox does not run here: {r.stderr.splitlines()[0]}")
            return r.stdout
        without = run()
        assert "COMMITTED" not in without  # the problem the roots solve
        with_roots = run("-c", "sandbox_workspace_write.writable_roots=" + json.dumps(roots))
        assert "COMMITTED" in with_roots and "REF" in with_roots and "GITLIZA" in with_roots
        assert "HOOKS" not in with_roots
    finally:
        import shutil
        shutil.rmtree(base, ignore_errors=True)



def test_codex_with_its_home_under_tmp_gets_a_tmpdir_of_its_own(tmp_path: Path) -> None:
    """Codex refuses to make its `codex-linux-sandbox` helper when its home is under the
    temporary directory, and with a system bubblewrap every command then fails ("bwrap: execvp
    codex-linux-sandbox"): the profile gives it a TMPDIR of its own there, and only there. Run
    for real with the installed codex when there is one."""
    tmp_home = tmp_path / "home"  # under /tmp, as pytest's dirs are
    launch = plan("codex", tmp_path, base_env={"HOME": str(tmp_home)})
    mine = Path(launch.env["TMPDIR"])
    assert mine == tmp_path / "repo" / ".liza" / "agent-prompts" / "coder-1-tmp"
    assert mine / "README" in launch.files
    for env in ({"HOME": "/home/u"}, {"HOME": str(tmp_home), "TMPDIR": "/var/tmp/x"},
                {"HOME": str(tmp_home), "CODEX_HOME": "/srv/codex"}):
        assert "TMPDIR" not in plan("codex", tmp_path, base_env=env).env or \
            plan("codex", tmp_path, base_env=env).env["TMPDIR"] == env.get("TMPDIR"), env
    assert "TMPDIR" not in plan("codex", tmp_path, contained=True,
                                base_env={"HOME": str(tmp_home)}).env
    codex = _codex()
    if codex is None or shutil.which("bwrap") is None:
        return
    tmp_home.mkdir()
    mine.mkdir(parents=True)
    work = tmp_path / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)

    def run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run([codex, "sandbox", "-c", 'sandbox_mode="workspace-write"', "--",
                               "echo", "RAN-IN-CODEX-SANDBOX"], cwd=work, capture_output=True,
                              text=True, timeout=120, env={**os.environ, **env})
    before = run({"HOME": str(tmp_home)})  # the failure the TMPDIR avoids
    assert "RAN-IN-CODEX-SANDBOX" not in before.stdout
    assert "codex-linux-sandbox" in before.stderr, before.stderr
    after = run({"HOME": str(tmp_home), "TMPDIR": str(mine)})
    assert "RAN-IN-CODEX-SANDBOX" in after.stdout, after.stderr


def test_a_bad_permissions_word_is_refused_before_the_board_changes(repo: Path) -> None:
    from tests.team.procs import add_task, make_board
    from tests.conftest import git
    make_board(repo)
    add_task(repo, "t1")
    before = git(repo, "rev-parse", "refs/liza/state")
    for args in (["agent", "coder", "--permissions", "yolo", "--", "true"],
                 ["team", "--permissions", "yolo", "--", "true"]):
        r = liza(repo, *args, agent="coder-1")
        assert r.returncode == 1 and "--permissions must be one of" in r.stderr, r.stderr
    assert git(repo, "rev-parse", "refs/liza/state") == before


def test_git_liza_team_passes_the_permissions_to_every_supervisor() -> None:
    from gitliza.agentcli.base import Permissions
    from gitliza.team.launch import TeamOptions, members, supervisor_argv
    for m in members(1, 1, 1):
        argv = supervisor_argv(m, TeamOptions(cli="codex", mcp=True,
                                              permissions=Permissions("bypass")))
        assert argv[-5:] == ["--cli", "codex", "--mcp", "--permissions", "bypass"]


def test_gemini_settings_leave_a_world_writable_tree_for_a_private_dir(tmp_path: Path) -> None:
    """Gemini 0.61 skips a system settings file when any directory above it is group or world
    writable ("Parent directory '/tmp' is insecure"): a repository under /tmp gets its gemini
    settings in a private directory of the user's cache instead."""
    from gitliza.team import prepare
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    run_dir = shared / "repo" / ".liza" / "agent-prompts"
    private = prepare._private_dir(run_dir, shared / "repo")
    assert private is not None and not prepare._insecure(private.parent.parent.parent)
    assert prepare._private_dir(_home() / ".cache", _home()) is None  # a safe tree stays put
    launch = agentcli.plan(agentcli.profile("gemini"), P.WORKTREE,
                           ctx(tmp_path, mcp=True, private_dir=private))
    assert Path(launch.env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"]).parent == private
