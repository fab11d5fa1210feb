"""The imperative half of a launch: find the paths a profile needs, write the files its plan
names (beside the prompts, never in a worktree, where they would be committed), and hand back
the launch. The plan itself is pure (gitliza/agentcli/launch.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import pygit2

from gitliza import agentcli, atomic, start_command
from gitliza.access import tools
from gitliza.core.states import Role
from gitliza.git.repository import common_dir, open_repository
from gitliza.git.repository import LIZA_DIR

def gitliza_command() -> tuple[str, ...]:
    """The absolute command that runs this gitliza (no reliance on PATH; `-P`: never a
    `gitliza/` in the agent's worktree, see gitliza.start_command)."""
    return tuple(start_command())


def mcp_tools(role: Role) -> tuple[str, ...]:
    return tuple(t.name for t in tools.tools_for(role, supervised=True))


def launch(p: agentcli.Profile, perms: agentcli.Permissions, *, cwd: Path, main: Path,
           run_dir: Path, agent: str, prompt_file: Path, prompt: str, env: Mapping[str, str],
           mcp: dict[str, object] | None = None, role: Role | None = None,
           command: Sequence[str] = (), interactive: bool = False,
           gitliza: tuple[str, ...] | None = None, contained: bool = False) -> agentcli.Launch:
    """The launch, its files written; `gitliza`: what the agent's `git liza` runs (default
    this gitliza; the sandbox's broker client inside a sandbox); `contained`: in gitliza's
    sandbox (a CLI's own sandbox that cannot nest is off)."""
    repo = open_repository(cwd)
    ctx = agentcli.Context(
        cwd=cwd, git_dir=Path(repo.path).resolve(), common_dir=common_dir(repo),
        liza_dir=main / LIZA_DIR, run_dir=run_dir, agent=agent, prompt_file=prompt_file,
        prompt=prompt, gitliza=gitliza or gitliza_command(), base_env=env, mcp=mcp,
        tools=mcp_tools(role) if mcp is not None and role is not None else (),
        system_settings=_system_settings(p, env), identity=_identity(repo),
        private_dir=_private_dir(run_dir, main) if p.system_settings else None,
        contained=contained)
    out = agentcli.plan(p, perms, ctx, command, interactive)
    for path, text in out.files.items():
        path.parent.mkdir(parents=True, exist_ok=True, mode=atomic.PRIVATE_DIR)
        atomic.write(path.parent, path.name, text.encode(), atomic.PRIVATE_FILE)  # 0600
    return out


def _insecure(path: Path) -> bool:
    """Whether `path` or a directory above it is group or world writable (as /tmp is)."""
    for p in (path, *path.parents):
        try:
            if p.stat().st_mode & 0o022:
                return True
        except OSError:
            continue  # not made yet: its parents decide
    return False


def _private_dir(run_dir: Path, main: Path) -> Path | None:
    """A CLI that reads a system settings file (Gemini) skips one below a group/world-writable
    directory (a repository under /tmp): then a private directory in the user's cache, one per
    repository."""
    if not _insecure(run_dir):
        return None
    import hashlib
    import os
    import pwd
    home = Path(pwd.getpwuid(os.getuid()).pw_dir)  # not $HOME, which may itself be in /tmp
    key = hashlib.sha256(str(main.resolve()).encode()).hexdigest()[:16]
    private = home / ".cache" / "gitliza" / "agent-runs" / key
    return None if _insecure(home) else private


def _identity(repo: pygit2.Repository) -> tuple[tuple[str, str], ...]:
    """user.name and user.email as the repository's config has them now (none if unset)."""
    config = repo.config
    return tuple((key, str(config[key])) for key in ("user.name", "user.email") if key in config)


def _system_settings(p: agentcli.Profile, env: Mapping[str, str]) -> str | None:
    """The system settings the CLI would read without us (kept under ours), if it reads any."""
    if p.system_settings is None:
        return None
    var, default = p.system_settings
    path = Path(env.get(var) or default)
    try:
        return path.read_text()
    except OSError:
        return None

