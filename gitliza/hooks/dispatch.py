"""`git liza hook-impl <hook> [args...]`: what the installed hook shims run. This module turns the
hook's name into its handler, reads the hook's stdin once, traces the run and maps any failure (an
unreadable board, a bug) to one line and its exit code through errors.classify.

Kept light on purpose: it runs on every commit, merge, ref update and push in a repository with the
hooks installed, so it imports nothing it does not need (not the CLI, not the installer); pygit2,
the core and the replay engine are imported only by a handler that has something to check.

A handler gets the hook's arguments and its stdin and returns the hook's exit status; non-zero
makes git refuse the operation. Every refusal is one line on stderr. The client hooks
(pre-commit, pre-merge-commit, reference-transaction, pre-push) are in gitliza/hooks/client.py, the
server's pre-receive in gitliza/hooks/server.py, the rules both apply to ref updates in
gitliza/hooks/judge.py. What each hook enforces, and what can bypass it, is in docs/enforcement.md.

GITLIZA_HOOK_TRACE=<file>: append one line per run, `<hook> <args...> stdin=<sha256 of stdin>`, so
that tests (and anyone debugging an installation) can see that git ran the shim and what it passed.
"""
from __future__ import annotations

import os
import sys
from typing import Callable

from gitliza.errors import classify
from gitliza.hooks.client import pre_commit, pre_merge_commit, pre_push, reference_transaction
from gitliza.hooks.server import pre_receive

HookHandler = Callable[[list[str], bytes], int]

# Every hook any released shim may call must stay here, even after the installer stops installing
# it: an old shim left in a hooks dir would otherwise fail with "unknown hook" and block the user.
HOOK_HANDLERS: dict[str, HookHandler] = {
    "pre-commit": pre_commit,
    "pre-merge-commit": pre_merge_commit,
    "reference-transaction": reference_transaction,
    "pre-push": pre_push,
    "pre-receive": pre_receive,
}


def main(args: list[str]) -> int:
    """Run the handler for `args[0]` with the remaining arguments; return the hook's exit status."""
    if not args:
        print("gitliza hook-impl: missing hook name (usage: hook-impl <hook> [args...])",
              file=sys.stderr)
        return 1
    hook, rest = args[0], args[1:]
    handler = HOOK_HANDLERS.get(hook)
    if handler is None:
        print(f"gitliza hook-impl: unknown hook {hook!r} (known: {', '.join(HOOK_HANDLERS)})",
              file=sys.stderr)
        return 1
    stdin = _read_stdin()
    trace = os.environ.get("GITLIZA_HOOK_TRACE")
    if trace:
        import hashlib  # here, not at the top: it loads OpenSSL, and only a traced run needs it

        digest = hashlib.sha256(stdin).hexdigest()
        with open(trace, "a", encoding="utf-8") as f:
            f.write(" ".join([hook, *rest, f"stdin={digest}"]) + "\n")
    try:
        return handler(rest, stdin)
    except Exception as e:
        # A board the hook cannot read (malformed blob, unknown format) is a refusal too, and so is
        # a bug: one line and the exit code errors.classify gives it, as the CLI, MCP and the web
        # board say it; never a Python traceback relayed through git (LIZA_DEBUG=1 shows a bug's).
        failure = classify(e)
        if failure.bug and os.environ.get("LIZA_DEBUG"):
            raise
        from gitliza.core.terminal import safe_line  # board text in it: escaped (git relays it)
        print(f"gitliza {hook}: {safe_line(failure.line)}", file=sys.stderr)
        return failure.exit_code


def _read_stdin() -> bytes:
    # git gives most hooks /dev/null and pipes the update list to the others. A terminal means
    # somebody ran the hook by hand: do not wait for input that is not coming.
    if sys.stdin is None or sys.stdin.isatty():
        return b""
    return sys.stdin.buffer.read()
