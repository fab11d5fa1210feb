"""Adding an agent CLI is adding one module to gitliza/agentcli/ (CONTRIBUTING.md "A new agent
CLI"): a stand-in fifth CLI, written as a contributor would write it, is put beside the four (a
module in a directory added to the package's path, so the source tree is not touched), and the
team's launch, the MCP configuration, the usage stream, the sandbox (login copy, home variable,
network allow-list) and the agent log's transcript line all pick it up, with no other change; a
real supervisor runs it end to end in the sandbox. And no module outside the folder names one of
the CLIs, so nothing else would need the fifth's name."""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

import gitliza.agentcli
from gitliza import agentcli
from gitliza.agentcli import registry
from gitliza.agentcli.base import Permissions, Profile
from gitliza.access import mcp_config
from gitliza.core.states import Role
from gitliza.errors import ValidationError
from gitliza.sandbox import box, net
from gitliza.services import agentlog
from gitliza.team import prepare, usage
from tests.cli.test_board import liza, ok
from tests.team.procs import Sup, add_task, make_board, task_of

ROOT = Path(__file__).resolve().parents[2]

# The whole of the fifth CLI: its launch (headless words, a permission posture, its MCP file on
# its command line), its JSON-lines usage, its login and home variable, its API host, its base-URL
# variable and configured endpoints, its transcript.
FIFTH = '''"""Fifth: a stand-in agent CLI (tests/agentcli/test_fifth_cli.py)."""
from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Mapping, Sequence

from gitliza.agentcli import base as b
from gitliza.agentcli.base import Context, Launch, Permissions, Profile, Prompt


def _mcp_data(entry: Mapping[str, Any], _cwd: str) -> dict[str, Any]:
    return {"servers": {b.SERVER_NAME: dict(entry)}}


def _wire(launch: Launch, perms: Permissions, ctx: Context, _cmd: Sequence[str]) -> Launch:
    if ctx.mcp is None:
        return launch
    path = b.run_file(ctx, "fifth-mcp.json")
    return Launch([*launch.argv, "--mcp", str(path)], launch.env, launch.stdin,
                  {**launch.files, path: b.render(".json", _mcp_data(ctx.mcp, str(ctx.cwd)))},
                  path)


class FifthStream(b.Stream):
    def line(self, e: dict[str, Any]) -> str | None:
        if e.get("type") == "usage":
            self.counted.at_least(b.count(e.get("in")), b.count(e.get("out")), 0)
            return f"[fifth] {e.get('in')} in"
        return str(e["text"]) if e.get("type") == "say" else None


def _urls(text: str) -> list[str]:
    return [str(u) for u in tomllib.loads(text).get("endpoints", [])]


def _transcript(env: Mapping[str, str], home: str, _cwd: Path) -> str:
    return os.path.join(env.get("FIFTH_HOME") or os.path.join(home, ".fifth"), "runs", "<id>")


PROFILE = Profile(
    "fifth", "fifth-agent", ("run",), Prompt.STDIN, wire=_wire,
    postures={Permissions.WORKTREE: ("--edits", "worktree")},
    mcp_file=".fifth/mcp.json", mcp_data=_mcp_data,
    stream=FifthStream, stream_flags=("--jsonl",),
    state=(".fifth/login",), home_env=("FIFTH_HOME", ".fifth"),
    hosts=("api.fifth.example:443",), base_url_env=("FIFTH_BASE_URL",),
    config_file=".fifth/config.toml", config_urls=_urls, transcript=_transcript)
'''


def add_fifth(where: Path) -> Path:
    """The fifth CLI's module in a directory of its own (as if in gitliza/agentcli/)."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "fifth.py").write_text(FIFTH)
    return where


@pytest.fixture
def fifth(tmp_path: Path) -> Iterator[Profile]:
    ext = str(add_fifth(tmp_path / "ext"))
    gitliza.agentcli.__path__.append(ext)
    registry.profiles.cache_clear()
    try:
        yield agentcli.profile("fifth")
    finally:
        gitliza.agentcli.__path__.remove(ext)
        registry.profiles.cache_clear()
        sys.modules.pop("gitliza.agentcli.fifth", None)


def test_the_registry_finds_it_and_forgets_it_with_its_module(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="one of claude, codex, gemini, mistral, got"):
        agentcli.profile("fifth")
    ext = str(add_fifth(tmp_path / "ext"))
    gitliza.agentcli.__path__.append(ext)
    registry.profiles.cache_clear()
    try:
        assert list(agentcli.profiles()) == ["claude", "codex", "fifth", "gemini", "mistral"]
        assert agentcli.profile("FIFTH").executable == "fifth-agent"
        assert agentcli.for_command("/opt/fifth/bin/fifth-agent") is agentcli.profile("fifth")
        assert "fifth" in agentcli.choices().split(" | ")
    finally:
        gitliza.agentcli.__path__.remove(ext)
        registry.profiles.cache_clear()
        sys.modules.pop("gitliza.agentcli.fifth", None)
    assert agentcli.find("fifth") is None


def test_every_cli_answers_to_its_own_names_only() -> None:
    """`--cli`, a `-- COMMAND`'s executable and the sandbox find a profile by name, alias or
    executable: two modules claiming one of them would shadow each other."""
    names = [n for p in agentcli.profiles().values() for n in (p.name, *p.aliases)]
    exes = [p.executable for p in agentcli.profiles().values()]
    assert len(names) == len(set(names)) and len(exes) == len(set(exes))
    for p in agentcli.profiles().values():
        assert agentcli.find(p.name) is p and agentcli.for_command(f"/x/{p.executable}") is p
        assert all(agentcli.find(a) is p for a in p.aliases)


def test_the_team_launches_it_with_its_words_and_its_mcp_file(
        fifth: Profile, repo: Path, tmp_path: Path) -> None:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("You are a Liza coder agent.\n")
    server = mcp_config.server(repo, "coder-1", "coder", python="/py")
    launch = prepare.launch(fifth, Permissions.WORKTREE, cwd=repo, main=repo,
                            run_dir=tmp_path / "run", agent="coder-1", prompt_file=prompt,
                            prompt=prompt.read_text(), env={"HOME": str(tmp_path)},
                            mcp=server, role=Role.CODER)
    mcp = tmp_path / "run" / "coder-1-fifth-mcp.json"
    assert launch.argv == ["fifth-agent", "run", "--edits", "worktree", "--mcp", str(mcp)]
    assert launch.stdin == prompt and launch.mcp_config == mcp
    assert json.loads(mcp.read_text())["servers"]["gitliza"]["args"] == server["args"]
    # `--model` goes through its (default) model words; `bypass` has no posture: no words.
    model = agentcli.plan(agentcli.with_model(fifth, "m-1"), Permissions.BYPASS, _ctx(tmp_path))
    assert model.argv == ["fifth-agent", "run", "--model", "m-1"]
    # A `-- fifth-agent ...` command gets its MCP configuration in the fifth's format.
    plain = agentcli.plan(agentcli.PLAIN, Permissions.WORKTREE, _ctx(tmp_path, server),
                          ("/opt/bin/fifth-agent", "run"))
    assert plain.mcp_config is not None
    assert "servers" in json.loads(plain.files[plain.mcp_config])


def _ctx(tmp: Path, mcp: dict[str, object] | None = None) -> agentcli.Context:
    return agentcli.Context(cwd=tmp, git_dir=tmp / ".git", common_dir=tmp / ".git",
                            liza_dir=tmp / ".liza", run_dir=tmp / "run", agent="coder-1",
                            prompt_file=tmp / "p", prompt="x", gitliza=("gitliza",), mcp=mcp)


def test_a_person_gets_its_mcp_configuration(fifth: Profile, tmp_path: Path) -> None:
    name, text = mcp_config.for_cli("fifth", tmp_path, "coder-1", "coder", python="/py")
    assert name == ".fifth/mcp.json"
    assert json.loads(text)["servers"]["gitliza"]["env"] == {"LIZA_AGENT_ID": "coder-1"}


def test_its_usage_stream_is_read_and_counted(fifth: Profile, tmp_path: Path) -> None:
    m = usage.Meter.start(tmp_path, "coder-1.1.1", "fifth", False)
    assert m.argv(["/bin/fifth-agent", "run", "--edits", "worktree"], "fifth-agent", ("run",)) \
        == ["/bin/fifth-agent", "run", "--jsonl", "--edits", "worktree"]
    log = (tmp_path / "run.log").open("wb")
    w = m.output(log)
    assert w is not None and w is not log
    w.write(b'{"type": "say", "text": "On it."}\nnot json\n'
            b'{"type": "usage", "in": 1200, "out": 34}\n')
    w.close()
    got, reports, bad = m.finish()
    assert (got.input, got.output, bad, reports) == (1200, 34, 0, [])
    assert (tmp_path / "run.log").read_text() == "On it.\nnot json\n[fifth] 1200 in\n"


def test_the_sandbox_copies_its_login_and_allows_its_hosts(fifth: Profile, tmp_path: Path) -> None:
    user, home, moved = tmp_path / "user", tmp_path / "agent-home", tmp_path / "moved"
    for d in (user / ".fifth", home, moved):
        d.mkdir(parents=True)
    (user / ".fifth" / "login").write_text("LOGIN")
    (moved / "login").write_text("MOVED")
    box._copy_login("fifth", user, home, {})
    assert (home / ".fifth" / "login").read_text() == "LOGIN"
    box._copy_login("fifth", user, home, {"FIFTH_HOME": str(moved)})
    assert (home / ".fifth" / "login").read_text() == "MOVED"
    assert box.cli_home_env("fifth") == ("FIFTH_HOME", ".fifth")
    (user / ".fifth" / "config.toml").write_text('endpoints = ["https://eu.fifth.example/v1"]\n')
    allow = net.allowed("fifth", {"FIFTH_BASE_URL": "http://127.0.0.1:8123/v1"},
                        net.config_urls("fifth", user))
    assert allow == {("api.fifth.example", 443), ("127.0.0.1", 8123), ("eu.fifth.example", 443)}
    # Its host is its own; its base-URL variable names an endpoint whichever CLI reads it.
    assert net.allowed("claude", {"FIFTH_BASE_URL": "http://127.0.0.1:8123/v1"}) == \
        {("api.anthropic.com", 443), ("127.0.0.1", 8123)}


def test_its_transcript_is_named_in_the_agent_log(fifth: Profile, tmp_path: Path) -> None:
    assert agentlog.transcript(["/opt/bin/fifth-agent", "run"], {"HOME": "/h"}, tmp_path) == \
        "/h/.fifth/runs/<id>"
    assert agentlog.transcript(["fifth-agent"], {"HOME": "/h", "FIFTH_HOME": "/f"}, tmp_path) == \
        "/f/runs/<id>"


def test_the_cached_command_table_goes_stale_with_a_new_cli(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--cli`'s help lists the registry's CLIs and the fast path keeps the help it was built
    with: a module added to (or changed in) the folder makes that spec stale, as a change of
    cli/app/ does."""
    import shutil

    from gitliza.cli import fastpath
    folder = tmp_path / "agentcli"
    shutil.copytree(ROOT / "gitliza" / "agentcli", folder)
    monkeypatch.setattr(fastpath, "_AGENTCLI", str(folder))
    before = fastpath.spec_key()
    assert fastpath.spec_key() == before
    add_fifth(folder)
    added = fastpath.spec_key()
    assert added != before
    (folder / "fifth.py").write_text(FIFTH.replace('"fifth-agent"', '"fifth-cli"'))
    assert fastpath.spec_key() != added


# -- end to end: `git liza agent coder --cli fifth --mcp --sandbox on` --------------------------
AGENT = """#!/bin/sh
set -e
test "$*" = "run --jsonl --edits worktree --mcp $LIZA_MCP_CONFIG"
echo "MCP FILE $(test -r "$LIZA_MCP_CONFIG" && echo readable)"
echo "LOGIN $(cat "$HOME/.fifth/login")"
echo '{"type": "say", "text": "Implementing."}'
echo "$LIZA_TASK_ID" > "$LIZA_TASK_ID.txt"
git add "$LIZA_TASK_ID.txt"
git commit -q -m "implement $LIZA_TASK_ID"
git liza submit "$LIZA_TASK_ID" > /dev/null
echo '{"type": "usage", "in": 4321, "out": 65}'
"""


def _bwrap() -> str | None:
    from gitliza.errors import MissingDependency
    from gitliza.sandbox import bwrap
    try:
        bwrap.require()
    except MissingDependency as e:
        return str(e)
    return None


@pytest.mark.slow
def test_a_supervisor_runs_it_in_the_sandbox_and_records_its_usage(
        repo: Path, tmp_path: Path) -> None:
    why = _bwrap()
    if why is not None:
        pytest.skip(f"no agent sandbox here: {why}")
    # The supervisor is another process: a sitecustomize adds the fifth's directory to the
    # package's path there, as the fixture does here.
    ext = add_fifth(tmp_path / "ext")
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        f"import gitliza.agentcli\ngitliza.agentcli.__path__.append({str(ext)!r})\n")
    bindir = tmp_path / "tools" / "fifth" / "bin"
    bindir.mkdir(parents=True)
    (bindir / "fifth-agent").write_text(AGENT)
    (bindir / "fifth-agent").chmod(0o755)
    (Path(os.environ["HOME"]) / ".fifth").mkdir()
    (Path(os.environ["HOME"]) / ".fifth" / "login").write_text("from-the-user's-home")
    make_board(repo)
    add_task(repo, "t1")
    sup = Sup(repo, "coder", "coder-1", "--once", "--cli", "fifth", "--mcp", "--sandbox", "on",
              env={"PYTHONPATH": str(site), "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"})
    assert sup.wait(120) == 0, sup.output()
    assert "usage of run coder-1.1.1: 4,321 in, 65 out" in sup.output(), sup.output()
    assert task_of(repo, "t1")["status"] == "READY_FOR_REVIEW"
    log = "".join(p.read_text() for p in (repo / ".liza" / "agent-logs").glob("coder-1--*.log"))
    assert "MCP FILE readable" in log and "LOGIN from-the-user's-home" in log, log
    assert "Implementing." in log and "[fifth] 4321 in" in log and '"type"' not in log
    assert "; transcript: " in log.splitlines()[0] and "/.fifth/runs/<id>" in log.splitlines()[0]
    usage_ops = json.loads(ok(liza(repo, "usage", "--json", agent=None)))
    assert "4321" in json.dumps(usage_ops), usage_ops


# -- nothing outside the folder names a CLI ------------------------------------------------------
def _named(tree: ast.AST, words: set[str]) -> list[tuple[int, str]]:
    """String constants (docstrings aside) that are a CLI's name, alias or executable, or hold
    one as a path's or a word's part (`.codex/config.toml`, `[claude]`)."""
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)}
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
            parts = set(n.value.lower().replace(".", " ").replace("/", " ").replace("[", " ")
                        .replace("]", " ").replace("_", " ").split())
            found = parts & words
            if found:
                out.append((n.lineno, sorted(found)[0]))
    return sorted(out)


def test_no_module_outside_agentcli_names_a_cli() -> None:
    words = {w for p in agentcli.profiles().values() for w in (p.name, *p.aliases, p.executable)}
    assert {"claude", "codex", "gemini", "mistral", "vibe"} <= words
    found = []
    for path in sorted((ROOT / "gitliza").rglob("*.py")):
        if "agentcli" in path.relative_to(ROOT / "gitliza").parts:
            continue
        found += [f"{path.relative_to(ROOT)}:{line}: {w}"
                  for line, w in _named(ast.parse(path.read_text("utf-8")), words)]
    assert found == []


def test_the_check_sees_a_cli_named_in_code() -> None:
    words = {"claude", "codex", "vibe"}
    code = ('"""About claude."""\nHOSTS = {"claude": 1}\nF = ".codex/config.toml"\n'
            'def f():\n    """vibe"""\n    return "[vibe] done"\n')
    assert _named(ast.parse(code), words) == [(2, "claude"), (3, "codex"), (6, "vibe")]
