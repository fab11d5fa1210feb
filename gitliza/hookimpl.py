"""`git liza hook-impl <hook> [args...]`: what the installed hook shims run.

Kept light on purpose: it runs on every commit, merge, ref update and push in a repository with the
hooks installed, so it imports nothing it does not need (not the CLI, not the installer).

For now every handler accepts. The checks (see DESIGN.md section 5) plug in through HOOK_HANDLERS:
a handler gets the hook's arguments and its stdin (read once, here) and returns the hook's exit
status; non-zero makes git refuse the operation.

GITLIZA_HOOK_TRACE=<file>: append one line per run, `<hook> <args...> stdin=<sha256 of stdin>`, so
that tests (and anyone debugging an installation) can see that git ran the shim and what it passed.
"""
from __future__ import annotations

import hashlib
import os
import sys
from typing import Callable

from gitliza.errors import LizaError

HookHandler = Callable[[list[str], bytes], int]


def _accept(args: list[str], stdin: bytes) -> int:
    return 0


# Every hook any released shim may call must stay here, even after the installer stops installing
# it: an old shim left in a hooks dir would otherwise fail with "unknown hook" and block the user.
HOOK_HANDLERS: dict[str, HookHandler] = {
    "pre-commit": _accept,
    "pre-merge-commit": _accept,
    "reference-transaction": _accept,
    "pre-push": _accept,
    "pre-receive": _accept,
}


def main(args: list[str]) -> int:
    """Run the handler for `args[0]` with the remaining arguments; return the hook's exit status."""
    if not args:
        print("gitliza hook-impl: missing hook name (usage: hook-impl <hook> [args...])", file=sys.stderr)
        return 1
    hook, rest = args[0], args[1:]
    handler = HOOK_HANDLERS.get(hook)
    if handler is None:
        print(f"gitliza hook-impl: unknown hook {hook!r} (known: {', '.join(HOOK_HANDLERS)})", file=sys.stderr)
        return 1
    stdin = _read_stdin()
    trace = os.environ.get("GITLIZA_HOOK_TRACE")
    if trace:
        digest = hashlib.sha256(stdin).hexdigest()
        with open(trace, "a", encoding="utf-8") as f:
            f.write(" ".join([hook, *rest, f"stdin={digest}"]) + "\n")
    try:
        return handler(rest, stdin)
    except LizaError as err:
        print(f"gitliza {hook}: {err}", file=sys.stderr)
        return err.exit_code


def _read_stdin() -> bytes:
    # git gives most hooks /dev/null and pipes the update list to the others. A terminal means
    # somebody ran the hook by hand: do not wait for input that is not coming.
    if sys.stdin is None or sys.stdin.isatty():
        return b""
    return sys.stdin.buffer.read()
