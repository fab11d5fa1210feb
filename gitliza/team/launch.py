"""`git liza team`: a whole team from one command, one `git liza agent` supervisor per member.

Each member is a real supervisor process (`python -m gitliza agent ROLE`, the same program a user
starts by hand), so a team started here behaves exactly like supervisors started in separate
terminals: same waiting, claiming, heartbeats, restarts and generation tokens. This module only
starts them, labels their output, forwards a stop, and reports how they ended. On several
machines, each runs `git liza team` with its own `--prefix` (ids must differ: a second supervisor
for a live id is refused) and shares the board through a sync remote.

A stop (SIGINT/SIGTERM, gitliza/team/stopping.py) sends SIGTERM to every supervisor; one still
running KILL_AFTER seconds later is killed, with its agent's process group. A member that exits
non-zero before it took its token (it failed at start) stops the others: a team never runs short
of a member without saying so.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import IO, Callable

from gitliza import atomic, start_command
from gitliza.agentcli.base import DEFAULT_PERMISSIONS
from gitliza.core.agents import teammodels
from gitliza.sandbox.policy import SandboxMode
from gitliza.services import procinfo
from gitliza.team import orphans
from gitliza.team.options import Member, TeamOptions, members
from gitliza.team.stopping import spawn_blocked

__all__ = ["KILL_AFTER", "Member", "Team", "TeamOptions", "members", "supervisor_argv"]

# Seconds after a stop at which a supervisor still running is SIGKILLed (each gives itself 3.5 s,
# supervisor.STOP_DEADLINE): everything is gone within 5 s of the signal.
KILL_AFTER = 4.0


def supervisor_argv(member: Member, opts: TeamOptions) -> list[str]:
    """The member's `git liza agent` command line, rendered from the team's options record (each
    option as a flag, a default left out). The board's `models` (in the record when the team
    names no `--cli` and no `-- COMMAND`) give the member's CLI and model
    (gitliza/core/agents/teammodels.py)."""
    argv = [*start_command(), "agent", member.role]  # -P: see start_command
    cli = opts.cli
    chosen = teammodels.chain_for_member(opts.models, member.role, member.agent) \
        if cli is None and not opts.command else ()
    if len(chosen) > 1:  # a fallback list: each CLI with its model (team/fallback.py)
        cli = teammodels.chain_text(chosen)
    elif chosen:
        cli = chosen[0][0]
        if chosen[0][1]:
            argv += ["--model", chosen[0][1]]
    if opts.takeover:
        argv.append("--takeover")
    if member.pool:
        argv.append("--pool")
    if cli:
        argv += ["--cli", cli]
    if opts.mcp:
        argv.append("--mcp")
    if opts.permissions != DEFAULT_PERMISSIONS:
        argv += ["--permissions", opts.permissions.value]
    if opts.no_sync:
        argv.append("--no-sync")
    if opts.sandbox != SandboxMode.ON:
        argv += ["--sandbox", opts.sandbox.value]
    if opts.labels:
        argv += ["--labels", ",".join(opts.labels)]
    if opts.command:
        argv += ["--", *opts.command]
    return argv


class Team:
    """The running supervisors of one `git liza team`."""

    def __init__(self, repo: Path, opts: TeamOptions, write: Callable[[str], None]) -> None:
        self.repo, self.opts, self._write = repo, opts, write
        self.team, self.logs = list(opts.crew), opts.logs
        self._argv = {m.agent: supervisor_argv(m, opts) for m in self.team}
        self.pool = opts.pool_sizes()  # role word -> at most this many running
        self.prefix = opts.prefix
        self.scaling = bool(self.pool)  # the pool may still start members (Scaler.stop ends it)
        self._env: dict[str, str] = {}
        self.started_pool: list[tuple[float, str]] = []  # (time.time(), agent) per pool start
        self.ended: dict[str, float] = {}  # agent -> time.time() it exited
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self._pumps: list[threading.Thread] = []
        self._lock = threading.Lock()  # whole output lines
        self._procs_lock = threading.Lock()  # the members started, and whether we stop
        self.stopping = False
        self._started: set[str] = set()  # members that took their token
        self._last: dict[str, str] = {}  # each member's last line (its error, if it failed)
        # (agent, exit code, its last line): the first member that failed at start
        self.failed: tuple[str, int, str] | None = None

    def start(self) -> Team:
        logs: dict[str, IO[bytes]] = {}
        if self.logs is not None:  # opened before any start: a refused file starts nobody
            self.logs.mkdir(parents=True, exist_ok=True, mode=atomic.PRIVATE_DIR)
            for m in self.team:  # 0600 (what the agents saw), never through a link
                logs[m.agent] = atomic.open_file(self.logs / f"{m.agent}.log", append=True)
        # LIZA_SANDBOX_ALLOW (the hosts `--sandbox model` adds, sandbox/net.py) is every
        # supervisor's too; the sandbox mode itself goes on their command lines (--sandbox).
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("LIZA_") or k == "LIZA_SANDBOX_ALLOW"}
        self._env = env
        for m in self.team:
            with self._procs_lock:  # no member starts after a stop (it would miss the SIGTERM)
                if self.stopping:
                    break
                self._spawn(m, env, logs.get(m.agent))
        return self

    def _spawn(self, m: Member, env: dict[str, str], log: IO[bytes] | None) -> None:
        # A supervisor outlives a killed `git liza team` no more than an agent outlives its
        # supervisor: SIGTERM, so that it stops its agent and gives its token back.
        argv, preexec = procinfo.with_parent_death(self._argv[m.agent], signal.SIGTERM)
        p = spawn_blocked(lambda: subprocess.Popen(
            argv, cwd=self.repo, env={**env, "LIZA_AGENT_ID": m.agent}, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, preexec_fn=preexec))
        self.procs[m.agent] = p
        t = threading.Thread(target=self._pump, args=(m.agent, p.stdout, log), daemon=True)
        t.start()
        self._pumps.append(t)
        self._line(m.agent, f"started `git liza agent {m.role}` (pid {p.pid})")

    def add(self, m: Member) -> bool:
        """Start one more supervisor (the pool's); False once the team stops."""
        import time
        with self._procs_lock:
            if self.stopping:
                return False
            self._argv[m.agent] = supervisor_argv(m, self.opts)
            self.team.append(m)
            log = None
            if self.logs is not None:
                log = atomic.open_file(self.logs / f"{m.agent}.log", append=True)
            self._spawn(m, self._env, log)
            self.started_pool.append((time.time(), m.agent))
        return True

    def running(self, role: str) -> list[Member]:
        """The members of `role` whose supervisor is still running."""
        with self._procs_lock:
            return [m for m in self.team if m.role == role and m.agent in self.procs
                    and self.procs[m.agent].poll() is None]

    def stop(self) -> None:
        """SIGTERM to every supervisor: each stops its agent and leaves the board consistent.
        Any thread (the stop relay, a pump)."""
        with self._procs_lock:
            self.stopping = True
            procs = list(self.procs.values())
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)

    def kill_rest(self) -> list[str]:
        """SIGKILL the supervisors still running (a stop past its deadline) and the agent
        process groups they recorded (their agents die with them by the parent-death signal,
        what the agents started does not); the members killed."""
        killed = []
        with self._procs_lock:
            self.stopping = True
            procs = dict(self.procs)
        for agent, p in procs.items():
            if p.poll() is None:
                p.kill()
                killed.append(agent)
                orphans.stop_recorded(self.repo / ".liza", agent, signal.SIGKILL)
        return killed

    def wait(self) -> dict[str, int]:
        """Every supervisor's exit code, once all exited and the pool starts no more."""
        import time
        codes: dict[str, int] = {}
        while True:
            with self._procs_lock:
                procs = dict(self.procs)
            for agent, p in procs.items():
                if agent not in codes:
                    codes[agent] = p.wait()
                    self.ended.setdefault(agent, time.time())
            with self._procs_lock:
                if len(self.procs) == len(codes) and not (self.scaling and not self.stopping):
                    break
            time.sleep(0.2)  # a pool member may still be started: look again
        for t in list(self._pumps):
            t.join(timeout=10)
        return codes

    def _pump(self, agent: str, stream: IO[bytes] | None, log: IO[bytes] | None) -> None:
        assert stream is not None
        taken = f"supervising {agent} ("
        try:
            for raw in iter(stream.readline, b""):
                if log is not None:
                    log.write(raw)
                    log.flush()
                text = raw.decode("utf-8", "replace").rstrip("\n")
                # The supervisor labels its own lines already; the rest (a traceback) gets ours.
                text = text.removeprefix(f"[{agent}] ")
                if text.strip():
                    self._last[agent] = text.strip()
                if text.startswith(taken):
                    self._started.add(agent)
                self._line(agent, text)
        finally:
            if log is not None:
                log.close()
        code = self.procs[agent].wait()  # its output ended: it exited (or is about to)
        if code != 0 and agent not in self._started and not self.stopping:
            with self._procs_lock:
                first = self.failed is None
                if first:
                    self.failed = (agent, code, self._last.get(agent, "no output"))
            if first:
                self._line(agent, "failed at start; stopping the others")
                self.stop()

    def _line(self, agent: str, text: str) -> None:
        with self._lock:  # whole lines, never two supervisors' output interleaved in one
            self._write(f"[{agent}] {text}\n")
