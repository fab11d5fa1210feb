"""`git liza team`'s options, parsed once into one typed, frozen record.

The flags (`--planners/--coders/--reviewers`, `--prefix`, `--max-coders/--max-reviewers`, `--cli`,
`-- COMMAND`, `--mcp`, `--permissions`, `--sandbox`, `--labels`, `--takeover`, `--no-sync`,
`--logs`) and what the board's config supplies (`models`: each member's CLI and model when the
team names neither a CLI nor a command) become a `TeamOptions` here, checked as a whole: bad input
is one line, exit 1, before anything starts. `Team` takes the record; each member's `git liza
agent` command line is rendered from it (launch.supervisor_argv), and the supervisor hands the
parsed sandbox mode on to its box and the integration test's runner (sandbox/policy.SandboxMode).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

from gitliza.agentcli.base import DEFAULT_PERMISSIONS, Permissions
from gitliza.agentcli.launch import parse_permissions
from gitliza.core.presence.placement import check_labels
from gitliza.core.ids import check_id
from gitliza.errors import ValidationError
from gitliza.sandbox.policy import SandboxMode

ROLES = (("planner", "planner"), ("coder", "coder"), ("code-reviewer", "reviewer"))
POOL_WORDS = {"coder": "coder", "code-reviewer": "reviewer"}  # the pooled roles' flag words
MAX_PER_ROLE = 64


@dataclass(frozen=True)
class Member:
    role: str  # the word `git liza agent` takes
    agent: str
    pool: bool = False  # started by the pool (exits after pool_idle_exit seconds idle)


def members(planners: int, coders: int, reviewers: int, prefix: str = "",
            pooled: bool = False) -> list[Member]:
    """planner-1, coder-1..N, reviewer-1..M (each id behind `prefix`). `pooled`: the team sizes
    a role itself (gitliza/team/pool.py), so it may start with no member at all."""
    counts = (planners, coders, reviewers)
    if any(n < 0 for n in counts) or (sum(counts) == 0 and not pooled):
        raise ValidationError("a team needs at least one member (--planners/--coders/--reviewers "
                              "are counts of 0 or more)")
    if any(n > MAX_PER_ROLE for n in counts):
        raise ValidationError(f"at most {MAX_PER_ROLE} members of one role per `git liza team`")
    out = []
    for (role, word), n in zip(ROLES, counts):
        for i in range(1, n + 1):
            out.append(Member(role, check_id(f"{prefix}{word}-{i}", "agent id")))
    return out


def check_pool(coders: int, reviewers: int, max_coders: int, max_reviewers: int
               ) -> dict[str, int]:
    """The pooled roles and their caps ({} when the team is fixed); a cap below the fixed count
    of its role is refused."""
    out: dict[str, int] = {}
    for role, fixed, most in (("coder", coders, max_coders),
                              ("code-reviewer", reviewers, max_reviewers)):
        if most < 0 or most > MAX_PER_ROLE:
            raise ValidationError(f"--max-{POOL_WORDS[role]}s must be 0 to {MAX_PER_ROLE}, "
                                  f"got {most}")
        if most and most < fixed:
            raise ValidationError(f"--max-{POOL_WORDS[role]}s {most} is below --"
                                  f"{POOL_WORDS[role]}s {fixed}")
        if most:
            out[role] = most
    return out


@dataclass(frozen=True)
class TeamOptions:
    """How one `git liza team` runs, every field parsed and checked (`parse`). The defaults are
    the flags' own: a record built by hand (a test, a library caller) means what the command
    line without those flags means."""

    crew: tuple[Member, ...] = ()  # the members started at once
    prefix: str = ""  # before every agent id (one per machine), pool members' too
    pool: tuple[tuple[str, int], ...] = ()  # (role, at most this many running): a pooled role
    cli: str | None = None  # `--cli` (a name, `name:model`, or a fallback list)
    command: tuple[str, ...] = ()  # `-- COMMAND`: every member's agent command
    models: str | None = None  # the board's `models`, when neither --cli nor a command is given
    mcp: bool = False
    permissions: Permissions = DEFAULT_PERMISSIONS
    sandbox: SandboxMode = SandboxMode.ON
    labels: tuple[str, ...] = ()  # what this machine offers a `needs` (core/presence/placement.py)
    takeover: bool = False  # take every member's id from a supervisor that is gone
    no_sync: bool = False
    logs: Path | None = None  # also each supervisor's log, one file per member

    @classmethod
    def parse(cls, *, planners: int = 1, coders: int = 2, reviewers: int = 1, prefix: str = "",
              max_coders: int = 0, max_reviewers: int = 0, cli: str | None = None,
              command: Sequence[str] = (), mcp: bool = False, permissions: str | None = None,
              sandbox: str | None = None, labels: str | None = None, takeover: bool = False,
              no_sync: bool = False, logs: Path | None = None) -> TeamOptions:
        """The record from the `team` flags (the board's part: `following`)."""
        sizes = check_pool(coders, reviewers, max_coders, max_reviewers)
        return cls(crew=tuple(members(planners, coders, reviewers, prefix, pooled=bool(sizes))),
                   prefix=prefix, pool=tuple(sizes.items()), cli=cli, command=tuple(command),
                   mcp=mcp,
                   permissions=parse_permissions(permissions),
                   sandbox=SandboxMode.parse(sandbox),
                   labels=check_labels([labels] if labels else []), takeover=takeover,
                   no_sync=no_sync, logs=logs)

    def following(self, models: str | None) -> TeamOptions:
        """With the board's `models` (its config): what the members follow when the team names
        neither a CLI nor a command (otherwise those win, and the board's are not kept)."""
        return replace(self, models=models if self.cli is None and not self.command else None)

    def pool_sizes(self) -> dict[str, int]:
        return dict(self.pool)
