"""The agent CLIs gitliza knows: every module of this folder that defines `PROFILE`, in the order
of the modules' names. Adding a CLI is adding its module here; nothing else in gitliza names one.

The modules are found when first asked for (`profiles()`), not at import: a command that runs no
agent loads none of them.
"""
from __future__ import annotations

import functools
import importlib
import os
import pkgutil
import sys

from gitliza.agentcli.base import Profile
from gitliza.errors import ValidationError

DEFAULT_CLI = "claude"  # as in the reference's liza-agent.sh


@functools.cache
def profiles() -> dict[str, Profile]:
    """Every known CLI's profile, by name."""
    package = sys.modules[__name__.rpartition(".")[0]]  # gitliza.agentcli (its __path__)
    out: dict[str, Profile] = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        found = getattr(importlib.import_module(f"{package.__name__}.{info.name}"), "PROFILE",
                        None)
        if isinstance(found, Profile):
            out[found.name] = found
    return out


def find(name: str | None) -> Profile | None:
    """The profile called `name` (or one of its aliases), or None."""
    key = (name or "").strip().lower()
    for p in profiles().values():
        if key == p.name or key in p.aliases:
            return p
    return None


def profile(cli: str | None) -> Profile:
    """The profile for `--cli NAME` (default claude)."""
    found = find(cli or DEFAULT_CLI)
    if found is None:
        raise ValidationError(f"--cli must be one of {', '.join(profiles())}, got {cli!r}")
    return found


def for_command(argv0: str) -> Profile | None:
    """The profile of a known CLI named by a `-- COMMAND`'s executable."""
    base = os.path.basename(argv0)
    for p in profiles().values():
        if base == p.executable:
            return p
    return None


def choices() -> str:
    """`claude | codex | ...` for a command's help, aliases in parentheses."""
    return " | ".join(p.name + (f" ({', '.join(p.aliases)})" if p.aliases else "")
                      for p in profiles().values())
