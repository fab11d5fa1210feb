"""`python -m gitliza ...`: the command line, with a short way in for the hook shims.

`hook-impl` is dispatched here, before the CLI is imported, so that a hook does not pay for the CLI's
imports on every commit and ref update, and so that the hooks work even where the CLI does not.
"""
from __future__ import annotations

import importlib
import os
import sys

from gitliza.errors import EXIT_BROKEN_PIPE, EXIT_DEPENDENCY, EXIT_GIT


def main(argv: list[str] | None = None) -> int:
    """The process entry point (`argv` None: the console script, `python -m gitliza`) exits at
    once when the command is done; called with `argv` (in-process, tests) it returns the code."""
    if argv is not None:
        return _main(argv, argv)
    from gitliza.cli import gcpause
    if sys.argv[1:2] != ["hook-impl"]:  # a hook's collector is left as it is (verify's own)
        gcpause.hold()  # no collections while the command's modules load: cli/gcpause.py
    try:
        from gitliza.cli import early
        early.prepare(sys.argv[1:])  # before the imports: a stop during start-up stays clean
    except KeyboardInterrupt:  # Ctrl-C before the stop was in place: nothing started yet
        early_interrupt()
    return _exit_now(_main(sys.argv[1:], None))


def early_interrupt() -> None:
    """End as killed by SIGINT (what a shell expects of a program it interrupted), without a
    traceback of the import the signal fell into."""
    import signal
    sys.stderr.write("gitliza: interrupted while starting\n")
    sys.stderr.flush()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)
    os._exit(130)  # not reached: SIGINT ends the process


def _exit_now(code: int) -> int:
    """End the process without the interpreter's teardown (~10 to 15 ms of a ~100 ms CLI start:
    deallocating every module and object, which the kernel frees anyway). What teardown does that
    matters is done first: stdout and stderr flushed, atexit handlers run (gitliza's caches,
    tempfile finalizers). With a thread still running (a supervisor, a server), the normal exit
    joins it: returned as is."""
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        return code
    import atexit

    try:
        if sys.stdout is not None:  # None: started with stdout closed
            sys.stdout.flush()
    except BrokenPipeError:
        code = code or EXIT_BROKEN_PIPE
    except OSError as e:  # a full disk under `> file`: the output is incomplete, say so
        if sys.stderr is not None:
            sys.stderr.write(f"gitliza: error: cannot write the output: {e}\n")
        code = code or EXIT_GIT
    except ValueError:  # stdout closed by the command itself
        pass
    try:
        if sys.stderr is not None:
            sys.stderr.flush()
    except (OSError, ValueError):
        pass
    atexit._run_exitfuncs()
    os._exit(code)


def _main(args: list[str], argv: list[str] | None) -> int:
    from gitliza.cli import classcache, fastpath

    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:  # started with it closed: what is written goes nowhere,
            setattr(sys, name, open(os.devnull, "w"))  # as git does it (it reopens them)

    if args[:1] == ["hook-impl"]:
        classcache.install()
        from gitliza.hooks.dispatch import main as hook_main

        return hook_main(args[1:])
    code = fastpath.guarded(lambda: fastpath.run(args), args)
    if code is not None:  # run from the cached spec, without importing typer
        return int(code)
    classcache.install()
    try:
        cli = importlib.import_module("gitliza.cli.app")
    except ModuleNotFoundError as err:
        missing = err.name or "gitliza.cli.app"
        print(
            f"gitliza: cannot load the command line: module {missing} is missing "
            "(reinstall gitliza; 'python -m gitliza hook-impl' works without it)",
            file=sys.stderr,
        )
        return EXIT_DEPENDENCY
    if argv is not None:
        sys.argv = [sys.argv[0], *argv]  # the CLI reads its arguments from sys.argv
    from gitliza.cli import gcpause
    gcpause.release()
    result = cli.main()
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
