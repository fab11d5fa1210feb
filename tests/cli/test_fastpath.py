"""The CLI's fast path (gitliza/cli/fastpath.py) makes exactly the call typer would make, falls back to
typer for everything else, and rebuilds its spec by itself when a module of cli/app/ changes."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import typer

from gitliza.cli import app as cli, caches, fastbuild, fastpath
from gitliza.cli.app import entry

GIT_LIZA = str(Path(sys.executable).parent / "git-liza")


@pytest.fixture(scope="module")
def spec() -> fastpath.Spec:
    return fastbuild.build(typer.main.get_command(cli.app), fastbuild.sources())


def _sample(p: dict[str, Any], i: int) -> list[str]:
    value = {"str": f"v{i}", "int": str(i + 2), "path": f"some/file{i}.toml"}.get(p["type"], "")
    if p["kind"] == "argument":
        return [value]
    if p["flag"]:
        return [p["opts"][0]]
    if p["multiple"]:
        return [p["opts"][0], value, f"{p['opts'][0]}={value}b"]
    return [f"{p['opts'][-1]}={value}" if i % 2 else p["opts"][-1], value][: 1 if i % 2 else 2]


def _argvs(path: str, cmd: dict[str, Any]) -> list[list[str]]:
    """Minimal (required only) and full (every parameter given) command lines."""
    words = path.split()
    required = [p for p in cmd["params"] if p["required"]]
    minimal = [a for i, p in enumerate(required) for a in _sample(p, i)]
    full_opts = [a for i, p in enumerate(cmd["params"]) if p["kind"] == "option"
                 for a in _sample(p, i)]
    args = [a for i, p in enumerate(cmd["params"]) if p["kind"] == "argument"
            for a in _sample(p, i)]
    return [words + minimal, words + args + full_opts, words + full_opts + ["--"] + args]


def _typer_call(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    seen: list[Any] = []

    def fake_run(fn: Any, *a: Any, **kw: Any) -> None:
        seen.append((fn, list(a), kw))
    for group in (*cli.GROUPS, entry):  # each group module calls the `_run` it imported
        monkeypatch.setattr(group, "_run", fake_run)
    cli._typer_main(argv)
    assert len(seen) == 1, argv
    return seen[0]


def test_common_commands_are_fast(spec: fastpath.Spec) -> None:
    # One or more of each group module of cli/app/: the spec reads every module of the folder.
    for name in ("add", "heartbeat", "status", "claim", "submit", "init", "log", "show",
                 "hooks install", "completion", "watch", "sync", "pause", "events"):
        assert spec["commands"][name]["fast"], name
    assert not spec["commands"]["hook-impl"]["fast"]  # a custom body: typer runs it


def test_fast_path_makes_typers_call(spec: fastpath.Spec, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fastpath, "load", lambda: spec)
    monkeypatch.setenv("LIZA_AGENT_ID", "env-agent")
    checked = 0
    for path, cmd in spec["commands"].items():
        if not cmd["fast"]:
            continue
        for argv in _argvs(path, cmd):
            fast = fastpath.plan(argv)
            assert fast is not None, argv
            fn, args, kw = _typer_call(argv, monkeypatch)
            assert (fast[0], fast[1], fast[2]) == (fn, args, kw), argv
            checked += 1
    assert checked > 60


@pytest.mark.parametrize("argv", [
    ["verdict"],                              # missing arguments (add has none required now)
    ["add", "t", "--desc"],                   # option without its value
    ["add", "t", "--desc", "d", "--nope"],    # unknown option
    ["add", "t", "u", "--desc", "d"],         # one argument too many
    ["add", "t", "--desc", "d", "--priority", "high"],  # not an int
    ["log", "-n2"],                           # a short option with its value attached
    ["hook-impl", "pre-commit"],              # not a plain `_run` body
    ["no-such-command"],
    ["hooks"],
])
def test_what_typer_must_answer_falls_back(spec: fastpath.Spec, monkeypatch: pytest.MonkeyPatch,
                                           argv: list[str]) -> None:
    monkeypatch.setattr(fastpath, "load", lambda: spec)
    assert fastpath.plan(argv) is None


def test_completion_requests_go_to_typer(spec: fastpath.Spec,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fastpath, "load", lambda: spec)
    monkeypatch.setenv("_GIT_LIZA_COMPLETE", "complete_bash")
    assert fastpath.plan(["status"]) is None


def test_a_new_command_in_the_usual_style_is_fast_without_registration(tmp_path: Path) -> None:
    source = textwrap.dedent('''
        from typing import Optional
        import typer
        app = typer.Typer()

        def _run(fn, agent=None, json=False, no_sync=False, **kw): ...

        def _board():
            from gitliza.cli.commands import board
            return board

        @app.command("brand-new")
        def brand_new(task: str, why: Optional[str] = typer.Option(None, "--why"),
                      agent: Optional[str] = typer.Option(None, "--agent"),
                      json: bool = typer.Option(False, "--json")) -> None:
            """A command added later, written like the others."""
            _run(_board().simple, agent, json, op="finalize", task=task, note=why)

        @app.command()
        def odd(task: str) -> None:
            print(task.upper())
    ''')
    (tmp_path / "newcli.py").write_text(source)
    sys.path.insert(0, str(tmp_path))
    try:
        import newcli  # type: ignore[import-not-found]
        built = fastbuild.build(typer.main.get_command(newcli.app), {"newcli": source})
    finally:
        sys.path.remove(str(tmp_path))
    cmd = built["commands"]["brand-new"]
    assert cmd["fast"] and cmd["target"] == ["gitliza.cli.commands.board", "simple"]
    assert cmd["kwargs"] == {"op": ["const", "finalize"], "task": ["param", "task"],
                             "note": ["param", "why"]}
    assert not built["commands"]["odd"]["fast"]


def test_spec_is_rebuilt_when_cli_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "app"
    shutil.copytree(Path(cli.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(fastpath, "_CLI", str(copy))
    monkeypatch.setattr(caches, "cache_dirs", lambda: [str(tmp_path / "cache")])
    assert fastpath.load() is None

    def fresh() -> None:
        caches.write_cache("cli-spec", {"key": fastpath.spec_key(), "commands": {}})
        assert fastpath.load() is not None
    fresh()
    group = copy / "planboard.py"
    group.write_text(group.read_text() + "\n# a new command\n")
    assert fastpath.load() is None  # stale: the next typer start rebuilds it
    fresh()
    (copy / "newgroup.py").write_text("# a new group of commands\n")
    assert fastpath.load() is None  # a new module of the folder: stale too


def test_a_loader_name_with_two_targets_is_refused() -> None:
    """Two modules of cli/app/ defining `_x()` loaders of different modules would make one of
    them run the other's function on the fast path: the build refuses it."""
    def loader(target: str) -> str:
        return f"def _board():\n    from gitliza.cli.commands import {target}\n    return {target}\n"
    with pytest.raises(ValueError, match="_board"):
        fastbuild.build(typer.main.get_command(cli.app), {"a": loader("board"), "b": loader("view")})


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    e = dict(os.environ, **(env or {}))
    return subprocess.run([GIT_LIZA, *args], cwd=cwd, capture_output=True, text=True, env=e,
                          timeout=60)


def _typer_only(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    code = f"import sys; from gitliza.cli.app import main; sys.exit(main({list(args)!r}))"
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True,
                          timeout=60)


def test_help_and_version_match_typers(tmp_path: Path) -> None:
    _cli("--version", cwd=tmp_path)  # any start refreshes the spec if needed
    for args in (["--help"], ["add", "--help"], ["hooks", "install", "-h"], ["help", "claim"],
                 ["--version"]):
        fast, slow = _cli(*args, cwd=tmp_path, env={"COLUMNS": "100"}), _typer_only(*args,
                                                                                    cwd=tmp_path)
        assert fast.returncode == slow.returncode == 0, (args, fast.stderr, slow.stderr)
        assert fast.stdout == slow.stdout, args
    assert _cli("--version", cwd=tmp_path).stdout.startswith("git-liza version ")
    bad = _cli("help", "no-such", cwd=tmp_path)
    assert bad.returncode == 1 and "no such command" in bad.stderr


def test_usage_errors_exit_1_from_either_path(repo: Path) -> None:
    r = _cli("add", "t", "--desc", "d", "--nope", cwd=repo)
    assert r.returncode == 1 and "--nope" in r.stderr


def test_bash_completion_lists_commands_and_options(repo: Path) -> None:
    env = {"_GIT_LIZA_COMPLETE": "complete_bash", "COMP_WORDS": "git-liza cl", "COMP_CWORD": "1"}
    r = _cli(cwd=repo, env=env)
    assert set(r.stdout.split()) >= {"claim", "claim-review"}, r.stderr
    env = {"_GIT_LIZA_COMPLETE": "complete_bash", "COMP_WORDS": "git-liza add t --de",
           "COMP_CWORD": "3"}
    assert "--desc" in _cli(cwd=repo, env=env).stdout.split()


def test_bash_script_plugs_into_gits_completion(repo: Path) -> None:
    script = _cli("completion", "bash", cwd=repo).stdout
    driver = script + textwrap.dedent('''
        words=(git liza cla); cword=2
        _git_liza
        printf '%s\\n' "${COMPREPLY[@]}"
    ''')
    r = subprocess.run(["bash", "-c", driver], cwd=repo, capture_output=True, text=True,
                       env=dict(os.environ, PATH=f"{Path(GIT_LIZA).parent}:{os.environ['PATH']}"),
                       timeout=60)
    assert set(r.stdout.split()) == {"claim", "claim-review"}, r.stderr
    for shell in ("zsh", "fish"):
        assert "git-liza" in _cli("completion", shell, cwd=repo).stdout
    assert _cli("completion", "tcsh", cwd=repo).returncode == 1


def test_classcache_compiles_a_class_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import dataclasses
    import types

    from gitliza.cli import classcache
    monkeypatch.setattr(caches, "cache_dirs", lambda: [str(tmp_path)])
    for name, empty in (("_modules", {}), ("_used", {}), ("_dirty", set())):
        monkeypatch.setattr(classcache, name, empty)
    monkeypatch.setattr(dataclasses, "exec", classcache._exec, raising=False)
    src = textwrap.dedent('''
        from dataclasses import dataclass
        @dataclass(frozen=True)
        class P:
            x: int
            y: str = "a"
    ''')

    def define() -> Any:
        module = types.ModuleType("gitliza.cachetest")
        monkeypatch.setitem(sys.modules, module.__name__, module)
        exec(src, module.__dict__)
        return module.P
    define()
    assert classcache._dirty == {"gitliza.cachetest"}
    classcache.save()
    monkeypatch.setattr(classcache, "_modules", {})  # a new process: the file is all there is
    compiled: list[Any] = []
    monkeypatch.setattr(classcache, "compile",
                        lambda *a, **k: compiled.append(a) or compile(*a, **k),
                        raising=False)
    P = define()
    assert compiled == [] and not classcache._dirty
    assert P(1) == P(1) and P(1) != P(2) and hash(P(1)) == hash(P(1))
    assert repr(P(1)) == "P(x=1, y='a')"
    # One file for the module, its code kept as code objects; a value that is not code (a
    # damaged file) is compiled again, never run.
    import marshal
    [kept] = tmp_path.glob("dataclass-v3.gitliza.cachetest.*")
    saved = marshal.loads(kept.read_bytes())
    assert saved["code"] and all(type(c) is types.CodeType for c in saved["code"].values())
    kept.write_bytes(marshal.dumps({"code": {k: b"junk" for k in saved["code"]}, "recipes": 7}))
    monkeypatch.setattr(classcache, "_modules", {})
    P = define()
    assert len(compiled) == len(saved["code"]) and repr(P(2, "b")) == "P(x=2, y='b')"
    with pytest.raises(dataclasses.FrozenInstanceError):
        P(1).x = 2  # type: ignore[misc]


# -- the end of a CLI process -----------------------------------------------------------------
# The entry point ends the process without the interpreter's teardown (gitliza/__main__.py); what
# teardown does that matters must still happen.

def _board(repo: Path, tasks: int) -> None:
    from gitliza.services.api import Liza
    from gitliza.core.ops import Add, Init
    h = Liza.open(repo, "human")
    h.do(Init, goal="g")
    for i in range(tasks):
        h.do(Add, task=f"task-{i}", description="d" * 40)


def test_output_is_complete_and_atexit_work_is_done_before_the_quick_exit(repo: Path,
                                                                          tmp_path: Path) -> None:
    _board(repo, 300)  # ~20 KB of `status`: more than one stdout buffer
    out = tmp_path / "status.txt"
    with out.open("w") as f:
        r = subprocess.run([GIT_LIZA, "status"], cwd=repo, stdout=f, stderr=subprocess.PIPE,
                           text=True, timeout=60)
    assert r.returncode == 0 and r.stderr == ""
    rows = [line.split()[0] for line in out.read_text().splitlines() if line.startswith("task-")]
    assert sorted(rows) == sorted(f"task-{i}" for i in range(300))
    # atexit handlers run: the class cache, removed after a first start (which saves the CLI spec
    # too, so that the second start takes the fast path), is written again by the quick exit.
    cache = tmp_path / "cache"
    code = ("import gitliza.cli.caches as c, sys; d = sys.argv.pop(1); c.cache_dirs = lambda: [d]; "
            "from gitliza.__main__ import main; main()")
    for start in ("first", "second"):
        for p in cache.glob("dataclass-*"):
            p.unlink()
        r = subprocess.run([sys.executable, "-c", code, str(cache), "status"], cwd=repo,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, (start, r.stderr)
        assert (cache / caches.cache_name("cli-spec")).exists()
        assert (cache / caches.cache_name("dataclass-v3.gitliza.core.model")).exists(), start


def test_a_reader_that_goes_away_ends_the_command_quietly(repo: Path) -> None:
    _board(repo, 3)
    # The reader closes the pipe before the command writes (`| head` once it has its lines; a
    # plain `| head` may also let a short output fit in the pipe and end normally).
    r = subprocess.run(f"'{GIT_LIZA}' status | (exec 0<&-; sleep 1); "
                       "echo \"status=${PIPESTATUS[0]}\"",
                       shell=True, executable="bash", cwd=repo, capture_output=True, text=True,
                       timeout=60)
    assert r.stdout.splitlines()[-1] == "status=141"  # as git's own commands end (SIGPIPE)
    assert "error" not in r.stderr, r.stderr


def test_the_collector_is_held_while_a_command_loads_and_runs_again_for_the_command(
        repo: Path) -> None:
    """cli/gcpause.py: a CLI process starts with the cyclic collector held (pygit2's and
    gitliza's imports: no garbage to find), and the command itself runs with it on, the loaded
    modules frozen out of its sight; a command run in process (the tests, a library caller) finds
    the collector as its caller left it."""
    _board(repo, 3)
    code = textwrap.dedent("""
        import gc, sys
        from gitliza.cli import fastpath
        target = fastpath._target
        def spy(cmd, values):
            loading = gc.isenabled()  # while the command's modules are imported
            fn, args, kw = target(cmd, values)
            def run(env, **k):
                print(loading, gc.isenabled(), gc.get_freeze_count() > 10_000, flush=True)
                return fn(env, **k)
            return run, args, kw
        fastpath._target = spy
        sys.argv = ["git-liza", "status"]
        from gitliza.__main__ import main
        main()
    """)
    r = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "False True True"  # held, then on, imports frozen
    import gc
    from gitliza.__main__ import main
    frozen = gc.get_freeze_count()
    cwd = os.getcwd()
    try:
        os.chdir(repo)
        assert main(["status"]) == 0
    finally:
        os.chdir(cwd)
    assert gc.isenabled() and gc.get_freeze_count() == frozen  # in process: left as it was
