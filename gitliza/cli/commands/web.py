"""`git liza web`: the live web board (gitliza/web/, docs/web.md). Its modules (and Starlette) are
imported only here, when the command runs."""
from __future__ import annotations

from gitliza.cli.commands import Env
from gitliza.core.states import HUMAN_ACTOR


def web(env: Env, port: int | None, host: str, open_browser: bool, read_only: bool) -> int:
    """Serves until a signal; then exits 128 + its number (130 after SIGINT, as `team` does),
    and through git without git's "waitpid for git-liza failed" (team/stopping.py)."""
    import signal
    import sys

    from gitliza.team import stopping
    from gitliza.web.server import serve
    stopping.inherited_ignored()  # before uvicorn's handlers replace what the process started with

    def open_liza() -> object:
        # The human's seat: every action is the human's transition, whatever LIZA_AGENT_ID says.
        return Env(path=env.path, agent=HUMAN_ACTOR, no_sync=env.no_sync).liza()
    from gitliza.services.sync import follower  # the clone's remote follower: a candidate

    def say(text: str) -> None:
        sys.stderr.write(f"web: {text}\n")
    remote = follower.start_for(env.liza(), say)
    try:
        sig = serve(open_liza, host, port, open_browser=open_browser, read_only=read_only)
    except KeyboardInterrupt:  # uvicorn re-raises the SIGINT it shut down for
        sig = signal.SIGINT
    finally:
        if remote is not None:
            remote.stop()
    if sig is None:
        return 0
    stopping.nudge_git_parent(sig)
    return 128 + int(sig)
