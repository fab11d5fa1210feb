"""Command implementations: plain functions `(env, ...) -> exit code`, no typer.

`gitliza/cli/app.py` (the only module that imports typer) parses arguments and calls these; errors are
LizaError subclasses that the CLI's single handler turns into one stderr line and an exit code.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitliza.cli.output import Out


@dataclass
class Env:
    """What every command gets: where it runs, who acts, how to print."""

    path: Path = field(default_factory=Path.cwd)
    agent: str | None = None
    json: bool = False
    no_sync: bool = False
    _liza: Any = None

    @property
    def out(self) -> Out:
        return Out(self.json)

    def liza(self) -> Any:
        """The `gitliza.services.api.Liza` for this repository (opened once)."""
        if self._liza is None:
            from gitliza.services.api import Liza
            self._liza = Liza.open(self.path, self.agent or os.environ.get("LIZA_AGENT_ID"),
                                   sync=not self.no_sync)
            _install_after_commit(self._liza)
            _install_materialize(self._liza)
        return self._liza


def _install_after_commit(liza: Any) -> None:
    """Auto-sync (a configured remote) hooks in here, see gitliza/cli/commands/sync.py."""
    # Checked with pygit2's config reader first, so that a repository without a sync remote
    # (or a --no-sync command) never pays for importing the sync engine and the transport.
    if not getattr(liza, "sync", True) or not _sync_remote_configured(liza.repo):
        return
    try:
        from gitliza.cli.commands import sync
    except ImportError:
        return
    hook = getattr(sync, "after_commit", None)
    if hook is not None:
        liza.after_commit.append(hook)


def _sync_remote_configured(repo: Any) -> bool:
    """`git config liza.remote` (or its alias `sync.remote`) set to something non-empty."""
    try:
        cfg = repo.config
        return any(k in cfg and str(cfg[k]).strip() for k in ("liza.remote", "sync.remote"))
    except Exception:  # an unreadable config: no auto-sync rather than a failing command
        return False


def _install_materialize(liza: Any) -> None:
    """`git config liza.materialize true`: refresh .liza/*.yaml after every commit (installed after
    auto-sync, so it sees the replayed tip). Without the setting this is one config lookup: the
    materializer (and ruamel.yaml) are never imported."""
    try:
        cfg = liza.repo.config
        if "liza.materialize" not in cfg or not cfg.get_bool("liza.materialize"):
            return
    except Exception:  # unreadable or not a boolean: off rather than a failing command
        return
    from gitliza.services.materialize import after_commit
    liza.after_commit.append(after_commit)
