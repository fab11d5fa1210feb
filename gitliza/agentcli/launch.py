"""One function turns a profile into a launch (argv, environment, standard input, the files to
write first); pure: no process is started and no file is written here (team/prepare.py and the
supervisor do both), `plan` is given everything it needs (paths, the prompt file, the MCP server
entry). What each CLI may do under each `--permissions` choice is documented per CLI in
docs/agents.md; the choices are:

- `worktree` (default): the agent edits files in its worktree, runs commands there and calls
  gitliza; anything else is refused without asking, so nothing ever waits for a human. As narrow
  as each CLI allows (each CLI's module says how).
- `bypass`: the CLI's own "approve everything, no sandbox" switch, for people who sandbox the
  whole machine.
- `own`: nothing added: the CLI's own configuration decides (which may leave calls waiting for
  an approval nobody gives).

The prompt goes on standard input (from the saved prompt file) wherever the CLI reads it there:
a single argument is capped at 128 KiB on Linux, and prompts grow with notes and handoffs. A CLI
may read it from the file by name instead (Prompt.FILE). A plain `-- COMMAND` gets it on standard
input and, as before, as its last argument while that fits under the cap.

Every agent also gets `git liza` through the environment (GIT_CONFIG_COUNT/KEY/VALUE defining
`alias.liza` as the absolute gitliza command): a login shell (Codex runs `bash -lc`) resets PATH,
so a virtualenv's `git-liza` would be gone, but the environment survives it.
"""
from __future__ import annotations

import shlex
from dataclasses import replace
from pathlib import Path
from typing import Mapping, Sequence

from gitliza.agentcli.base import (COMMON_MCP_FILE, DEFAULT_PERMISSIONS, Context, Launch,
                                   Permissions, Profile, Prompt, mcp_servers_json, render,
                                   run_file)
from gitliza.agentcli.registry import for_command
from gitliza.errors import ValidationError

ARG_MAX = 128 * 1024  # Linux MAX_ARG_STRLEN: the longest single argument execve takes


def parse_permissions(text: str | None) -> Permissions:
    if text is None:
        return DEFAULT_PERMISSIONS
    try:
        return Permissions(text.strip().lower())
    except ValueError:
        raise ValidationError(f"--permissions must be one of "
                              f"{', '.join(p.value for p in Permissions)}, got {text!r}") from None


def with_model(p: Profile, model: str | None) -> Profile:
    """`p` naming `model` on its command line; refused for a CLI that takes none there."""
    if model is None:
        return p
    if p is PLAIN or not p.model_words:
        raise ValidationError(f"--model: {p.name if p is not PLAIN else 'a -- COMMAND'} takes no "
                              "model on its command line (set it in its own configuration)")
    return replace(p, model=model)


def plan(p: Profile, perms: Permissions, ctx: Context, command: Sequence[str] = (),
         interactive: bool = False) -> Launch:
    """The launch of profile `p` (PLAIN with `command`) under `perms` in `ctx`."""
    if p is PLAIN:
        argv = list(command)
    else:
        argv = [p.executable] if interactive else [p.executable, *p.headless]
        argv += p.postures.get(perms, ())
        if p.model:
            argv += [*p.model_words, p.model]
    env = dict(ctx.base_env)
    env.update(git_alias_env(ctx.base_env, ctx.gitliza, ctx.identity))
    launch = p.wire(Launch(argv, env, None, {}), perms, ctx, command)
    if interactive:  # the user pastes the prompt: no prompt words, the terminal as stdin
        return launch
    if p.prompt is Prompt.STDIN:
        launch.argv.extend(p.prompt_words)
        return Launch(launch.argv, launch.env, ctx.prompt_file, launch.files, launch.mcp_config)
    if p.prompt is Prompt.FILE:
        launch.argv.extend([*p.prompt_words, str(ctx.prompt_file)])
        return launch
    if len(ctx.prompt.encode()) < ARG_MAX:
        launch.argv.append(ctx.prompt)
    return Launch(launch.argv, launch.env, ctx.prompt_file, launch.files, launch.mcp_config)


def git_alias_env(base: Mapping[str, str], gitliza: Sequence[str],
                  extra: Sequence[tuple[str, str]] = ()) -> dict[str, str]:
    """GIT_CONFIG_COUNT/KEY/VALUE making `git liza` run `gitliza` wherever PATH points, plus
    `extra` entries (git reads these over every config file; an existing list is extended, not
    replaced)."""
    try:
        n = int(base.get("GIT_CONFIG_COUNT", "0"))
    except ValueError:
        n = 0
    entries = [("alias.liza", "!" + shlex.join(gitliza)), *extra]
    out = {"GIT_CONFIG_COUNT": str(n + len(entries))}
    for i, (key, value) in enumerate(entries, n):
        out[f"GIT_CONFIG_KEY_{i}"], out[f"GIT_CONFIG_VALUE_{i}"] = key, value
    return out


def writable_git_roots(ctx: Context) -> list[str]:
    """What a sandboxed agent must write to commit and run `git liza`: its worktree's own git
    dir (index, HEAD), the shared objects, refs and reflogs, and `.liza/`. A task worktree
    leaves the common dir's config and hooks read-only; the main worktree's index and HEAD sit
    in the common dir itself, so a planner gets all of it."""
    # Here, not at the top: finding the CLIs imports every module of this folder, and these
    # bring in pygit2, which `--help` does not need.
    from gitliza.git.objects import ownstore
    from gitliza.git.objects import packs
    if ctx.git_dir == ctx.common_dir:
        roots = [ctx.common_dir]
    else:
        roots = [ctx.git_dir, *(ctx.common_dir / d for d in ("objects", "refs", "logs",
                                                             ownstore.STORE, packs.MARKS_DIR))]
    return [str(r) for r in [*roots, ctx.liza_dir]]


def _plain(launch: Launch, perms: Permissions, ctx: Context, cmd: Sequence[str]) -> Launch:
    """`-- COMMAND`: the MCP configuration in the format of the CLI it names (a known
    executable), else the common `mcpServers` JSON; the program finds it in $LIZA_MCP_CONFIG."""
    if ctx.mcp is None:
        return launch
    known = for_command(cmd[0]) if cmd else None
    if known is not None and known.mcp_data is not None:
        name, data = known.mcp_file, known.mcp_data(ctx.mcp, str(ctx.cwd))
    else:
        name, data = COMMON_MCP_FILE, mcp_servers_json(ctx.mcp)
    path = run_file(ctx, "mcp" + Path(name).suffix)
    return Launch(launch.argv, launch.env, launch.stdin, {**launch.files, path: render(name, data)},
                  path)


PLAIN = Profile("command", "", (), Prompt.ARGUMENT, wire=_plain)
