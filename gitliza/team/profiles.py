"""How each agent CLI is launched: one table of launch profiles and the one function that turns a
profile into a launch (argv, environment, standard input, the files to write first).

Pure: no process is started and no file is written here (the supervisor does both); `plan` is
given everything it needs (paths, the prompt file, the MCP server entry). What each CLI may do
under each `--permissions` choice is documented per CLI in docs/agents.md; the choices are:

- `worktree` (default): the agent edits files in its worktree, runs commands there and calls
  gitliza; anything else is refused without asking, so nothing ever waits for a human. As narrow
  as each CLI allows (Claude: edits confined to the working directory, an allow-list for Bash and
  gitliza's MCP tools; Codex: its workspace-write sandbox plus the task's own git metadata;
  Gemini: edit tools auto-approved inside the workspace, the shell allowed by a policy rule; Vibe: the
  accept-edits agent plus bash and gitliza's tools).
- `bypass`: the CLI's own "approve everything, no sandbox" switch, for people who sandbox the
  whole machine (Claude refuses it as root).
- `own`: nothing added: the CLI's own configuration decides (which may leave calls waiting for
  an approval nobody gives).

The prompt goes on standard input (from the saved prompt file) wherever the CLI reads it there:
a single argument is capped at 128 KiB on Linux, and prompts grow with notes and handoffs. Vibe
reads it from the file by name. A plain `-- COMMAND` gets it on standard input and, as before, as
its last argument while that fits under the cap.

Every agent also gets `git liza` through the environment (GIT_CONFIG_COUNT/KEY/VALUE defining
`alias.liza` as the absolute gitliza command): a login shell (Codex runs `bash -lc`) resets PATH,
so a virtualenv's `git-liza` would be gone, but the environment survives it.
"""
from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from gitliza.access import mcp_config
from gitliza.errors import ValidationError
from gitliza.git.objects import ownstore
from gitliza.git.objects import packs

DEFAULT_CLI = "claude"  # as in the reference's liza-agent.sh
ARG_MAX = 128 * 1024  # Linux MAX_ARG_STRLEN: the longest single argument execve takes
MCP_SERVER = mcp_config.SERVER_NAME  # the server's name in every CLI's configuration


class Permissions(str, Enum):
    WORKTREE = "worktree"
    BYPASS = "bypass"
    OWN = "own"


DEFAULT_PERMISSIONS = Permissions.WORKTREE


class Prompt(Enum):
    STDIN = "stdin"  # the prompt file is the agent's standard input
    FILE = "file"  # the prompt file's path follows the profile's prompt words
    ARGUMENT = "argument"  # `-- COMMAND`: appended as the last argument (and on stdin)


@dataclass(frozen=True)
class Profile:
    """One agent CLI: what to run and how, as data. `wiring` names the function that adds the
    CLI's own MCP and permission configuration (files, -c overrides, environment)."""

    name: str
    executable: str
    headless: tuple[str, ...]  # the words of a non-interactive run
    prompt: Prompt
    wiring: str  # also what each needs in its environment (settings paths, VIBE_*)
    prompt_words: tuple[str, ...] = ()  # before the prompt (FILE: before the path)
    postures: Mapping[Permissions, tuple[str, ...]] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    model_words: tuple[str, ...] = ("--model",)  # how the CLI takes a model; (): it cannot
    model: str | None = None  # the model this launch names (the board's `models`, `--model`)


PROFILES: dict[str, Profile] = {p.name: p for p in (
    Profile(
        "claude", "claude", ("-p",), Prompt.STDIN,
        postures={
            # acceptEdits: file edits inside the working directory (the worktree) go through;
            # the allow-list adds the shell and gitliza's MCP tools. Anything else is denied in
            # -p mode (never asked). Works as root, unlike --dangerously-skip-permissions.
            Permissions.WORKTREE: ("--permission-mode", "acceptEdits",
                                   f"--allowedTools=Bash,mcp__{MCP_SERVER}"),
            Permissions.BYPASS: ("--dangerously-skip-permissions",),
        },
        wiring="claude"),
    Profile(
        "codex", "codex", ("exec",), Prompt.STDIN, prompt_words=("-",),
        postures={
            # The writable roots (the task's git metadata) are added by the wiring.
            Permissions.WORKTREE: ("--sandbox", "workspace-write",
                                   "-c", 'approval_policy="never"'),
            Permissions.BYPASS: ("--dangerously-bypass-approvals-and-sandbox",),
        },
        wiring="codex"),
    Profile(
        "gemini", "gemini", (), Prompt.STDIN,
        # --skip-trust: our worktrees are not in the user's trusted folders; untrusted, a
        # headless gemini exits 55.
        postures={
            Permissions.WORKTREE: ("--skip-trust", "--approval-mode", "auto_edit"),
            Permissions.BYPASS: ("--skip-trust", "--approval-mode", "yolo"),
            Permissions.OWN: ("--skip-trust",),
        },
        wiring="gemini"),
    Profile(
        "mistral", "vibe", (), Prompt.FILE, prompt_words=("--prompt-file",),
        postures={
            Permissions.WORKTREE: ("--agent", "accept-edits"),
            Permissions.BYPASS: ("--auto-approve",),
        },
        wiring="vibe", aliases=("vibe",), model_words=()),
)}

PLAIN = Profile("command", "", (), Prompt.ARGUMENT, wiring="plain")


def profile(cli: str | None) -> Profile:
    """The profile for `--cli NAME` (default claude); `vibe` is `mistral`."""
    name = (cli or DEFAULT_CLI).strip().lower()
    for p in PROFILES.values():
        if name == p.name or name in p.aliases:
            return p
    raise ValidationError(f"--cli must be one of {', '.join(PROFILES)}, got {cli!r}")


def with_model(p: Profile, model: str | None) -> Profile:
    """`p` naming `model` on its command line; refused for a CLI that takes none there."""
    if model is None:
        return p
    if p is PLAIN or not p.model_words:
        raise ValidationError(f"--model: {p.name if p is not PLAIN else 'a -- COMMAND'} takes no "
                              "model on its command line (set it in its own configuration)")
    return replace(p, model=model)


def parse_permissions(text: str | None) -> Permissions:
    if text is None:
        return DEFAULT_PERMISSIONS
    try:
        return Permissions(text.strip().lower())
    except ValueError:
        raise ValidationError(f"--permissions must be one of "
                              f"{', '.join(p.value for p in Permissions)}, got {text!r}") from None


def for_command(argv0: str) -> Profile | None:
    """The profile of a known CLI named by a `-- COMMAND`'s executable (its MCP format)."""
    base = os.path.basename(argv0)
    for p in PROFILES.values():
        if base == p.executable:
            return p
    return None


@dataclass(frozen=True)
class Context:
    """Where and as whom one agent run happens."""

    cwd: Path  # the agent's worktree (the main worktree for a planner)
    git_dir: Path  # that worktree's own git dir (`.git/worktrees/T`, or the common dir)
    common_dir: Path  # the repository's common git dir
    liza_dir: Path  # `<main worktree>/.liza`
    run_dir: Path  # where this agent's per-run files go (never inside a worktree)
    agent: str
    prompt_file: Path
    prompt: str
    gitliza: tuple[str, ...]  # the absolute command that runs gitliza
    base_env: Mapping[str, str] = field(default_factory=dict)  # the environment to extend
    mcp: Mapping[str, Any] | None = None  # the stdio server entry (mcp_config.server), or None
    tools: tuple[str, ...] = ()  # the MCP tools the role sees (to pre-approve one by one)
    system_settings: str | None = None  # gemini: the text of the settings it would read now
    # The committer identity as the repository's config gives it: Gemini's shell runs git with
    # GIT_CONFIG_GLOBAL=/dev/null (no ~/.gitconfig), but keeps this list.
    identity: tuple[tuple[str, str], ...] = ()
    # gemini: where its settings file goes (it skips one below a group/world-writable
    # directory, e.g. a repository under /tmp); None: run_dir.
    private_dir: Path | None = None
    # In gitliza's own sandbox (gitliza/sandbox/): a CLI's sandbox that cannot nest in it is
    # turned off (Codex's bubblewrap cannot map its user namespace inside ours).
    contained: bool = False


@dataclass(frozen=True)
class Launch:
    argv: list[str]
    env: dict[str, str]
    stdin: Path | None  # a file to open as standard input (None: /dev/null)
    files: dict[Path, str]  # to write before the start
    mcp_config: Path | None = None  # what $LIZA_MCP_CONFIG names


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
    launch = Launch(argv, env, None, {})
    launch = _WIRING[p.wiring](launch, perms, ctx, command)
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
    if ctx.git_dir == ctx.common_dir:
        roots = [ctx.common_dir]
    else:
        roots = [ctx.git_dir, *(ctx.common_dir / d for d in ("objects", "refs", "logs",
                                                             ownstore.STORE, packs.MARKS_DIR))]
    return [str(r) for r in [*roots, ctx.liza_dir]]


# -- per-CLI wiring -------------------------------------------------------------------------------
def _file(ctx: Context, suffix: str) -> Path:
    return ctx.run_dir / f"{ctx.agent}-{suffix}"


def _claude(launch: Launch, perms: Permissions, ctx: Context, _cmd: Sequence[str]) -> Launch:
    if ctx.mcp is None:
        return launch
    path = _file(ctx, "mcp.json")
    text = json.dumps(mcp_config.claude_data(dict(ctx.mcp)), indent=2)
    # `=`: --mcp-config takes several values and would swallow a following word.
    return Launch([*launch.argv, f"--mcp-config={path}"], launch.env, launch.stdin,
                  {**launch.files, path: text + "\n"}, path)


def _toml(value: Any) -> str:
    """A TOML inline value for `codex -c key=VALUE` (JSON strings are valid TOML strings)."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value)


def _codex_tmpdir(launch: Launch, ctx: Context) -> Launch:
    """Codex's own sandbox runs its commands through a `codex-linux-sandbox` alias it makes in
    its home, and refuses to make it when that home is under the temporary directory (TMPDIR,
    else /tmp): then, where a system bubblewrap is installed, every command fails with
    "bwrap: execvp codex-linux-sandbox: No such file or directory" (issue 26 item 6; a HOME
    under /tmp, as in tests and throwaway accounts). A TMPDIR of its own, beside this agent's
    per-run files, puts the home outside it."""
    env = launch.env
    named = env.get("CODEX_HOME") or (f"{env['HOME']}/.codex" if env.get("HOME") else None)
    home, tmp = Path(named or "."), Path(env.get("TMPDIR") or "/tmp")
    if not home.is_absolute() or not (home == tmp or tmp in home.parents):
        return launch
    mine = ctx.run_dir / f"{ctx.agent}-tmp"
    note = mine / "README"
    return Launch(launch.argv, {**env, "TMPDIR": str(mine)}, launch.stdin,
                  {**launch.files, note: "Codex's TMPDIR for this agent (gitliza: its home is "
                                         "under the system's temporary directory)\n"},
                  launch.mcp_config)


def _codex(launch: Launch, perms: Permissions, ctx: Context, _cmd: Sequence[str]) -> Launch:
    argv = list(launch.argv)
    if perms is Permissions.WORKTREE and ctx.contained:
        # gitliza's sandbox holds it (docs/security.md); Codex's own would fail every command
        # ("bwrap: setting up uid map: Operation not permitted"), so it runs without one.
        argv[argv.index("workspace-write")] = "danger-full-access"
    elif perms is Permissions.WORKTREE:
        # workspace-write keeps `.git` (and a worktree's resolved gitdir) read-only: give back
        # exactly what committing and `git liza` write (measured with `codex sandbox`).
        argv += ["-c", f"sandbox_workspace_write.writable_roots={_toml(writable_git_roots(ctx))}"]
        launch = _codex_tmpdir(launch, ctx)
    # Codex's shell drops variables whose names contain KEY/SECRET/TOKEN (GIT_CONFIG_KEY_0);
    # `set` is applied after that filter.
    alias = {k: v for k, v in launch.env.items() if k.startswith("GIT_CONFIG_")}
    argv += ["-c", f"shell_environment_policy.set={_toml(alias)}"]
    mcp = None
    files = dict(launch.files)
    if ctx.mcp is not None:
        base = f"mcp_servers.{MCP_SERVER}"
        argv += ["-c", f"{base}.command={_toml(ctx.mcp['command'])}",
                 "-c", f"{base}.args={_toml(ctx.mcp['args'])}",
                 "-c", f"{base}.env={_toml(ctx.mcp['env'])}",
                 # Codex starts a turn without waiting for its MCP servers, and tool_search
                 # indexes only the servers connected by then (gitliza's takes a few seconds):
                 # a required server is waited for before the first turn (and fails it loudly),
                 # with room for a slow start on a loaded machine.
                 "-c", f"{base}.required=true", "-c", f"{base}.startup_timeout_sec=60"]
        if perms is not Permissions.OWN:
            argv += ["-c", f'{base}.default_tools_approval_mode="approve"']
        mcp = _file(ctx, "mcp.toml")
        files[mcp] = mcp_config.render(".toml", mcp_config.codex_data(dict(ctx.mcp)))
    return Launch(argv, launch.env, launch.stdin, files, mcp)


GEMINI_POLICY = """# gitliza --permissions worktree: the shell is allowed (headless, a tool that would ask is
# denied); --approval-mode auto_edit approves the edit tools, which stay inside the workspace.
[[rule]]
toolName = "run_shell_command"
decision = "allow"
priority = 100
"""


def _gemini(launch: Launch, perms: Permissions, ctx: Context, _cmd: Sequence[str]) -> Launch:
    argv, files = list(launch.argv), dict(launch.files)
    if perms is Permissions.WORKTREE:
        # A policy file of the user tier (`--policy`; the settings' tools.allowed is deprecated).
        policy = _file(ctx, "gemini-policy.toml")
        argv += ["--policy", str(policy)]
        files[policy] = GEMINI_POLICY
    if ctx.mcp is None:
        return Launch(argv, launch.env, launch.stdin, files)
    ours = mcp_config.gemini_data(dict(ctx.mcp), ctx.cwd, trust=perms is not Permissions.OWN)
    # Per-run settings as the *system* settings file (highest precedence; objects and arrays
    # merge with the user's): what the administrator's file said is kept underneath.
    settings = _merge(_json_object(ctx.system_settings), ours)
    path = (ctx.private_dir or ctx.run_dir) / f"{ctx.agent}-gemini-settings.json"
    env = {**launch.env, "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(path)}
    files[path] = json.dumps(settings, indent=2) + "\n"
    return Launch(argv, env, launch.stdin, files, path)


def _vibe(launch: Launch, perms: Permissions, ctx: Context, _cmd: Sequence[str]) -> Launch:
    # Vibe reads VIBE_* variables as a config layer above the user's and the project's
    # config.toml (lists of servers merge by name), so the user's home and keys stay in use.
    env = dict(launch.env)
    tools: dict[str, Any] = {}
    if perms is Permissions.WORKTREE:
        tools["bash"] = {"permission": "always"}
    files = dict(launch.files)
    mcp = None
    if ctx.mcp is not None:
        data = mcp_config.vibe_data(dict(ctx.mcp))
        env["VIBE_MCP_SERVERS"] = json.dumps(data["mcp_servers"])
        if perms is not Permissions.OWN:
            for t in ctx.tools:  # vibe names an MCP tool SERVER_TOOL
                tools[f"{MCP_SERVER}_{t}"] = {"permission": "always"}
        mcp = _file(ctx, "mcp.toml")
        files[mcp] = mcp_config.render(".toml", data)
    if tools:
        env["VIBE_TOOLS"] = json.dumps(tools)
    return Launch(launch.argv, env, launch.stdin, files, mcp)


def _plain(launch: Launch, perms: Permissions, ctx: Context, cmd: Sequence[str]) -> Launch:
    """`-- COMMAND`: the MCP configuration in the format of the CLI it names (a known
    executable), else the common `mcpServers` JSON; the program finds it in $LIZA_MCP_CONFIG."""
    if ctx.mcp is None:
        return launch
    known = for_command(cmd[0]) if cmd else None
    kind = known.wiring if known is not None else "claude"
    name, text = mcp_config.for_entry(kind, dict(ctx.mcp), ctx.cwd)
    path = _file(ctx, "mcp" + Path(name).suffix)
    return Launch(launch.argv, launch.env, launch.stdin, {**launch.files, path: text}, path)


_WIRING: dict[str, Callable[[Launch, Permissions, Context, Sequence[str]], Launch]] = {
    "claude": _claude, "codex": _codex, "gemini": _gemini, "vibe": _vibe, "plain": _plain,
}


def _json_object(text: str | None) -> dict[str, Any]:
    try:
        data = json.loads(text) if text else {}
    except ValueError:  # gemini tolerates comments; an unreadable file is left out
        return {}
    return data if isinstance(data, dict) else {}


def _merge(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in top.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        elif isinstance(v, list) and isinstance(out.get(k), list):
            out[k] = [*out[k], *(x for x in v if x not in out[k])]
        else:
            out[k] = v
    return out
