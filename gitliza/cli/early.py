"""What the entry point does for a command before importing anything heavy: `git liza agent`,
`git liza team` and a long-lived `git liza watch` catch SIGINT/SIGTERM at once
(gitliza/team/stopping.py), so that a stop during start-up is a clean stop, not a
KeyboardInterrupt traceback from the middle of an import."""
from __future__ import annotations

STOPPABLE = ("agent", "team")


def prepare(args: list[str]) -> None:
    if args[:1] and (args[0] in STOPPABLE or args[0] == "watch" and "--once" not in args):
        from gitliza.team import stopping
        stopping.for_process()
