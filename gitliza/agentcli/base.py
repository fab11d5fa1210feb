"""What every agent CLI module fills in: the `Profile` (one CLI as data and a few pure functions)
and the types its launch is built from (`Context` in, `Launch` out), the usage stream a CLI's
machine-readable output is read with, and the MCP formats several CLIs share.

Pure: nothing here starts a process, writes a file or reads one; the callers (team/, sandbox/,
access/, services/) do that with what a profile says.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from gitliza.core.agents import faults
from gitliza.core.agents.faults import End, Sign

SERVER_NAME = "gitliza"  # gitliza's MCP server's name in every CLI's configuration
COMMON_MCP_FILE = ".mcp.json"  # the `mcpServers` JSON many programs read (the fallback format)


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
    # The text of the system settings file the CLI would read now (Profile.system_settings).
    system_settings: str | None = None
    # The committer identity as the repository's config gives it: Gemini's shell runs git with
    # GIT_CONFIG_GLOBAL=/dev/null (no ~/.gitconfig), but keeps this list.
    identity: tuple[tuple[str, str], ...] = ()
    # Where a settings file goes that the CLI skips below a group/world-writable directory (a
    # repository under /tmp; Profile.system_settings); None: run_dir.
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


Wiring = Callable[[Launch, Permissions, Context, Sequence[str]], Launch]


def run_file(ctx: Context, suffix: str) -> Path:
    """A per-run file of this agent, beside its prompts."""
    return ctx.run_dir / f"{ctx.agent}-{suffix}"


# -- usage: a CLI's JSON lines, read while it runs -----------------------------------------------
_SHOW = 300  # characters of a tool's input or output shown in the log


@dataclass
class Counted:
    input: int = 0
    output: int = 0
    cached: int = 0
    cost: int | None = None  # micro-dollars
    model: str | None = None

    def at_least(self, input: int, output: int, cached: int, cost: int | None = None) -> None:
        """Never less than what was counted before: a `result` event a tool forged into the CLI's
        output (any process of the agent can write there) can raise the count, never lower it
        below what the CLI emitted."""
        self.input, self.output = max(self.input, input), max(self.output, output)
        self.cached = max(self.cached, cached)
        if cost is not None:
            self.cost = max(self.cost or 0, cost)

    def add(self, other: Counted) -> None:
        self.input += other.input
        self.output += other.output
        self.cached += other.cached
        if other.cost is not None:
            self.cost = (self.cost or 0) + other.cost
        self.model = self.model or other.model


class Stream:
    """One CLI's JSON lines: `line` renders an event for the log and counts what it says."""

    def __init__(self) -> None:
        self.counted = Counted()

    def line(self, event: dict[str, Any]) -> str | None:
        raise NotImplementedError

    def finish(self) -> None:
        """After the run: anything the stream holds back until its end."""


def count(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0


def cost(v: Any) -> int | None:
    """A cost in USD as micro-dollars."""
    # Here: the command table lists the CLIs (`--cli`'s help), and core.agents.costs loads the model.
    from decimal import Decimal

    from gitliza.core.agents import costs as core_usage
    if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0:
        return int((Decimal(str(v)) * core_usage.MICRO).to_integral_value())
    return None


def table(d: Any, key: str) -> dict[str, Any]:
    v = d.get(key) if isinstance(d, dict) else None
    return v if isinstance(v, dict) else {}


def short(v: Any) -> str:
    text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= _SHOW else text[:_SHOW] + "..."


@dataclass(frozen=True)
class Export:
    """A CLI that writes its usage to files rather than to its output: `words` and a directory
    go on its command line; after the run `parse` counts what it wrote there in `file`."""

    words: tuple[str, ...]
    file: str
    parse: Callable[[str], Counted]


# -- why a run ended: one line of the CLI's output read into a sign (core/agents/faults.py) -----
# (the line's JSON event or None, its text, the time now in epoch seconds) -> a sign or None.
Reader = Callable[[dict[str, Any] | None, str, float], Sign | None]


def plain_reads(event: dict[str, Any] | None, text: str, now: float) -> Sign | None:
    """What any program's plain output says: a `gitliza-end:` line, else an error it prints
    (a rate limit, a refused key, a refused connection). A CLI's JSON events are its own
    module's to read."""
    if event is not None:
        return None
    return faults.command_sign(text) or faults.text_sign(text, now)


def status_sign(status: Any, message: str, now: float, reset: int | None = None) -> Sign | None:
    """An HTTP status a CLI reports for the provider's answer."""
    if not isinstance(status, int) or isinstance(status, bool):
        return None
    end = {401: End.NOT_LOGGED_IN, 403: End.NOT_LOGGED_IN, 429: End.RATE_LIMITED,
           529: End.OVERLOADED}.get(status)
    if end is None and 500 <= status < 600:
        end = End.OVERLOADED
    if end is None:
        return None
    said = faults.text_sign(message, now)
    if end == End.RATE_LIMITED and said is not None and said.end == End.QUOTA:
        end = End.QUOTA  # OpenAI's insufficient_quota is a 429 too
    return Sign(end, " ".join(message.split())[:300] or f"HTTP {status}",
                reset if reset is not None else (said.reset if said else None))


def any_env(env: Mapping[str, str], *names: str) -> bool:
    return any(env.get(n) for n in names)


# -- MCP configuration ----------------------------------------------------------------------------
def mcp_servers_json(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The common `mcpServers` JSON (Claude Code's `.mcp.json`, and what an unknown program
    gets)."""
    return {"mcpServers": {SERVER_NAME: {"type": "stdio", **entry}}}


def render(filename: str, data: Mapping[str, Any]) -> str:
    if filename.endswith(".toml"):
        import tomli_w
        return tomli_w.dumps(data)
    return json.dumps(data, indent=2) + "\n"


def toml_value(value: Any) -> str:
    """A TOML inline value for a `-c key=VALUE` override (JSON strings are valid TOML strings)."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value)


def _no_wiring(launch: Launch, _perms: Permissions, _ctx: Context,
               _cmd: Sequence[str]) -> Launch:
    return launch


# -- the profile -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Profile:
    """One agent CLI, everything gitliza knows of it. A module of gitliza/agentcli/ that defines
    `PROFILE` is a CLI (registry.py finds it); nothing outside this folder names one."""

    name: str  # `--cli NAME`, the board's `models`, the usage records
    executable: str
    # The launch (team/): the words of a non-interactive run, how it takes the prompt, the
    # words per `--permissions` choice, how it takes a model ((): it cannot).
    headless: tuple[str, ...]
    prompt: Prompt
    # Adds the CLI's own MCP and permission configuration to a launch (files, -c overrides,
    # environment); pure.
    wire: Wiring = _no_wiring
    prompt_words: tuple[str, ...] = ()  # before the prompt (FILE: before the path)
    postures: Mapping[Permissions, tuple[str, ...]] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    model_words: tuple[str, ...] = ("--model",)
    model: str | None = None  # the model this launch names (the board's `models`, `--model`)
    # A system settings file read before the launch and kept under ours: (the variable that
    # names it, its default path); the CLI skips one below a group/world-writable directory.
    system_settings: tuple[str, str] | None = None
    # MCP (access/mcp_config.py): the file a person puts the server in (relative to the project
    # or the home) and its data for one server entry and the project directory.
    mcp_file: str = ""
    mcp_data: Callable[[Mapping[str, Any], str], dict[str, Any]] | None = None
    # Usage (team/usage.py): the stream of its JSON output and the words that turn it on, or a
    # usage export.
    stream: Callable[[], Stream] | None = None
    stream_flags: tuple[str, ...] = ()
    export: Export | None = None
    # The sandbox (sandbox/box.py): the login and configuration copied into an agent's private
    # home, relative to the home; the CLI's own variable that moves its state directory and
    # that directory ((variable, ".dir")).
    state: tuple[str, ...] = ()
    home_env: tuple[str, str] | None = None
    # `--sandbox model` (sandbox/net.py): its model API hosts (host:port), the variables that
    # name a model endpoint, and the configuration file (relative to the home) whose endpoints
    # `config_urls` reads from its text.
    hosts: tuple[str, ...] = ()
    base_url_env: tuple[str, ...] = ()
    config_file: str | None = None
    config_urls: Callable[[str], list[str]] | None = None
    # Where it keeps its own transcript of a run (services/agentlog.py): from the environment,
    # the home and the working directory.
    transcript: Callable[[Mapping[str, str], str, Path], str] | None = None
    # Why a run ended (core/agents/faults.py): one line of its output read into a sign; a CLI reads
    # its own JSON events, and plain text as any program's.
    reads: Reader = plain_reads
    exits: Mapping[int, End] = field(default_factory=dict)  # its own exit codes' meaning
    login: str = ""  # how a person logs it in (the alarm's fix)
    # Whether it has a login, without a request (`team`'s start check): from the environment and
    # a reader of files under the home (relative path -> text or None); None: ready, else why.
    logged_in: Callable[[Mapping[str, str], Callable[[str], str | None]], str | None] | None = None
