"""The forge a board names (config `forge`, `forge_repo`, `forge_api_url`), opened with the token
found outside the board (token.py); the forge's library is imported only here (exit 5 with the pip
extra's name when it is missing)."""
from __future__ import annotations

from pathlib import Path

from gitliza.core.model import Config
from gitliza.errors import ValidationError
from gitliza.forge import Forge
from gitliza.forge import token as tokens

SET_UP = "`git liza forge github --repo OWNER/NAME` sets one up (docs/forge.md)"


def open_forge(config: Config, repo_path: Path) -> tuple[Forge, str]:
    """(the forge, where its token came from)."""
    if not config.forge or not config.forge_repo:
        raise ValidationError("no forge is set for this board", hint=SET_UP)
    value, source = tokens.find(repo_path)
    if config.forge == "github":
        from gitliza.forge.github.client import GitHubForge  # githubkit: only here
        return GitHubForge(config.forge_repo, value, config.forge_api_url), source
    raise ValidationError(f"forge {config.forge!r} is not supported", hint=SET_UP)
