"""The entry point through typer: `main`, the `help` and `completion` commands, and the lean app
a one-shot process builds for the one command it runs.

Every LizaError becomes one line on stderr and its exit code (gitliza/cli/fastpath.py `guarded`,
around `main`); usage errors exit 1 (not click's 2, which the spec reserves for a concurrency
conflict). This module is imported last (gitliza/cli/app/__init__.py), after every group has
registered its commands: `help` and `completion` end the command list.
"""
from __future__ import annotations

import os
import sys
from typing import Any, List, Optional

import typer

from gitliza.cli.app.base import _run, app


@app.command("help")
def help_cmd(command: Optional[List[str]] = typer.Argument(None, metavar="[COMMAND]...")) -> None:
    """Show the help of COMMAND (of git liza without one)."""
    from gitliza.errors import ValidationError
    group: Any = typer.main.get_command(app)
    ctx: Any = group.context_class(group, info_name="git liza", **group.context_settings)
    cmd: Any = group
    for word in command or []:
        sub = cmd.commands.get(word) if hasattr(cmd, "commands") else None
        if sub is None:
            raise ValidationError(f"no such command: {' '.join(command or [])!r} "
                                  "(git liza help lists the commands)")
        ctx = sub.context_class(sub, info_name=word, parent=ctx, **sub.context_settings)
        cmd = sub
    typer.echo(cmd.get_help(ctx))


@app.command()
def completion(shell: str = typer.Argument(..., metavar="bash|zsh|fish")) -> None:
    """Print the shell completion script for `git liza` (see docs/conventions.md)."""
    from gitliza.cli import completion as c
    _run(c.script, None, False, shell=shell)


def _lean_app(args: list[str]) -> typer.Typer:
    """An app holding only the command being run: typer inspects every command's signature when
    it builds the click group, which a one-shot CLI process should not pay for."""
    name = args[0] if args else None
    infos = [c for c in app.registered_commands
             if name and (c.name or (c.callback.__name__ if c.callback else "")) == name]
    if not infos:
        return app  # help, groups (hooks ...), typos: the full app gives the full answer
    lean = typer.Typer(name=app.info.name, add_completion=False, pretty_exceptions_enable=False,
                       rich_markup_mode=None, context_settings={"help_option_names": ["-h", "--help"]})
    lean.registered_commands = infos
    # A second (hidden) command keeps typer from collapsing the group into the lone command.
    lean.command("-", hidden=True)(lambda: None)
    return lean


def click_group() -> Any:
    """The whole CLI as the click group typer builds (for the man page and the fast path's spec)."""
    return typer.main.get_command(app)


def _refresh_spec() -> None:
    """Save the spec the fast path (gitliza/cli/fastpath.py) runs commands from when a module of
    this folder changed since it was saved: once per change, never a step to remember."""
    from gitliza.cli import caches, fastbuild, fastpath
    if fastpath.load() is not None:
        return
    try:
        spec = fastbuild.build(click_group(), fastbuild.sources())
    except Exception:  # the cache only saves time: a failure to build it must not fail a command
        if os.environ.get("LIZA_DEBUG"):
            raise
        return
    caches.write_cache("cli-spec", spec)


COMPLETE_VAR = "_GIT_LIZA_COMPLETE"  # what gitliza/cli/completion.py's scripts set


def _typer_main(args: list[str]) -> int:
    from gitliza.errors import EXIT_VALIDATION
    from gitliza.cli.output import err
    _refresh_spec()
    if COMPLETE_VAR in os.environ:  # typer registers its shell classes only with add_completion
        from typer._completion_classes import completion_init
        completion_init()
    if not args:  # `git liza` alone: the usage on stdout, exit 0, never an "error:" line
        args = ["-h"]
    try:
        command = typer.main.get_command(_lean_app(args))
        code = command.main(args=args, prog_name="git liza", standalone_mode=False,
                            complete_var=COMPLETE_VAR)
        return code if isinstance(code, int) else 0
    except typer.Exit as e:
        return e.exit_code
    except typer.Abort:
        err("aborted")
        return EXIT_VALIDATION


def main(argv: list[str] | None = None) -> int:
    """Entry point of `git-liza` / `gitliza` through typer (gitliza/__main__.py tries the fast path
    first). Returns (and exits with) the exit code."""
    from gitliza.cli.fastpath import guarded
    args = sys.argv[1:] if argv is None else argv
    code: int = guarded(lambda: _typer_main(args), args)
    if argv is None:
        sys.exit(code)
    return code
