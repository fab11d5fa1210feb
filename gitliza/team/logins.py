"""`git liza team`'s start check: which of the team's agent CLIs has no login (each profile says
how it knows, from the environment and its files under the home: gitliza/agentcli/), one line
each, before any member starts. A member whose CLI is not ready still starts: its supervisor
waits for the login and raises the PROVIDER alarm (team/provider.py)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Mapping

from gitliza import agentcli


def not_ready(names: Iterable[str], env: Mapping[str, str] | None = None) -> list[str]:
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())

    def read(rel: str) -> str | None:
        try:
            return (home / rel).read_text(errors="replace")[:1_000_000]
        except (OSError, ValueError):
            return None
    out = []
    for name in sorted(set(names)):
        p = agentcli.find(name)
        if p is None or p.logged_in is None:
            continue
        why = p.logged_in(env, read)
        if why is not None:
            out.append(f"{p.name} not ready: {why}; {p.login or 'log it in'}")
    return out
