"""Which `git liza` commands and MCP tools a sandboxed agent may have its supervisor apply.

An agent reaches the board only through its supervisor (broker.py), which applies a call as that
agent and refuses what its role may not do:
- everyone reads: status, show, ready, log, wait, usage (and reports its run's usage), attic
  (the list: `attic --restore` makes a worktree outside the sandbox, where the agent could not
  see it; `git checkout COMMIT -- .` brings an entry's files into its own worktree instead);
- each role writes what its MCP tools (gitliza/access/tools.py, supervised) offer it: a coder
  submit, block, release, handoff, discover, anomaly; a reviewer verdict, discover, anomaly; a
  planner add, edit, finalize, rescope, abandon, unblock, block, spec-change, note, ...;
- nobody: what the supervisor does for it (claim, claim-review, heartbeat, merge), what is the
  human's (pause, resume, abort, abort-goal, complete-goal, config, register, rekey, init,
  import, hooks, sync, reassign), other supervisors (`agent`, `team`) and anything that names a file for
  the supervisor to read (`validate FILE`).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Sequence

from gitliza.core.states import Role

# `usage` reads the totals, and `usage report` adds to this run's own usage file: the broker runs
# it with the run id its supervisor set (team/usage.py RUN_ENV), so an agent reports only into
# its own run, and the supervisor records the run (not the agent) when it ends.
READS = frozenset({"status", "show", "ready", "log", "wait", "usage", "attic"})
# The human's and the supervisor's, whatever a role's tool list says.
NEVER = frozenset({"merge", "pause", "resume", "abort", "abort-goal", "complete-goal", "config",
                   "register", "rekey", "seal", "claim", "claim-review", "heartbeat", "init",
                   "import", "agent", "team", "mcp", "sync", "push", "pull", "repair", "doctor",
                   "hooks", "hook-impl", "materialize", "validate", "export", "checkpoint",
                   "upgrade", "reassign", "conflict", "carry-approval"})
AGENT_FLAGS = ("--agent", "-a")  # the CLI's option naming the actor


@cache
def writes(role: Role) -> frozenset[str]:
    """The board-changing commands of `role` (CLI words)."""
    from gitliza.access import tools  # the tool table: built once, on first use
    names = {t.op or t.name for t in tools.tools_for(role, supervised=True) if not t.read_only}
    return frozenset(n.replace("_", "-") for n in names) - NEVER


def allowed(role: Role) -> frozenset[str]:
    return READS | writes(role)


@dataclass(frozen=True)
class Verdict:
    ok: bool
    rule: str = ""  # why not: one line naming the rule


def check_command(role: Role, agent: str, argv: Sequence[str]) -> Verdict:
    """May `agent` in `role` have its supervisor run `git liza ARGV`?"""
    if not argv:
        return Verdict(False, "no command (the sandbox's `git liza` needs one: git liza status)")
    word = argv[0]
    for i, a in enumerate(argv[1:], 1):
        for flag in AGENT_FLAGS:
            named = (argv[i + 1] if a == flag and i + 1 < len(argv) else
                     a.split("=", 1)[1] if a.startswith(flag + "=") else None)
            if (a == flag or a.startswith(flag + "=")) and named != agent:
                return Verdict(False, f"identity is bound by the supervisor: you act as {agent}, "
                                      f"not {named or '?'}")
    froms = [argv[i + 1] if a == "--from" and i + 1 < len(argv) else a.split("=", 1)[1]
             for i, a in enumerate(argv) if a == "--from" or a.startswith("--from=")]
    if any(f != "-" for f in froms):
        # The supervisor would open the path outside the sandbox (a file of the hidden home, a
        # key through a link, a FIFO without end): the agent's client reads the file inside its
        # view and relays the content as `--from -` (client.py); a path never leaves it.
        return Verdict(False, "`--from FILE` names a file for the supervisor to read outside "
                              "your sandbox: your `git liza` relays its content (use it)")
    if word == "attic" and any(a == "--restore" or a.startswith("--restore=") for a in argv):
        # (A takeover's prompt names the entry; its objects are readable inside the sandbox.)
        return Verdict(False, "`attic --restore` makes a new worktree outside your sandbox, "
                              "where you cannot see it: `git checkout COMMIT -- .` brings the "
                              "entry's files (uncommitted ones included) into your worktree")
    if word in allowed(role):
        return Verdict(True)
    what = ("the supervisor's or the human's" if word in NEVER else
            f"not an op of a {role.value}")
    return Verdict(False, f"`{word}` is {what} (a {role.value} may: "
                          f"{', '.join(sorted(allowed(role)))})")


def check_tool(role: Role, name: str) -> Verdict:
    """May an agent in `role` call MCP tool `name` (its server already offers only its role's)?"""
    word = name.replace("_", "-")
    if word in NEVER:
        return Verdict(False, f"tool `{name}` is the supervisor's or the human's")
    return Verdict(True)
