"""One agent's sandbox for one launch: its private HOME and /tmp, the view of the repository its
role gets (policy.py), a coder's own git dir (gitview.py), and the broker (broker.py) its
`git liza` and MCP calls go through.

`Sandbox` lives as long as a supervisor: it checks once that bubblewrap works (else exit 5) and
`open`s a `Box` per agent session, which wraps the launch and, when the agent exits, brings a
coder's commits onto its task branch and closes the channel.
"""
from __future__ import annotations

import os
import pwd
import shlex
import shutil
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pygit2

from gitliza import agentcli
from gitliza.core.board import Board
from gitliza.core.states import Role
from gitliza.git.repository import open_repository, reopened
from gitliza.sandbox import (bwrap, cgroup, diskwatch, gitview, net, policy, reexpose, seccomp,
                             usernet)
from gitliza.sandbox.broker import Broker, client_command
from gitliza.sandbox.policy import BROKER_INSIDE, SandboxMode
from gitliza.services.agentlog import LOGS_DIR, PROMPTS_DIR


def cli_state(cli: str | None) -> tuple[str, ...]:
    """The CLI's login and configuration (its profile's `state`), copied from the user's home
    into an agent's private home at every launch (credentials rotate); what the CLI writes there
    stays private to the agent."""
    p = agentcli.find(cli)
    return p.state if p is not None else ()


def cli_home_env(cli: str | None) -> tuple[str, str]:
    """A CLI's own variable that moves its state directory out of ~/DIR, and DIR (its profile's
    `home_env`, e.g. CODEX_HOME): where the user set it, the login is copied from there, and
    inside the variable names DIR in the agent's private home (writable, its own), since the
    path outside is hidden or read-only in the sandbox. ("", "") for none."""
    p = agentcli.find(cli)
    return p.home_env if p is not None and p.home_env is not None else ("", "")


# Variables that lead out of the sandbox to the user's sessions (ssh-agent, D-Bus, the runtime
# dir) or into the hidden home.
DROP_ENV = ("SSH_AUTH_SOCK", "SSH_AGENT_PID", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR",
            "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
            "GNUPGHOME", "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE",
            "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES")
# gitliza's own secrets, never an agent's, whatever the mode (config sandbox_secret_env adds more):
# the web board's token would let an agent act as the human there.
SECRET_ENV = ("GITLIZA_WEB_TOKEN",)
OFF_WARNING = ("WARNING: --sandbox off: the agent runs with all of your rights (it can read "
               "every key in .git/liza/keys, move any ref, act as any agent); docs/security.md")


def limits(board: Board) -> policy.Limits:
    """The sandbox's limits as the board's config sets them (on by default: unset is the
    default; a limit is lifted by setting it high, up to 10^6)."""
    c, d = board.config, policy.DEFAULT_LIMITS
    return policy.Limits(c.sandbox_pids_max or d.pids, c.sandbox_memory_max_mb or d.memory_mb,
                         c.sandbox_tmp_max_mb or d.tmp_mb,
                         c.sandbox_checkout_max_mb or d.checkout_mb,
                         c.sandbox_checkout_max_files or d.checkout_files)


def host_ports(board: Board) -> tuple[int, ...]:
    """The host's loopback ports every agent reaches as its own in `on` (config
    sandbox_host_ports, e.g. a local model server's 11434; usernet.py)."""
    return usernet.parse_ports(board.config.sandbox_host_ports)


def secret_env(named: str | None) -> tuple[str, ...]:
    """The variables no agent gets: gitliza's own and those config names."""
    return (*SECRET_ENV, *(named or "").split())


# `.liza/`'s directories where each agent has its own files: no agent reads another's.
PRIVATE_DIRS = (LOGS_DIR, PROMPTS_DIR, "agent-usage")  # the last: team/usage.py REPORTS_DIR


def private_dirs(main: Path) -> tuple[Path, ...]:
    return tuple(d for d in (main / ".liza" / n for n in PRIVATE_DIRS) if d.is_dir())


def user_home() -> Path:
    return Path(pwd.getpwuid(os.getuid()).pw_dir)


def hidden_dirs() -> list[Path]:
    """What every sandbox hides: the user's home (and $HOME) and runtime dir."""
    hidden = [user_home(), Path(os.environ.get("HOME") or user_home())]
    runtime = Path(f"/run/user/{os.getuid()}")
    if runtime.is_dir():
        hidden.append(runtime)
    return [h for h in dict.fromkeys(hidden) if h != Path("/") and h.is_dir()]


_said: list[str] = []


@dataclass(frozen=True)
class Session:
    """What a box needs of the session it wraps."""

    agent: str
    role: Role
    worktree: Path  # the agent's cwd
    task: str | None
    main: Path
    repo: pygit2.Repository
    common: Path
    cli: str | None  # the CLI whose login to copy in (its profile's name), or None
    env: Mapping[str, str]  # the agent's environment as the supervisor built it
    gitliza: tuple[str, ...]  # the command that runs gitliza outside
    mcp: Mapping[str, Any] | None  # the real MCP server entry (run by the broker)
    refused: Callable[[str, bool], None]
    network: SandboxMode = SandboxMode.ON  # the sandbox mode's network: on, model, offline
    limits: policy.Limits = policy.Limits()
    host_ports: tuple[int, ...] = ()  # `on`: the host's loopback ports forwarded (usernet.py)


class Box:
    def __init__(self, exe: str, s: Session) -> None:
        self.exe, self.s = exe, s
        base = gitview.agent_dir(s.common, s.agent)
        self.home, self.tmp = base / "home", base / "tmp"
        for d in (base, self.home, self.tmp):
            d.mkdir(parents=True, exist_ok=True, mode=0o700)
        shutil.rmtree(self.tmp, ignore_errors=True)  # a fresh /tmp per session
        self.tmp.mkdir(mode=0o700)
        _copy_login(s.cli, Path(s.env.get("HOME") or user_home()), self.home, s.env)
        self._importing = threading.Lock()
        self._warned = False
        self.coder: gitview.CoderRepo | None = None
        self.coder_git: policy.CoderGit | None = None
        if s.role == Role.CODER and s.task is not None:
            admin = Path(open_repository(s.worktree).path).resolve()
            self.coder_git, self.coder = gitview.build(s.repo, s.common, s.agent, s.task, admin)
        self.shim = base / "git-liza"
        self.shim.write_text("#!/bin/sh\nexec " + " ".join(map(shlex.quote, self.gitliza_inside))
                             + ' "$@"\n')
        self.shim.chmod(0o755)
        self.broker = Broker(s.agent, s.role, s.env, s.worktree, s.gitliza, s.mcp,
                             self.bring_in, s.refused)
        # The sandbox's processes and memory together, where a cgroup can be had (cgroup.py).
        self.cgroup = cgroup.make(f"gitliza-{s.agent}-{os.getpid()}-{time.monotonic_ns()}",
                                  s.limits.pids, s.limits.memory_mb)
        self.gate: net.Gate | None = None
        self.forwarded: list[int] = []
        self.watch: diskwatch.Watch | None = None
        # `on`: a network namespace of its own, its traffic out through slirp4netns (usernet.py)
        slirp = usernet.find() if s.network == "on" else None
        self.link = usernet.Link(slirp) if slirp is not None else None
        self.resolv = usernet.resolv_conf(base / "resolv.conf") if self.link else None
        if s.network == "on" and self.link is None and not _said:
            _said.append(usernet.MISSING)  # once a supervisor: the machine will not change
            s.refused(usernet.MISSING, False)
        if self.link is not None:
            model = net.allowed(s.cli, s.env, net.config_urls(s.cli, Path(
                s.env.get("HOME") or user_home())))
            self.forwarded = self._forwardable([*net.loopback_ports(model), *s.host_ports])
            if self.forwarded:
                self.gate = net.Gate(self.broker.dir / net.SOCKET, frozenset(
                    ("127.0.0.1", p) for p in self.forwarded), 0,
                    lambda line: s.refused(line, False))
        elif s.network == "model":
            allow = net.allowed(s.cli, s.env, net.config_urls(s.cli, Path(
                s.env.get("HOME") or user_home())))
            self.forwarded = self._forwardable(net.loopback_ports(allow))
            proxy = net.proxy_port(self.forwarded)
            self.gate = net.Gate(self.broker.dir / net.SOCKET, allow, proxy,
                                 lambda line: s.refused(line, False))

    def _forwardable(self, ports: Sequence[int]) -> list[int]:
        """`ports` but those the sandbox cannot listen on, each said once a session: the
        forwarder inside is never asked for one (net.forwardable)."""
        kept, dropped = net.forwardable(ports)
        for port in dropped:
            self.s.refused(net.unforwardable_line(port), False)
        return kept

    @property
    def gitliza_inside(self) -> tuple[str, ...]:
        """What `git liza` runs inside (the broker's client)."""
        return client_command(sys.executable)

    @property
    def mcp_inside(self) -> dict[str, Any] | None:
        """The MCP server entry an agent's CLI starts inside: the client, relaying."""
        if self.s.mcp is None:
            return None
        return {"command": sys.executable,
                "args": ["-I", "-m", "gitliza.sandbox.client", BROKER_INSIDE,
                         "--mcp"], "env": {}}

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        out = {k: v for k, v in env.items() if k not in DROP_ENV}
        out.update(HOME=str(self.home), TMPDIR="/tmp")
        var, d = cli_home_env(self.s.cli)
        if var and out.get(var):
            out[var] = str(self.home / d)
        if self.gate is not None and self.gate.proxy:
            out.update(net.proxy_env(self.gate.proxy))
        return out

    def wrap(self, argv: Sequence[str], env: Mapping[str, str],
             files: Sequence[Path] = ()) -> tuple[list[str], dict[str, str]]:
        """The bubblewrap argv running `argv`, and its environment."""
        hidden = hidden_dirs()
        shown, dropped = reexpose.needed(argv, env, files, hidden)
        if dropped and not self._warned:  # once a session: the same PATH at every launch
            self._warned = True
            self.s.refused(reexpose.dropped_warning(dropped), False)
        view = policy.View(
            role=self.s.role.value, cwd=self.s.worktree, main=self.s.main, common=self.s.common,
            common_entries=tuple(sorted(os.listdir(self.s.common))), home=self.home,
            tmp=self.tmp, run=self.broker.dir, hidden=tuple(hidden),
            reexpose=tuple(shown), coder_git=self.coder_git,
            network=self.s.network == "on" and self.link is None, shim=self.shim,
            resolv=_resolv_mount(self.resolv),
            shadowed=tuple(_on_path("git-liza", env)), private=private_dirs(self.s.main),
            own=tuple(files), tmp_max_mb=self.s.limits.tmp_mb)
        # Under the seccomp filter and the limits (seccomp.py); in `model` behind the forwarder
        # to the gate (net.py), which keeps its unix socket: it execs the filter's launcher.
        lim = self.s.limits
        command = seccomp.inside_command(sys.executable, list(argv), lim.pids, lim.memory_mb,
                                         await_net=self.link is not None)
        if self.gate is not None:
            command = net.inside_command(sys.executable, f"{BROKER_INSIDE}/{net.SOCKET}",
                                         self.gate.proxy, self.forwarded, command)
        argv = policy.bwrap_argv(self.exe, view, command)
        return (self.cgroup.wrap(argv) if self.cgroup else argv), self.env(env)

    def started(self, pid: int, stop: Callable[[str], None]) -> None:
        """The agent's sandbox started as `pid` (`stop` ends its run): its network attached."""
        if self.link is not None:
            why = self.link.attach(pid)
            if why is not None:
                self.s.refused(f"sandbox: the agent's network: {why}", False)
        lim = self.s.limits
        if self.coder is not None and lim.checkout_mb and lim.checkout_files:
            agent = self.s.agent
            self.watch = diskwatch.Watch(
                (self.s.worktree, self.coder.shadow), lim.checkout_mb, lim.checkout_files,
                lambda why: stop(f"sandbox: {agent} reached its limit: {why}"))

    def bring_in(self) -> None:
        """A coder's commits onto its real task branch (before a brokered write, at the end;
        one at a time: the broker's threads and the session's end may race)."""
        if self.coder is not None:
            with self._importing:
                gitview.import_branch(reopened(self.s.repo), self.coder)

    def close(self) -> None:
        if self.watch is not None:
            self.watch.close()
            if self.watch.why is not None:
                self.s.refused(f"sandbox: {self.s.agent} reached its limit: {self.watch.why}",
                               False)
        try:
            self.bring_in()
        finally:
            if self.cgroup is not None:
                hits = self.cgroup.hits()
                if hits:  # the run was held (forks failed, or the OOM killer ended it)
                    self.s.refused(f"sandbox: {self.s.agent} reached its limit: "
                                   f"{', '.join(hits)} (config sandbox_*)", False)
                self.cgroup.close()
            if self.coder is not None:  # what could not come in: the attic (gitview.py)
                kept = gitview.keep_unimported(reopened(self.s.repo),
                                               self.s.common, self.coder.shadow)
                if kept:
                    self.s.refused(f"the coder's own git dir held work its task branch lacks: "
                                   f"kept in the attic ({', '.join(kept)})", False)
            if self.gate is not None:
                self.gate.close()
            if self.link is not None:
                self.link.close()
            self.broker.close()


class Sandbox:
    """A supervisor's sandboxing: `on` (bubblewrap, checked now: exit 5 if it cannot start),
    `model` (the same in a network namespace of its own, reaching only its model's API hosts
    through its supervisor: net.py), `offline` (a network namespace of its own: the agent
    reaches nothing but its supervisor's socket) or `off` (the human's explicit choice, warned
    at every launch)."""

    def __init__(self, mode: SandboxMode) -> None:
        self.mode = mode
        self.on = mode != SandboxMode.OFF
        if mode == SandboxMode.MODEL:
            net.check_allow(os.environ)
        self.exe = bwrap.require() if self.on else ""

    def open(self, s: Session) -> Box | None:
        if not self.on:
            return None
        return Box(self.exe, replace(s, network=self.mode))


parse = SandboxMode.parse  # `--sandbox` text -> SandboxMode, once (policy.py)


def _login_source(cli: str | None, src: Path, rel: str, env: Mapping[str, str]) -> Path:
    """Where the user keeps `rel` (a path of the CLI's state under the home): under the CLI's own
    variable where it is set (CODEX_HOME/auth.json; CLAUDE_CONFIG_DIR holds .claude.json too)."""
    var, d = cli_home_env(cli)
    moved = env.get(var) if var else None
    if not moved:
        return src / rel
    return Path(moved) / (rel[len(d) + 1:] if rel.startswith(d + "/") else rel)


def _copy_login(cli: str | None, src: Path, home: Path, env: Mapping[str, str]) -> None:
    """The CLI's login into the agent's persistent home, which the agent wrote last time: never
    through a link it planted there (a link on the way is removed, the file made anew with
    O_NOFOLLOW | O_EXCL), so the copy lands in its home and nowhere else. A state directory the
    user moved with the CLI's variable (cli_home_env) lands at its usual place in that home."""
    var, state_dir = cli_home_env(cli)
    for rel in cli_state(cli):
        f = _login_source(cli, src, rel, env)
        if var and env.get(var) and not rel.startswith(state_dir + "/"):
            rel = f"{state_dir}/{rel}"  # .claude.json lives in CLAUDE_CONFIG_DIR when that is set
        if not f.is_file():
            continue
        d = home
        for part in Path(rel).parent.parts:
            d = d / part
            if d.is_symlink() or (d.exists() and not d.is_dir()):
                d.unlink()
            d.mkdir(exist_ok=True, mode=0o700)
        dest = home / rel
        if dest.is_dir() and not dest.is_symlink():
            shutil.rmtree(dest)
        elif os.path.lexists(dest):
            dest.unlink()
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(f.read_bytes())


def _resolv_mount(ours: Path | None) -> tuple[Path, Path] | None:
    """Our resolv.conf over the host's (where its link leads: bubblewrap mounts on a file)."""
    host = Path(os.path.realpath("/etc/resolv.conf"))
    return (ours, host) if ours is not None and host.is_file() else None


def _on_path(name: str, env: Mapping[str, str]) -> list[Path]:
    """Every executable `name` in the directories of PATH, where its links lead: bubblewrap
    cannot make a mount point under a symlink ("Can't mkdir parents": a virtualenv reached through
    a link never started an agent), and shadowing the file shadows every name for it."""
    out = []
    for entry in (env.get("PATH") or "").split(os.pathsep):
        f = Path(entry) / name
        if entry and os.path.isabs(entry) and os.path.isfile(f) and os.access(f, os.X_OK):
            out.append(Path(os.path.realpath(f)))
    return list(dict.fromkeys(out))
