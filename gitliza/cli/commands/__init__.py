"""Command implementations: plain functions `(env, ...) -> exit code`, no typer.

`gitliza/cli/app/` (the only folder that imports typer) parses arguments and calls these; errors are
LizaError subclasses that the CLI's single handler turns into one stderr line and an exit code.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gitliza.cli.output import Out

if TYPE_CHECKING:
    from gitliza.services.api import Liza


@dataclass
class Env:
    """What every command gets: where it runs, who acts, how to print."""

    path: Path = field(default_factory=Path.cwd)
    agent: str | None = None
    json: bool = False
    no_sync: bool = False
    _liza: Liza | None = None

    @property
    def out(self) -> Out:
        return Out(self.json)

    def liza(self) -> Liza:
        """The `gitliza.services.api.Liza` for this repository (opened once, with the after-commit
        hooks the repository's config asks for: gitliza/services/session.py)."""
        if self._liza is None:
            from gitliza.services.session import open_liza
            self._liza = open_liza(self.path, self.agent, sync=not self.no_sync)
        return self._liza


def read_input_file(env: Env, file: str) -> tuple[Path, str]:
    """A YAML or Markdown file a command reads (a path relative to where it runs), size-checked:
    (its path, its text); ValidationError (exit 1) when it cannot be read."""
    from gitliza.errors import ValidationError
    from gitliza.interop.yamlload import check_size
    path = Path(file) if Path(file).is_absolute() else env.path / file
    check_size(path)
    try:
        return path, path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ValidationError(f"cannot read {file}: {e}") from None
