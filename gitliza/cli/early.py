"""What the entry point does for a command before importing anything heavy: `git liza agent` and
`git liza team` catch SIGINT/SIGTERM at once (gitliza/team/stopping.py), so that a stop during
start-up is a clean stop, not a KeyboardInterrupt traceback from the middle of an import."""
from __future__ import annotations

STOPPABLE = ("agent", "team")


def prepare(args: list[str]) -> None:
    if args[:1] and args[0] in STOPPABLE:
        from gitliza.team import stopping
        stopping.for_process()
