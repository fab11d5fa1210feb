"""Opening a board for a front end (a command, the MCP server): the `Liza` of a repository with the
after-commit hooks its git config asks for, auto-sync (gitliza/services/autosync.py) and the
materialized view (gitliza/services/views/materialize.py).

Both hooks are imported only when configured: a repository without a sync remote (or a --no-sync
command) never pays for importing the sync engine and the transport, nor one without
`liza.materialize` for ruamel.yaml.
"""
from __future__ import annotations

import os
from typing import Any

from gitliza.services.api import Liza


def open_liza(path: str | os.PathLike[str], agent: str | None, *, sync: bool = True) -> Liza:
    liza = Liza.open(path, agent, sync=sync)  # no agent: LIZA_AGENT_ID, else the human (Liza)
    _install_after_commit(liza)
    _install_materialize(liza)
    return liza


def _install_after_commit(liza: Liza) -> None:
    """Auto-sync (a configured remote) hooks in here, see gitliza/services/autosync.py."""
    # Checked with pygit2's config reader first, so that a repository without a sync remote
    # (or a --no-sync command) never pays for importing the sync engine and the transport.
    if liza.sync_remote() is None:
        return
    from gitliza.services.autosync import after_commit
    liza.after_commit.append(after_commit)


def _install_materialize(liza: Liza) -> None:
    """`git config liza.materialize true`: refresh .liza/*.yaml after every commit (installed after
    auto-sync, so it sees the replayed tip). Without the setting this is one config lookup: the
    materializer (and ruamel.yaml) are never imported."""
    if not materialize_on(liza.repo):
        return
    from gitliza.services.views.materialize import after_commit
    liza.after_commit.append(after_commit)


def materialize_on(repo: Any) -> bool:
    """`git config liza.materialize true` (one config lookup)."""
    try:
        cfg = repo.config
        return "liza.materialize" in cfg and bool(cfg.get_bool("liza.materialize"))
    except Exception:  # unreadable or not a boolean: off rather than a failing command
        return False
