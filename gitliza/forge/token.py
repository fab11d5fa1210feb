"""The forge token, never on the board (docs/forge.md): `GITHUB_TOKEN`, else `gh auth token` (the
GitHub CLI's login), else `git config liza.forgeToken` (this clone's or the user's git config,
which no push carries). Only its source is ever printed."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from gitliza.errors import MissingDependency

ENV = "GITHUB_TOKEN"
GIT_KEY = "liza.forgeToken"


def find(repo_path: Path, *, gh: bool = True) -> tuple[str, str]:
    """(token, where it came from); MissingDependency (exit 5) with one line when none is set."""
    value = os.environ.get(ENV, "").strip()
    if value:
        return value, f"${ENV}"
    exe = shutil.which("gh") if gh else None
    if exe is not None:
        try:
            out = subprocess.run([exe, "auth", "token"], capture_output=True, text=True,
                                 timeout=10, stdin=subprocess.DEVNULL, check=False)
        except (OSError, subprocess.TimeoutExpired):
            out = None
        if out is not None and out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip(), "gh auth token"
    try:
        got = subprocess.run(["git", "config", "--get", GIT_KEY], cwd=repo_path,
                             capture_output=True, text=True, timeout=10, check=False,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        got = None
    if got is not None and got.returncode == 0 and got.stdout.strip():
        return got.stdout.strip(), f"git config {GIT_KEY}"
    raise MissingDependency(f"no forge token: set ${ENV}, log in with `gh auth login`, or "
                            f"`git config {GIT_KEY} TOKEN` (never on the board)")


def redact(text: str, token: str) -> str:
    """`text` with the token cut out, for any line the bridge writes from a forge's answer."""
    return text.replace(token, "[token]") if token else text
