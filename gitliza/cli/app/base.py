"""The root of the command line: the typer app and its sub-groups, the options every command
shares, `_run` (an Env built, the command's function called, its exit code raised) and the lazy
loaders of the command modules (gitliza/cli/commands/) that several groups call.

A command is a thin wrapper: it imports its implementation lazily (so that a command pays only
for what it uses) and returns that function's exit code. fastbuild.py reads these loaders and the
`_run(_loader().fn, ...)` calls of every module of this folder to build the fast path's spec.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

import typer

from gitliza.cli.commands import Env

# Plain click help (rich_markup_mode=None): the same text on a terminal and in a pipe, which the
# fast path can serve from its cache; `git liza --help` shows the man page (gitliza/cli/manpage.py).
app = typer.Typer(
    name="git liza", add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
    rich_markup_mode=None, help="gitliza: the Liza multi-agent blackboard on refs/liza/state.",
    context_settings={"help_option_names": ["-h", "--help"]})
hooks_app = typer.Typer(help="Install or remove the git hook shims.", no_args_is_help=True,
                        rich_markup_mode=None)
app.add_typer(hooks_app, name="hooks")
usage_app = typer.Typer(help="What the team's agent runs used and cost; an agent's own report.",
                        invoke_without_command=True, rich_markup_mode=None)
app.add_typer(usage_app, name="usage")
forge_app = typer.Typer(help="The forge bridge: a pull request per task, checks and reviews back.",
                        no_args_is_help=True, rich_markup_mode=None)
app.add_typer(forge_app, name="forge")


def _version(value: bool) -> None:
    if value:
        from gitliza import __version__
        sys.stdout.write(f"git-liza version {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", is_eager=True, callback=_version,
                                       help="Print the version and exit.")) -> None:
    """gitliza: the Liza multi-agent blackboard on refs/liza/state."""

AgentOpt = typer.Option(None, "--agent", envvar="LIZA_AGENT_ID", show_envvar=True,
                        help="Acting agent id (default: $LIZA_AGENT_ID, else 'human').")
JsonOpt = typer.Option(False, "--json", help="Print one JSON document.")
AtOpt = typer.Option(None, "--at", help="Read the board at this revision of refs/liza/state.")
NoSyncOpt = typer.Option(False, "--no-sync", help="Do not push to the configured sync remote.")


def _run(fn: Callable[..., int], agent: str | None = None, json: bool = False,
         no_sync: bool = False, **kw: Any) -> None:
    env = Env(path=Path.cwd(), agent=agent, json=json, no_sync=no_sync)
    code = fn(env, **kw)
    if code:
        raise typer.Exit(code)


def _board() -> Any:
    from gitliza.cli.commands import board
    return board


def _view() -> Any:
    from gitliza.cli.commands import view
    return view


def _life() -> Any:
    from gitliza.cli.commands import lifecycle
    return lifecycle


def _trust() -> Any:
    from gitliza.cli.commands import trust
    return trust


def _keys() -> Any:
    from gitliza.cli.commands import keys
    return keys


def _sync() -> Any:
    from gitliza.cli.commands import sync
    return sync
