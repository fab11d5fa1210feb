"""`git liza web`: the live web board (gitliza/web/, docs/web.md). Its modules (and Starlette) are
imported only here, when the command runs."""
from __future__ import annotations

from gitliza.cli.commands import Env
from gitliza.core.states import HUMAN_ACTOR


def web(env: Env, port: int | None, host: str, open_browser: bool, read_only: bool) -> int:
    from gitliza.web.server import serve

    def open_liza() -> object:
        # The human's seat: every action is the human's transition, whatever LIZA_AGENT_ID says.
        return Env(path=env.path, agent=HUMAN_ACTOR, no_sync=env.no_sync).liza()
    try:
        return serve(open_liza, host, port, open_browser=open_browser, read_only=read_only)
    except KeyboardInterrupt:
        return 0
