"""Pushers bound to agent ids on a server (docs/enforcement.md "Binding pushers to agents").

Where the host says who is pushing, the server repository's git config can name the agent ids each
pusher may act as; the server hook then refuses any new state commit whose `Liza-Actor` the pusher
may not use:

    git config --add liza-pusher.alice.agents coder-1
    git config --add liza-pusher.alice.agents rev-1     # several values, or "coder-1 rev-1"
    git config liza-pusher.lead.agents '*'              # any actor, the human included

Who pushes is what the host puts in the hook's environment (PUSHER_VARIABLES, first set wins):
GitLab's GL_USERNAME, Gitea/Forgejo's GITEA_PUSHER_NAME, GitHub Enterprise's GITHUB_USER_LOGIN,
a web server's REMOTE_USER (smart HTTP behind authentication), or LIZA_PUSHER, which an ssh
forced command sets per key in authorized_keys
(`command="env LIZA_PUSHER=alice git-shell -c \\"$SSH_ORIGINAL_COMMAND\\""`). Once any binding is
configured, a push whose pusher is unknown, or not listed, may not add state commits at all.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

SECTION = "liza-pusher."
PUSHER_VARIABLES = ("GL_USERNAME", "GITEA_PUSHER_NAME", "GITHUB_USER_LOGIN", "REMOTE_USER",
                    "LIZA_PUSHER")
ANY = "*"


def bindings(config: Any) -> dict[str, set[str]]:
    """pusher -> the actors it may act as, from a pygit2 Config (empty: no binding)."""
    out: dict[str, set[str]] = {}
    for entry in config:
        name = entry.name
        if not name.lower().startswith(SECTION) or not name.lower().endswith(".agents"):
            continue
        pusher = name[len(SECTION):-len(".agents")]
        out.setdefault(pusher, set()).update((entry.value or "").replace(",", " ").split())
    return out


def pusher(env: Mapping[str, str]) -> tuple[str, str] | None:
    """(variable, user) of whoever the host says is pushing."""
    for var in PUSHER_VARIABLES:
        value = env.get(var, "").strip()
        if value:
            return var, value
    return None


def refused(binding: dict[str, set[str]], who: tuple[str, str] | None,
            commits: Iterable[tuple[str, str]]) -> str | None:
    """Why a push adding `commits` [(oid, actor)] is refused under `binding`; None if allowed."""
    if not binding:
        return None
    for oid, actor in commits:
        if who is None:
            return (f"state commit {oid[:12]} (actor {actor}): this server binds pushers to "
                    "agents, and the host did not say who is pushing (none of "
                    f"{', '.join(PUSHER_VARIABLES)} is set)")
        allowed = binding.get(who[1])
        if allowed is None:
            return (f"state commit {oid[:12]} (actor {actor}): pusher {who[1]} ({who[0]}) is not "
                    f"bound to any agent (git config {SECTION}{who[1]}.agents)")
        if actor not in allowed and ANY not in allowed:
            return (f"state commit {oid[:12]} (actor {actor}): pusher {who[1]} may act only as "
                    f"{', '.join(sorted(allowed))}")
    return None
