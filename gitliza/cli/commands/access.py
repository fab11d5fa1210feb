"""Access commands: `mcp` (the board as an MCP server), `events` (the transitions as a stream),
`top` (a live view). The work is in gitliza/access/ and gitliza/governance/top.py."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from gitliza.cli.commands import Env
from gitliza.core.terminal import safe_line
from gitliza.errors import EXIT_INTERRUPTED


def mcp(env: Env, role: str | None, repo: Path | None) -> int:
    from gitliza.access import mcp as server
    return server.serve(repo or env.path, env.agent, role)


def events(env: Env, since: str | None, follow: bool) -> int:
    """One line (JSON object with --json) per state commit, flushed as it comes."""
    from gitliza.access import events as ev
    liza = env.liza()
    if since is None:  # from the start: a clone that joined at a seal starts at its boundary
        from gitliza.git.remotes import shallow
        cut = shallow.note(liza.store.repo, liza.store.tip())
        if cut is not None:
            env.out.notice(cut)
    try:
        for e in ev.events(liza, since, follow):
            sys.stdout.write((json.dumps(e, default=str) if env.json else safe_line(ev.line(e))) + "\n")
            sys.stdout.flush()
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `git liza events | head`: the reader is done, so are we
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def top(env: Env, once: bool, width: int | None) -> int:
    from gitliza.governance import top as view
    liza = env.liza()
    if once or not sys.stdout.isatty():
        sys.stdout.write(view.frame_text(view.snapshot(liza), liza.now(), width or 100))
        return 0
    try:
        view.run(liza)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return 0
