"""`python -m gitliza ...`: the command line, with a short way in for the hook shims.

`hook-impl` is dispatched here, before the CLI is imported, so that a hook does not pay for the CLI's
imports on every commit and ref update, and so that the hooks work even where the CLI does not.
"""
from __future__ import annotations

import importlib
import sys

from gitliza.errors import EXIT_DEPENDENCY


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    from gitliza import classcache, clifast

    if args[:1] == ["hook-impl"]:
        classcache.install()
        from gitliza.hookimpl import main as hook_main

        return hook_main(args[1:])
    code = clifast.guarded(lambda: clifast.run(args))
    if code is not None:  # run from the cached spec, without importing typer
        return int(code)
    classcache.install()
    try:
        cli = importlib.import_module("gitliza.cli")
    except ModuleNotFoundError as err:
        missing = err.name or "gitliza.cli"
        print(
            f"gitliza: cannot load the command line: module {missing} is missing "
            "(reinstall gitliza; 'python -m gitliza hook-impl' works without it)",
            file=sys.stderr,
        )
        return EXIT_DEPENDENCY
    if argv is not None:
        sys.argv = [sys.argv[0], *argv]  # the CLI reads its arguments from sys.argv
    result = cli.main()
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
