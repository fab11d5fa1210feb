"""gitliza: a git-native blackboard for teams of coding agents."""
from __future__ import annotations

import sys

__version__ = "0.1.0"


def start_command(python: str | None = None) -> list[str]:
    """The argv that starts this gitliza in a new process, for every start gitliza generates (a
    team's supervisors, an agent's `git liza` alias, the MCP server in an agent CLI's config).
    `-P`: the working directory (a repository or worktree, whose files an agent or a clone
    wrote) is never put on sys.path, so a `gitliza/` package there cannot stand in for the
    installed one. The hook shim does the same (hooks/template.sh)."""
    return [python or sys.executable, "-P", "-m", "gitliza"]
