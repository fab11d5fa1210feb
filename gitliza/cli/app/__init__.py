"""`git liza ...`: the command line, the one folder that imports typer (tests/test_architecture.py).

One module per group of commands, in the order `git liza --help` lists them: planning.py (the
board and the planner's ops), work.py (the coder's and the reviewer's), looking.py (status, show,
log, usage ...), oversight.py (watch, analyze, checkpoint, import, export), plumbing.py (hooks,
forge, sync), supervising.py (agent, team, wait, pause ...), frontends.py (mcp, events, top, web);
base.py holds the app, the shared options and `_run`; entry.py `main`, `help` and `completion`.
The code behind each command lives in gitliza/cli/commands/. The fast path's spec is built from
this folder's sources and keyed by its files (gitliza/cli/fastpath.py, fastbuild.py).
"""
from __future__ import annotations

# Importing a group registers its commands on the app: the order here is the order of `--help`.
from gitliza.cli.app import planning, work, looking, oversight, plumbing, supervising, frontends
from gitliza.cli.app.base import app
from gitliza.cli.app.entry import COMPLETE_VAR, _typer_main, click_group, main

GROUPS = (planning, work, looking, oversight, plumbing, supervising, frontends)
__all__ = ["COMPLETE_VAR", "GROUPS", "_typer_main", "app", "click_group", "main"]
