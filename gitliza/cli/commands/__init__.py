"""Command implementations: plain functions `(env, ...) -> exit code`, no typer.

`gitliza/cli/app.py` (the only module that imports typer) parses arguments and calls these; errors are
LizaError subclasses that the CLI's single handler turns into one stderr line and an exit code.
"""
from __future__ import annotations

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
        """The `gitliza.services.api.Liza` for this repository (opened once, with the after-commit
        hooks the repository's config asks for: gitliza/services/session.py)."""
        if self._liza is None:
            from gitliza.services.session import open_liza
            self._liza = open_liza(self.path, self.agent, sync=not self.no_sync)
        return self._liza
