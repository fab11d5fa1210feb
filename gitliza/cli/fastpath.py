"""The command line's fast path: run a command from a cached spec of the typer app, without
importing typer.

typer stays the one definition of the CLI (gitliza/cli/app/). Importing typer and building its click
command costs more per start than gitliza's own work for most commands, so the spec that
typer builds is saved once (`build`, called by the typer path whenever the saved one is stale) and
read here by a small parser. The spec is keyed by the name, size and mtime of every module of
gitliza/cli/app/, so a new or changed command (or a new group module) needs no registration step:
the next start sees a stale key and rebuilds it.

Only what the parser understands for sure is run here: a command whose body is the usual single
`_run(_module().fn, ...)` call, options and arguments of the plain types (str, int, path, flags,
repeatable options). Anything else (`--help` of a command that is not cached, a usage error, an
unknown option, a shell-completion request) returns None, and the caller hands the arguments to
typer, which gives the full answer. What runs here is thus what typer would run, with the same
values: tests/cli/test_fastpath.py checks that call for call against typer's own parsing.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Sequence

from gitliza.cli.caches import read_cache

CACHE_FORMAT = 1
_CLI = os.path.join(os.path.dirname(os.path.abspath(__file__)), "app")
# `--cli`'s help lists the agent CLIs the registry finds in this folder (app/supervising.py's
# CLI_HELP): a module added there or changed makes the saved spec stale as app/'s own change does.
_AGENTCLI = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "agentcli")

Spec = dict[str, Any]


def _modules(folder: str) -> tuple[tuple[str, int, int], ...]:
    """Each module of `folder`: its name, size and mtime (what a change of the folder changes)."""
    with os.scandir(folder) as found:
        return tuple(sorted((e.name, e.stat().st_size, e.stat().st_mtime_ns) for e in found
                            if e.name.endswith(".py")))


def spec_key() -> tuple[Any, ...]:
    return (CACHE_FORMAT, _CLI, _modules(_CLI), sys.version, _modules(_AGENTCLI))


def load() -> Spec | None:
    """The saved spec if it was built from this gitliza/cli/app/, else None."""
    try:
        key = spec_key()
    except OSError:
        return None
    spec = read_cache("cli-spec")
    if not isinstance(spec, dict) or spec.get("key") != key:
        return None
    return spec


# -- running --------------------------------------------------------------------------------------
class _Fallback(Exception):
    """Not for the fast path: typer answers."""


def run(args: list[str]) -> int | None:
    """Run `git liza ARGS` from the spec; None when typer must (stale spec, help, usage error)."""
    found = plan(args)
    if found is None or isinstance(found, int):
        return found
    fn, run_args, kw = found
    from gitliza.cli.commands import Env
    agent, json, no_sync = (run_args + [None, False, False][len(run_args):])[:3]
    env = Env(path=_cwd(), agent=agent, json=json, no_sync=no_sync)
    from gitliza.cli import gcpause
    gcpause.release()  # loaded: the collector runs again while the command does (gcpause.py)
    code: int = fn(env, **kw)
    return code or 0


def plan(args: list[str]) -> Any:
    """What running ARGS means: an exit code when it is already answered (--version, help), the
    call `(fn, [agent, json, no_sync], kwargs)` that app/shared.py's `_run` would make, or None (typer)."""
    if "_GIT_LIZA_COMPLETE" in os.environ:
        return None  # a shell-completion request: typer's machinery answers
    spec = load()
    if spec is None:
        return None
    if not args:  # `git liza` alone asks what there is: the usage, exit 0 (as `git` does)
        return _print(spec, "")
    if args == ["--version"]:
        sys.stdout.write(spec["version"] + "\n")
        return 0
    try:
        path, cmd, rest = _find(spec, args)
        if cmd is None:  # a group, then -h/--help
            return _print(spec, path)
        if any(a in ("-h", "--help") for a in _before_dashdash(rest)):
            return _print(spec, path)
        if path == "help":
            return _help(spec, rest)
        values = _parse(cmd, rest)
    except _Fallback:
        return None
    return _target(cmd, values)


def _find(spec: Spec, args: list[str]) -> tuple[str, Spec | None, list[str]]:
    path = ""
    i = 0
    while i < len(args):
        word = args[i]
        if word in ("-h", "--help") and i == len(args) - 1:
            return path, None, []
        candidate = f"{path} {word}".strip()
        if candidate in spec["groups"]:
            path, i = candidate, i + 1
            continue
        if candidate in spec["commands"]:
            return candidate, spec["commands"][candidate], args[i + 1:]
        break
    raise _Fallback


def _before_dashdash(args: list[str]) -> list[str]:
    return args[: args.index("--")] if "--" in args else args


def _columns() -> int:
    """click's help width: $COLUMNS, else the terminal's, else 80."""
    try:
        return int(os.environ.get("COLUMNS") or os.get_terminal_size(sys.__stdout__.fileno())[0]
                   if sys.__stdout__ is not None else 80)
    except (OSError, ValueError, AttributeError):
        return 80


def _print(spec: Spec, path: str) -> int:
    text = spec["help"].get(path)
    if text is None or _columns() < 80:  # narrower terminals: click wraps differently
        raise _Fallback
    sys.stdout.write(text + "\n")
    return 0


def _help(spec: Spec, rest: list[str]) -> int:
    """`git liza help [COMMAND...]`: the help of that command (of the CLI without one)."""
    return _print(spec, " ".join(rest))


def _parse(cmd: Spec, args: list[str]) -> dict[str, Any]:
    """Click's parsing for the plain cases; anything it would treat specially is a fallback."""
    if not cmd["fast"]:
        raise _Fallback
    by_opt = {o: p for p in cmd["params"] if p["kind"] == "option"
              for o in p["opts"] + p["secondary"]}
    positional = [p for p in cmd["params"] if p["kind"] == "argument"]
    given: dict[str, Any] = {}
    values: list[str] = []
    i, dashdash = 0, False
    while i < len(args):
        a = args[i]
        i += 1
        if dashdash or a == "-" or not a.startswith("-"):
            values.append(a)
            continue
        if a == "--":
            dashdash = True
            continue
        name, eq, explicit = a.partition("=") if a.startswith("--") else (a, "", "")
        p = by_opt.get(name)
        if p is None:
            raise _Fallback  # unknown, a cluster (-n2) or a prefix: typer says what is wrong
        if p["flag"]:
            if eq:
                raise _Fallback
            given[p["name"]] = name in p["opts"]  # --x sets, --no-x clears
            continue
        if eq:
            raw = explicit
        elif i < len(args):
            raw, i = args[i], i + 1
        else:
            raise _Fallback
        value = _convert(p, raw)
        if p["multiple"]:
            given.setdefault(p["name"], []).append(value)
        else:
            given[p["name"]] = value
    if len(values) > len(positional):
        raise _Fallback
    for p, raw in zip(positional, values):
        given[p["name"]] = _convert(p, raw)
    out: dict[str, Any] = {}
    for p in cmd["params"]:
        if p["name"] in given:
            out[p["name"]] = given[p["name"]]
            continue
        env = os.environ.get(p["envvar"]) if p["envvar"] else None
        if env:
            out[p["name"]] = _convert(p, env)
        elif p["required"]:
            raise _Fallback
        else:
            default = p["default"]
            out[p["name"]] = list(default) if p["multiple"] else default
    return out


def _convert(p: Spec, raw: str) -> Any:
    t = p["type"]
    if t == "str":
        return raw
    if t == "int":
        try:
            return int(raw)
        except ValueError:
            raise _Fallback from None
    if t == "path":
        from pathlib import Path
        return Path(raw)
    raise _Fallback


def _target(cmd: Spec, values: dict[str, Any]) -> tuple[Any, list[Any], dict[str, Any]]:
    import importlib

    from gitliza.cli import classcache
    classcache.install()  # before the command's modules create their dataclasses

    def arg(ref: list[Any]) -> Any:
        return values[ref[1]] if ref[0] == "param" else ref[1]

    module, fname = cmd["target"]
    fn = getattr(importlib.import_module(module), fname)
    return fn, [arg(r) for r in cmd["args"]], {k: arg(r) for k, r in cmd["kwargs"].items()}


def _cwd() -> Any:
    from pathlib import Path
    return Path.cwd()


def _json_error(code: str, exit_code: int, message: str) -> None:
    """With --json, a failure is a JSON document on stdout too (the line on stderr stays), so
    that a program reading stdout gets the error code, not nothing."""
    import json
    try:
        sys.stdout.write(json.dumps({"error": {"code": code, "exit_code": exit_code,
                                               "message": message}}) + "\n")
    except (OSError, ValueError):
        pass


def guarded(body: Any, args: Sequence[str] = ()) -> Any:
    """Run `body()` as the CLI runs a command: every LizaError becomes one stderr line and its exit
    code; usage errors exit 1 (not click's 2, which the spec reserves for a concurrency conflict);
    anything unexpected is still one line and an exit code. With `--json` in `args`, the error is
    also a JSON document on stdout. Shared by the fast path and typer's."""
    try:
        return _guarded(body)
    except _Failed as f:
        code, exit_code, message = f.args
        own = list(args)[:list(args).index("--")] if "--" in args else args
        from gitliza.cli import output
        if "--json" in own and not output.json_written:  # ours, not an agent command's
            _json_error(code, exit_code, message)
        return exit_code


def _no_board_here(e: Exception) -> Any:
    """"No board here" in a clone whose remote holds one: the hint is `git liza pull`, never
    `init` (which would start a second, unrelated board). Asked only on this error's path."""
    from gitliza.errors import NoBoard
    if not isinstance(e, NoBoard):
        return e
    from gitliza.services.sync.remote import remote_board
    from pathlib import Path
    found = remote_board(Path.cwd())
    if found is None:
        return e
    remote, oid = found
    return NoBoard(e.message, hint=f"{remote} holds a board ({oid[:12]}): `git liza pull` fetches "
                                   "it; `git liza init` would start a second, unrelated one")


class _Failed(Exception):
    """(error code, exit code, message) of a failure already reported on stderr."""


def _guarded(body: Any) -> Any:
    from gitliza.errors import EXIT_BROKEN_PIPE, LizaError, classify
    from gitliza.cli.output import err
    try:
        return body()
    except BrokenPipeError:
        # What was committed stays committed (the output comes after the write); only the
        # report is lost. Point stdout at /dev/null so that the final flush cannot fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_BROKEN_PIPE
    except Exception as e:
        if isinstance(e, LizaError):
            e = _no_board_here(e)
        failure = classify(e)  # errors.py decides; the CLI only prints
        if failure.bug and os.environ.get("LIZA_DEBUG"):
            raise
        err(failure.line)
        raise _Failed(failure.code, failure.exit_code, failure.line) from None
