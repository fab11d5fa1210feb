"""What `git liza team` checks before it starts anyone, from its options record: every member's
CLI and model (the board's `models`, else `--cli`, default claude, else `-- COMMAND`) known and
installed, and whether the reviewers it runs can meet the review quorum (said through `warn`).
A refusal is one line with its exit code (a wrong name 1, a missing program 5), so a team never
half-starts; what it returns are the CLIs whose logins are then checked."""
from __future__ import annotations

from typing import Callable

from gitliza import agentcli
from gitliza.core.agents import teammodels
from gitliza.core.model import Config
from gitliza.team.options import TeamOptions
from gitliza.team.runner import require


def preflight(opts: TeamOptions, config: Config, warn: Callable[[str], None]) -> frozenset[str]:
    """The CLIs the members run (their profiles' names), each checked installed."""
    from gitliza.core.quorum import diversity_key
    from gitliza.core.quorumreach import team_warning
    left = []  # the members the board names no CLI for: --cli's (default claude)
    used: set[str] = set()
    kinds: list[str | None] = []  # each reviewer's CLI or model, for review_diversity
    for m in opts.crew:  # every member's CLI and model from the board, checked now
        chosen = teammodels.chain_for_member(opts.models, m.role, m.agent)
        for p in [agentcli.with_model(agentcli.profile(c), model) for c, model in chosen]:
            require(p.executable)  # each CLI of a fallback list too, once all are known names
            used.add(p.name)
        if not chosen:
            left.append(m)
        if m.role == "code-reviewer" and not opts.command:
            # A fallback list's first CLI is the one it runs while that one is free.
            first = chosen[0] if chosen else \
                teammodels.chain(opts.cli)[0] if opts.cli else (None, None)
            kinds.append(diversity_key(config, agentcli.profile(first[0]).name, first[1]))
    most = max([n for role, n in opts.pool if role == "code-reviewer"]
               + [sum(1 for m in opts.crew if m.role == "code-reviewer")])
    short = team_warning(config, most, kinds)
    if short:
        warn(short)
    if left or not opts.crew:
        names: tuple[tuple[str | None, str | None], ...] = \
            teammodels.chain(opts.cli) if opts.cli and not opts.command else ((None, None),)
        clis = [] if opts.command else [agentcli.profile(name) for name, _ in names]
        for program in [opts.command[0]] if opts.command else [p.executable for p in clis]:
            require(program)  # `--cli claude,codex`: each, once all are known names
        used |= {p.name for p in clis}
    return frozenset(used)
