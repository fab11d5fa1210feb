"""Issue 48's scenario, for real: a fleet of three machines on one host (a script and a slow test).

    python3 -m benchmarks.fleet_scenario [--net auto|netns|relay] [--keep] [--json]

Three clones (machines a, b, c: `liza.machine` each) of one bare remote with the server hook,
served by a real `git daemon`. Where `ip netns` works (root), each machine runs in its own network
namespace joined to the host by a veth pair, and reaches the daemon through it; cutting a machine
off takes its link down (a cable pulled: every connection fails at once, nothing else changes).
Elsewhere (`--net relay`) each machine's remote URL leads to a TCP relay of its own on 127.0.0.1,
which the cut closes (connections refused) and the heal opens again.

A `git liza team` on each machine (a coder and a code reviewer each by default, `coders`; scripted
agents doing ~8 s of work per task,
writing a progress line every second and committing after the second), 12 tasks, lease 30 s,
`follow_interval` and `wip_snapshot_interval` 2 s, no cron of `git liza sync` anywhere: only the
teams' own remote followers. Then:

1. B is killed whole (SIGKILL of every process of the machine: team, supervisors, agents,
   follower) while its coder is a snapshot and a check (plus 1.5 s) past its first commit of a
   task;
2. once another machine took B's task over, B comes back (the same team again);
3. once the 12 tasks are all claimed, the human on A adds 6 more; B and C are idle then;
4. once a coder of C is at work on one of them, C is cut off from the remote for 45 s;
5. once every task is merged, the human completes the goal on A; every team exits by itself.

Printed figures: time for an idle machine to notice new work, work B lost (seconds of progress not
on the remote when it died), ops dropped and said, duplicate work (seconds two coders worked one
task at once), takeovers. `run()` returns them and what the checks found (the slow test,
tests/team/test_fleet.py, asserts them; docs/multi-machine.md gives the measured figures).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

BIN = Path(sys.executable).parent
MACHINES = ("a", "b", "c")
MACHINES_EVERY = 2.0  # seconds between two looks of `git liza machines` on A
LAG_BOUND = 15  # seconds a live, connected machine's board may trail the remote's (issue 48)
INTEG = "integration"

AGENT = r"""#!/bin/sh
# A scripted agent: acts only through git and `git liza`, logs what it did to {log}.
cat > /dev/null 2>&1 || true
log() {{ echo "$(date +%s.%N) $LIZA_AGENT_ID $LIZA_TASK_ID $*" >> {log}; }}
if [ "$LIZA_ROLE" != coder ]; then
  if git liza verdict "$LIZA_TASK_ID" approve; then log verdict ok; else log verdict fail $?; fi
  exit 0
fi
log start
trap 'log end; exit 143' TERM INT HUP
mkdir -p "$LIZA_TASK_ID"
i=0
while [ $i -lt {work} ]; do
  echo "$(date +%s.%N) $LIZA_AGENT_ID" >> "$LIZA_TASK_ID/progress.txt"
  if [ $i = 1 ]; then
    git add -A && git commit -qm "$LIZA_TASK_ID: first half by $LIZA_AGENT_ID" && log committed
  fi
  sleep 1 & wait $!  # (a TERM runs the trap at once, not after the sleep: a precise end)
  i=$((i+1))
done
git add -A && git commit -qm "$LIZA_TASK_ID: done by $LIZA_AGENT_ID"
if git liza submit "$LIZA_TASK_ID"; then log submit ok; else log submit fail $?; fi
log end
"""


def _env() -> dict[str, str]:
    e = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
             GIT_AUTHOR_NAME="Fleet", GIT_AUTHOR_EMAIL="fleet@liza.invalid",
             GIT_COMMITTER_NAME="Fleet", GIT_COMMITTER_EMAIL="fleet@liza.invalid",
             LIZA_SANDBOX="off")  # the scripted agents log outside their worktrees
    for k in [k for k in e if k.startswith("LIZA_") and k != "LIZA_SANDBOX"]:
        del e[k]
    return e


def _git(cwd: Path, *args: str, check: bool = True) -> str:
    r = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=_env())
    if check and r.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} in {cwd}: {r.stderr.strip()}")
    return r.stdout.strip()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- the network: a namespace per machine, or a relay per machine ---------------------------------

class Relay:
    """A TCP relay 127.0.0.1:port -> the daemon: `cut` closes it (and every connection through
    it: refused at once), `heal` opens it again on the same port."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.port = _free_port()
        self._srv: socket.socket | None = None
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self.heal()

    def heal(self) -> None:
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("127.0.0.1", self.port))
        srv.listen(64)
        self._srv = srv
        threading.Thread(target=self._accept, args=(srv,), daemon=True).start()

    def cut(self) -> None:
        with self._lock:
            srv, self._srv = self._srv, None
            conns, self._conns = self._conns, []
        for s in [srv, *conns]:
            if s is not None:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def _accept(self, srv: socket.socket) -> None:
        while True:
            try:
                client, _ = srv.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Net:
    """How each machine reaches the remote, and how it is cut off and killed whole."""

    def __init__(self, kind: str, daemon_port: int) -> None:
        self.kind = kind
        self.port = daemon_port
        self.tag = f"lzf{os.getpid() % 100000}"
        self.relays: dict[str, Relay] = {}
        self.subnet = self._free_subnet() if kind == "netns" else 0

    @staticmethod
    def _free_subnet() -> int:
        """A 10.249.N.0/24 no interface of this host has (another scenario running at once, or
        one killed before its teardown): N from the pid on, the first free one."""
        used = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True,
                              text=True).stdout
        start = os.getpid() % 200
        for k in range(200):
            n = 16 + (start + k) % 200
            if f" 10.249.{n}." not in used:
                return n
        raise RuntimeError("no free 10.249.N.0/24 subnet for the machines' links")

    @staticmethod
    def netns_works() -> bool:
        name = f"lzfprobe{os.getpid()}"
        if os.geteuid() != 0 or shutil.which("ip") is None:
            return False
        ok = subprocess.run(["ip", "netns", "add", name], capture_output=True).returncode == 0
        if ok:
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
        return ok

    def ns(self, m: str) -> str:
        return f"{self.tag}{m}"

    def _dev(self, m: str, side: str) -> str:
        return f"{self.tag}{m}{side}"  # at most 15 characters: lzf + 5 digits + 2

    def _addr(self, m: str, host: bool) -> str:
        k = MACHINES.index(m)
        return f"10.249.{self.subnet}.{k * 4 + (1 if host else 2)}"

    def setup(self, m: str) -> str:
        """The remote's URL as machine `m` reaches it."""
        if self.kind == "relay":
            self.relays[m] = Relay(self.port)
            return f"git://127.0.0.1:{self.relays[m].port}/remote.git"
        ns, h, n = self.ns(m), self._dev(m, "h"), self._dev(m, "n")
        for cmd in (["ip", "netns", "add", ns],
                    ["ip", "link", "add", h, "type", "veth", "peer", "name", n],
                    ["ip", "link", "set", n, "netns", ns],
                    ["ip", "addr", "add", f"{self._addr(m, True)}/30", "dev", h],
                    ["ip", "link", "set", h, "up"],
                    ["ip", "netns", "exec", ns, "ip", "addr", "add", f"{self._addr(m, False)}/30",
                     "dev", n],
                    ["ip", "netns", "exec", ns, "ip", "link", "set", n, "up"],
                    ["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"]):
            subprocess.run(cmd, check=True, capture_output=True)
        return f"git://{self._addr(m, True)}:{self.port}/remote.git"

    def argv(self, m: str) -> list[str]:
        """What runs a command on machine `m` (in its namespace)."""
        return [] if self.kind == "relay" else ["ip", "netns", "exec", self.ns(m)]

    def cut(self, m: str) -> None:
        if self.kind == "relay":
            self.relays[m].cut()
        else:  # the machine's own link goes down: its route to the remote is gone
            subprocess.run([*self.argv(m), "ip", "link", "set", self._dev(m, "n"), "down"],
                           check=True, capture_output=True)

    def heal(self, m: str) -> None:
        if self.kind == "relay":
            self.relays[m].heal()
        else:
            subprocess.run([*self.argv(m), "ip", "link", "set", self._dev(m, "n"), "up"],
                           check=True, capture_output=True)

    def kill_whole(self, m: str, root: int) -> int:
        """SIGKILL every process of machine `m` (`root`: its team's process); how many."""
        killed = 0
        for _ in range(20):
            pids = self._pids(m, root)
            if not pids:
                break
            for p in pids:
                try:
                    os.kill(p, signal.SIGKILL)
                    killed += 1
                except ProcessLookupError:
                    pass
            time.sleep(0.1)
        return killed

    def _pids(self, m: str, root: int) -> list[int]:
        if self.kind == "netns":
            listed = subprocess.run(["ip", "netns", "pids", self.ns(m)], capture_output=True,
                                    text=True).stdout.split()
            return [int(p) for p in listed if int(p) != os.getpid()]
        # Without a namespace: the team and all its descendants (whatever sessions they made).
        children: dict[int, list[int]] = {}
        for d in Path("/proc").iterdir():
            if d.name.isdigit():
                try:
                    ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                children.setdefault(ppid, []).append(int(d.name))
        out: list[int] = []
        todo = [root]
        while todo:
            p = todo.pop()
            if Path(f"/proc/{p}").exists():
                out.append(p)
            todo += children.get(p, [])
        return out

    def teardown(self) -> None:
        for r in self.relays.values():
            r.cut()
        if self.kind == "netns":
            for m in MACHINES:
                subprocess.run(["ip", "link", "del", self._dev(m, "h")], capture_output=True)
                for p in self._pids(m, 0):
                    try:
                        os.kill(p, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                subprocess.run(["ip", "netns", "del", self.ns(m)], capture_output=True)


# -- the machines ---------------------------------------------------------------------------------

class Machine:
    def __init__(self, name: str, path: Path, net: Net, agent: Path) -> None:
        self.name, self.path, self.net, self.agent = name, path, net, agent
        self.proc: subprocess.Popen[str] | None = None
        self.out: list[tuple[float, str]] = []  # (time, line) of every run of its team
        self.runs = 0

    def liza(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        r = subprocess.run([*self.net.argv(self.name), str(BIN / "git-liza"), *args],
                           cwd=self.path, capture_output=True, text=True, env=_env(), timeout=300)
        if check and r.returncode != 0:
            raise RuntimeError(f"[{self.name}] git liza {' '.join(args)}: exit {r.returncode}: "
                               f"{r.stderr.strip()}")
        return r

    def start_team(self, coders: int, reviewers: int) -> None:
        self.runs += 1
        self.proc = subprocess.Popen(
            [*self.net.argv(self.name), sys.executable, "-m", "gitliza", "team", "--planners", "0",
             "--coders", str(coders), "--reviewers", str(reviewers), "--prefix", f"{self.name}-",
             "--", str(self.agent)],
            cwd=self.path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, start_new_session=True)
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        with open(self.path.parent / f"{self.name}.out", "a") as keep:  # to read while it runs
            for line in proc.stdout:
                now = time.time()
                self.out.append((now, line.rstrip("\n")))
                keep.write(f"{now:.1f} {line}")  # (the time: to line it up with agents.log)
                keep.flush()

    def text(self) -> str:
        return "\n".join(line for _, line in self.out)

    def state_tip(self) -> str | None:
        r = subprocess.run(["git", "rev-parse", "-q", "--verify", "refs/liza/state"],
                           cwd=self.path, capture_output=True, text=True)
        return r.stdout.strip() or None

    def has_task(self, task: str) -> bool:
        """Whether this machine's own board (as its last sync left it) holds `task`."""
        names = subprocess.run(["git", "ls-tree", "-r", "--name-only", "refs/liza/state"],
                               cwd=self.path, capture_output=True, text=True).stdout
        return f"/{task}.toml" in names


# -- reading what happened ------------------------------------------------------------------------

@dataclass(frozen=True)
class BoardOp:
    op: str
    actor: str
    task: str | None
    time: str
    commit: str


def board_ops(repo: Path, ref: str = "refs/liza/state") -> list[BoardOp]:
    """Every op of the board, oldest first, from its commits' trailers."""
    fmt = ("%H%x1f%(trailers:key=Liza-Op,valueonly,separator=)%x1f"
           "%(trailers:key=Liza-Actor,valueonly,separator=)%x1f"
           "%(trailers:key=Liza-Task,valueonly,separator=)%x1f"
           "%(trailers:key=Liza-Time,valueonly,separator=)%x1e")
    out = _git(repo, "log", "--reverse", f"--format={fmt}", ref)
    ops = []
    for rec in out.split("\x1e"):
        parts = rec.strip("\n").split("\x1f")
        if len(parts) == 5 and parts[1]:
            ops.append(BoardOp(parts[1].strip(), parts[2].strip(), parts[3].strip() or None,
                               parts[4].strip(), parts[0].strip()))
    return ops


@dataclass
class Work:
    agent: str
    task: str
    start: float
    end: float | None = None


def agent_log(path: Path) -> list[tuple[float, str, str, list[str]]]:
    out = []
    for line in path.read_text().splitlines() if path.exists() else []:
        w = line.split()
        if len(w) >= 4:
            out.append((float(w[0]), w[1], w[2], w[3:]))
    return out


def work_spans(log: list[tuple[float, str, str, list[str]]],
               killed: dict[str, float]) -> list[Work]:
    """Each coder session's span on its task, from the agents' log; a session with no end (its
    machine killed) ends at the kill."""
    spans: list[Work] = []
    open_: dict[tuple[str, str], Work] = {}
    for t, agent, task, what in log:
        if what[0] == "start":
            w = Work(agent, task, t)
            spans.append(w)
            open_[(agent, task)] = w
        elif what[0] == "end" and (agent, task) in open_:
            open_.pop((agent, task)).end = t
    for (agent, _task), w in open_.items():
        w.end = killed.get(agent.split("-")[0])
    return spans


def overlaps(spans: list[Work]) -> list[tuple[Work, Work, float]]:
    """Pairs of sessions of two different coders on one task that ran at once, and for how long."""
    out = []
    for i, x in enumerate(spans):
        for y in spans[i + 1:]:
            if x.task != y.task or x.agent == y.agent:
                continue
            end_x = x.end if x.end is not None else float("inf")
            end_y = y.end if y.end is not None else float("inf")
            both = min(end_x, end_y) - max(x.start, y.start)
            if both > 0:
                out.append((x, y, both))
    return out


# -- the run --------------------------------------------------------------------------------------

@dataclass
class Result:
    net: str = ""
    seconds: float = 0.0
    figures: dict[str, Any] = field(default_factory=dict)
    checks: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)
    stopped: str | None = None  # the wait that never came, when the run stopped early


class BoardLag:
    """How far each machine's board trails the remote's, sampled every second: when each remote
    board tip first appeared on the remote, and when each machine's own board first held it (its
    tip the same or a descendant: a sync fast-forwards or replays onto the remote's). A machine
    that is down or cut off is not expected to follow: for a tip that appeared then, or that it
    did not hold when it went, the lag counts from when it came back."""

    def __init__(self, bare: Path, machines: dict[str, Path]) -> None:
        import pygit2
        self.bare = pygit2.Repository(str(bare))
        self.paths = machines
        self.repos: dict[str, Any] = {}
        self.appeared: dict[str, float] = {}  # remote tip -> first seen there
        self.held: dict[str, dict[str, float]] = {m: {} for m in machines}  # m -> tip -> when
        self.away: dict[str, list[tuple[float, float]]] = {m: [] for m in machines}

    def _tip(self, repo: Any) -> Any:
        ref = repo.references.get("refs/liza/state")
        return None if ref is None else ref.resolve().target

    def sample(self) -> None:
        import pygit2
        now = time.time()
        r = self._tip(self.bare)
        if r is not None:
            self.appeared.setdefault(str(r), now)
        for m, path in self.paths.items():
            try:
                repo = self.repos.get(m) or pygit2.Repository(str(path))
                self.repos[m] = repo
                local = self._tip(repo)
            except (pygit2.GitError, KeyError):
                continue
            if local is None:
                continue
            for oid in self.appeared:
                if oid in self.held[m]:
                    continue
                o = pygit2.Oid(hex=oid)
                try:
                    if local == o or repo.descendant_of(local, o):
                        self.held[m][oid] = now
                except (pygit2.GitError, KeyError, ValueError):
                    continue  # not fetched there yet

    def lags(self, end: float) -> dict[str, float]:
        """Each machine's longest lag behind the remote, in seconds."""
        out: dict[str, float] = {}
        for m in self.paths:
            worst = 0.0
            for oid, t in self.appeared.items():
                start = t
                for a, b in self.away[m]:
                    if a <= t <= b or (t < a and self.held[m].get(oid, end) > a):
                        start = max(start, b)
                worst = max(worst, self.held[m].get(oid, end) - start)
            out[m] = round(worst, 1)
        return out


def until(what: str, cond: Callable[[], Any], timeout: float, res: Result,
          every: float = 0.2) -> Any:
    end = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > end:
            raise TimeoutError(f"waited {timeout:.0f}s for {what}")
        time.sleep(every)


def run(workdir: Path, *, net: str = "auto", work: int = 8, lease: int = 30, cut_for: float = 45.0,
        tasks: int = 12, later: int = 6, follow: int = 2, snapshot: int = 2, coders: int = 1,
        say: Callable[[str], None] = print) -> Result:
    res = Result()
    res.figures["lease_s"] = lease
    t0 = time.time()
    bare_dir = workdir / "served"
    bare_dir.mkdir(parents=True)
    bare = bare_dir / "remote.git"
    _git(workdir, "init", "-q", "--bare", "-b", "main", str(bare))
    from gitliza.hooks.install import install
    install(bare, server=True, python=sys.executable)
    kind = net if net != "auto" else ("netns" if Net.netns_works() else "relay")
    res.net = kind
    port = _free_port()
    daemon = subprocess.Popen(
        ["git", "daemon", "--reuseaddr", f"--base-path={bare_dir}", "--export-all",
         "--enable=receive-pack", "--listen=0.0.0.0" if kind == "netns" else "--listen=127.0.0.1",
         f"--port={port}", str(bare_dir)], env=_env(), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True)
    nets = Net(kind, port)
    log = workdir / "agents.log"
    agent = workdir / "agent.sh"
    agent.write_text(AGENT.format(log=log, work=work))
    agent.chmod(0o755)
    ms: dict[str, Machine] = {}
    watcher_stop = threading.Event()
    seen: dict[str, list[tuple[float, str]]] = {m: [] for m in MACHINES}
    try:
        urls = {m: nets.setup(m) for m in MACHINES}
        until("the git daemon", lambda: subprocess.run(
            ["git", "ls-remote", f"git://127.0.0.1:{port}/remote.git"] if kind == "relay" else
            [*nets.argv("a"), "git", "ls-remote", urls["a"]],
            capture_output=True).returncode == 0, 90, res)  # (a loaded host: netns, fork)
        # Machine A: the project and the board.
        a = workdir / "a"
        a.mkdir()
        _git(a, "init", "-q", "-b", "main")
        (a / "README.md").write_text("the fleet's project\n")
        _git(a, "add", "README.md")
        _git(a, "commit", "-q", "-m", "initial")
        _git(a, "remote", "add", "origin", urls["a"])
        for m in MACHINES:
            ms[m] = Machine(m, workdir / m, nets, agent)
        subprocess.run([*nets.argv("a"), "git", "push", "-q", "origin", "main"], cwd=a,
                       check=True, capture_output=True, env=_env())
        _git(a, "config", "liza.remote", "origin")
        _git(a, "config", "liza.machine", "machine-a")
        A = ms["a"]
        A.liza("init", "the fleet's goal")
        for k, v in {"lease_duration": str(lease), "heartbeat_interval": "3",
                     "follow_interval": str(follow), "wip_snapshot_interval": str(snapshot),
                     "coder_max_wait": "900", "reviewer_max_wait": "900", "restart_delay": "1",
                     "crash_delay": "1", "crash_delay_max": "2"}.items():
            A.liza("config", k, v)

        def add(n: int) -> None:
            A.liza("add", f"t{n:02d}", "--desc", f"do t{n:02d}", "--spec-ref", "README.md",
                   "--done-when", "done", "--scope", f"t{n:02d}", "--ready")
        for n in range(1, tasks + 1):
            add(n)
        for m in ("b", "c"):
            subprocess.run([*nets.argv(m), "git", "clone", "-q", urls[m], str(ms[m].path)],
                           check=True, capture_output=True, env=_env())
            _git(ms[m].path, "config", "liza.remote", "origin")
            _git(ms[m].path, "config", "liza.machine", f"machine-{m}")
            ms[m].liza("pull")
        say(f"fleet: three machines ({kind}), {tasks} tasks, lease {lease}s, {work}s of work "
            f"a task, no cron of sync")

        def look_at_machines() -> None:
            now = time.time()  # (what it shows is the board as the command starts)
            r = A.liza("machines", "--json", check=False)
            try:
                data = json.loads(r.stdout)
            except ValueError:
                return
            for mm in data.get("machines", []):
                host = str(mm.get("host", "")).removeprefix("machine-")
                if host in seen and (not seen[host] or seen[host][-1][1] != mm["status"]):
                    seen[host].append((now, str(mm["status"])))

        def machines_on_a() -> None:
            while not watcher_stop.wait(MACHINES_EVERY):
                look_at_machines()
        threading.Thread(target=machines_on_a, daemon=True).start()
        lag = BoardLag(bare, {m: ms[m].path for m in MACHINES})

        def follow_lag() -> None:
            while not watcher_stop.wait(1.0):
                lag.sample()
        threading.Thread(target=follow_lag, daemon=True).start()
        for m in MACHINES:
            ms[m].start_team(coders, 1)
        start = time.time()

        def board(m: str = "a") -> dict[str, dict[str, Any]]:
            """The tasks on machine m's board (a merged task is archived: shown as MERGED)."""
            st = json.loads(ms[m].liza("status", "--json").stdout)
            out = {t["id"]: t for t in st.get("tasks", [])}
            names = subprocess.run(["git", "ls-tree", "-r", "--name-only", "refs/liza/state",
                                    "archive"], cwd=ms[m].path, capture_output=True,
                                   text=True).stdout.split()
            for n in names:
                tid = n.rsplit("/", 1)[-1].removesuffix(".toml")
                out.setdefault(tid, {"id": tid, "status": "MERGED", "archived": True})
            return out

        # 1. B killed whole, a coder of B a few seconds past its first commit of a task: that
        # commit and the edits before it are older than a snapshot and a check. (Counted from
        # the commit, not from the start: under load the commit itself can take seconds.)
        into = snapshot + follow + 1.5

        def b_at_work() -> tuple[str, str] | None:
            now = time.time()
            entries = agent_log(log)
            for t, ag, task, what in entries:
                if ag.startswith("b-coder") and what[0] == "committed" and now - t > into:
                    if not any(a2 == ag and k2 == task and w2[0] == "end"
                               for _, a2, k2, w2 in entries):
                        return ag, task
            return None
        b_agent, b_task = until("a coder of B at work", b_at_work, 180, res)
        killed_at = time.time()
        n = nets.kill_whole("b", ms["b"].proc.pid if ms["b"].proc else 0)
        say(f"fleet: killed machine b whole ({n} processes) at {killed_at - start:.1f}s, "
            f"{b_agent} {into:.1f}s+ past its first commit of {b_task}")
        # While B is down: its work in progress on the remote (its wip ref, or the attic entry a
        # takeover made of it).
        def b_work_on_remote() -> str | None:
            refs = _git(bare, "for-each-ref", "--format=%(refname)",
                        f"refs/liza/wip/{b_task}/{b_agent}", f"refs/liza-attic/{b_task}/")
            for ref in refs.split():
                body = _git(bare, "show", f"{ref}:{b_task}/progress.txt", check=False)
                if b_agent in body:
                    return ref
            return None
        ref = b_work_on_remote()
        saved = _git(bare, "show", f"{ref}:{b_task}/progress.txt", check=False) if ref else ""
        committed = _git(bare, "log", "--format=%s", ref) if ref else ""
        last_saved = max((float(ln.split()[0]) for ln in saved.splitlines()
                          if ln.strip().endswith(b_agent)), default=None)
        res.figures["b_work_lost_s"] = (None if last_saved is None else
                                        round(killed_at - last_saved, 1))
        res.checks["b_wip_ref"] = ref
        res.checks["b_wip_has_commit"] = f"{b_task}: first half by {b_agent}" in committed
        res.checks["b_wip_uncommitted_lines"] = len(saved.splitlines())
        # 2. B comes back once its task was taken over (so that what B left is its leftovers).
        until(f"{b_task} taken over", lambda: (board().get(b_task, {}).get("assigned_to") or
                                               b_agent) != b_agent or
              board().get(b_task, {}).get("status") not in ("CLAIMED",), 240, res, every=1)
        taken = time.time()
        res.figures["b_takeover_after_kill_s"] = round(taken - killed_at, 1)
        res.checks["b_work_on_remote_while_down"] = b_work_on_remote()
        ms["b"].start_team(coders, 1)
        back_at = time.time()
        lag.away["b"].append((killed_at, back_at))
        say(f"fleet: {b_task} taken over {taken - killed_at:.1f}s after the kill; machine b "
            f"back at {back_at - start:.1f}s")
        leftovers = until("B's leftovers line", lambda: [
            ln for t, ln in ms["b"].out if t >= back_at and "dead session's leftovers" in ln],
            60, res)
        res.checks["b_leftovers"] = leftovers
        res.checks["b_doctor"] = ms["b"].liza("doctor", check=False).stdout
        kept = [w.rstrip(",;") for ln in leftovers for w in ln.split()
                if w.startswith(f"refs/liza-attic/{b_task}/")]
        res.checks["b_kept"] = kept
        res.checks["b_kept_listed"] = all(k.rsplit("/", 1)[-1][:12] in ms["b"].liza(
            "attic", b_task, check=False).stdout for k in kept)

        def kept_on_remote() -> list[str]:  # (shared by B's next sync, which may lose races)
            return [k for k in kept if b_agent in _git(
                bare, "show", f"{k}:{b_task}/progress.txt", check=False)]
        try:
            res.checks["b_kept_on_remote"] = until("B's leftovers on the remote", lambda: len(
                kept_on_remote()) == len(kept) and kept_on_remote(), 180, res, every=1)
        except TimeoutError:
            res.checks["b_kept_on_remote"] = kept_on_remote()
        # 3. The 12 tasks all claimed: the human on A adds 6 more; B and C hear of it by their
        # followers alone.
        until("every task claimed", lambda: all(t["status"] != "UNCLAIMED" and
                                                 t["status"] != "READY"
                                                 for t in board().values()), 900, res, every=2)
        later_ids = [f"t{n:02d}" for n in range(tasks + 1, tasks + later + 1)]
        for n in range(tasks + 1, tasks + later):
            add(n)
        # The last one: timed from when the remote holds it (A's add returns later than that:
        # its own sync's last steps and the process's exit) to when each idle machine's own
        # board does, which only its follower can bring.
        last = later_ids[-1]
        adding = subprocess.Popen(
            [*nets.argv("a"), str(BIN / "git-liza"), "add", last, "--desc", f"do {last}",
             "--spec-ref", "README.md", "--done-when", "done", "--scope", last, "--ready"],
            cwd=A.path, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        until("the last task on the remote", lambda: f"/{last}.toml" in subprocess.run(
            ["git", "ls-tree", "-r", "--name-only", "refs/liza/state"], cwd=bare,
            capture_output=True, text=True).stdout, 120, res, every=0.05)
        added = time.time()
        noticed: dict[str, float] = {}

        def both_noticed() -> bool:
            for m in ("b", "c"):
                if m not in noticed and ms[m].has_task(later_ids[-1]):
                    noticed[m] = time.time() - added
            return len(noticed) == 2
        until("B and C to notice the new tasks", both_noticed, 120, res, every=0.05)
        adding.wait(120)
        res.figures["notice_s"] = {m: round(v, 1) for m, v in noticed.items()}
        say(f"fleet: {later} tasks added on a; b noticed after {noticed['b']:.1f}s, "
            f"c after {noticed['c']:.1f}s")
        # 4. C cut off while a coder of C works on one of them.
        def c_at_work() -> str | None:
            now = time.time()
            entries = agent_log(log)
            for t, ag, task, what in entries:
                if ag.startswith("c-coder") and what[0] == "start" and task in later_ids \
                        and now - t > 2 and not any(
                            a2 == ag and k2 == task and w2[0] == "end" and t2 >= t
                            for t2, a2, k2, w2 in entries):
                    return task  # (a session still running: it must be stopped by the cut)
            return None
        try:
            c_task = until("a coder of C at work on a later task", c_at_work, 120, res)
        except TimeoutError:
            c_task = None  # C got none of them: still cut, idle
        nets.cut("c")
        cut_at = time.time()
        say(f"fleet: cut machine c off at {cut_at - start:.1f}s (working on {c_task}) "
            f"for {cut_for:.0f}s")
        time.sleep(cut_for)
        nets.heal("c")
        healed = time.time()
        lag.away["c"].append((cut_at, healed))
        say(f"fleet: machine c healed at {healed - start:.1f}s")
        # 5. Everything merged: the goal completed; every team ends by itself.
        every = [f"t{n:02d}" for n in range(1, tasks + later + 1)]
        until("every task merged", lambda: all(board().get(t, {}).get("status") == "MERGED"
                                               for t in every), 1200, res, every=2)
        A.liza("complete-goal")
        completed = time.time()
        ends: dict[str, int | None] = {}
        for m in MACHINES:
            p = ms[m].proc
            assert p is not None
            try:
                ends[m] = p.wait(timeout=120)
            except subprocess.TimeoutExpired:
                ends[m] = None
        res.checks["team_exits"] = ends
        lag.sample()
        res.figures["board_lag_s"] = lag.lags(completed)
        res.figures["teams_ended_after_goal_s"] = round(time.time() - completed, 1)
        watcher_stop.set()
        # Once A's team (and its follower) ended, A's board no longer follows the remote: the
        # human looks again after a sync (the teams that ended gave their tokens back).
        A.liza("sync", check=False)
        look_at_machines()
        # -- the checks ----------------------------------------------------------------------------
        final = board()
        res.checks["merged"] = sum(1 for t in every if final.get(t, {}).get("status") == "MERGED")
        res.checks["tasks"] = len(every)
        ops = board_ops(bare)
        claims = [o for o in ops if o.op == "claim"]
        res.checks["later_claimed_by"] = {
            m: sorted({o.task for o in claims if o.task in later_ids and
                       o.actor.startswith(f"{m}-")}) for m in MACHINES}
        by_task: dict[str, list[str]] = {}
        for o in claims:
            if o.task:
                by_task.setdefault(o.task, []).append(o.actor)
        res.figures["takeovers"] = {t: a_ for t, a_ in by_task.items() if len(set(a_)) > 1}
        # No op of a coder on a task after another coder's claim of it (the board's history).
        holder: dict[str, str] = {}
        after_takeover = []
        for o in ops:
            if not o.task:
                continue
            if o.op == "claim":
                holder[o.task] = o.actor
            elif o.actor.split("-")[1:2] == ["coder"] and o.op != "usage" and \
                    holder.get(o.task) not in (None, o.actor):  # (usage: the run's record)
                after_takeover.append(o)
        res.checks["ops_after_takeover"] = [o.__dict__ for o in after_takeover]
        killed = {"b": killed_at}
        spans = work_spans(agent_log(log), killed)
        both = overlaps(spans)
        res.checks["work_at_once"] = [(x.agent, y.agent, x.task, round(s, 1)) for x, y, s in both]
        res.figures["duplicate_work_s"] = round(sum(s for _, _, s in both), 1)
        # Acknowledged ops (exit 0 to an agent) are on the board or said dropped.
        acked = [(w[0], ag, task) for _, ag, task, w in agent_log(log)
                 if len(w) > 1 and w[1] == "ok"]
        names = {"submit": "submit", "verdict": "verdict"}
        on_board = {(o.op, o.actor, o.task) for o in ops}
        from gitliza.services.sync import droplog
        drops: list[dict[str, Any]] = []
        for m in MACHINES:
            import pygit2
            entries, _ = droplog.read(pygit2.Repository(str(ms[m].path)))
            for e in droplog.current(entries):  # (a record rewritten with its rescue ref: once)
                for op in e["ops"]:
                    drops.append({**op, "machine": m, "rescued": e.get("rescued")})
        dropped_keys = {(d["op"], d["actor"], d["task"]) for d in drops}
        silent = [k for k in acked if (names[k[0]], k[1], k[2]) not in on_board
                  and (names[k[0]], k[1], k[2]) not in dropped_keys]
        res.checks["acked_ops"] = len(acked)
        res.checks["silent_drops"] = silent
        said = {m: [ln for _, ln in ms[m].out if "DROPPED OPS" in ln] for m in MACHINES}
        res.checks["drops"] = drops
        res.checks["drops_said"] = said
        res.figures["ops_dropped"] = len(drops)
        res.figures["ops_dropped_acknowledged"] = sum(
            1 for d in drops if (d["op"], d["actor"], d["task"]) in
            {(names[k[0]], k[1], k[2]) for k in acked})
        # Said: a DROPPED OPS line of that machine's team names its rescue ref (its work) or, where
        # no branch held any, its original commit (its record).
        res.figures["ops_dropped_said"] = sum(
            1 for d in drops if any((d["rescued"] or d["original"][:12]) in ln
                                    for ln in said[d["machine"]]))
        res.checks["verify"] = {m: ms[m].liza("verify", check=False).returncode
                                for m in MACHINES}
        res.checks["machines_seen_on_a"] = {m: [s for _, s in v] for m, v in seen.items()}
        gone_for = [t - killed_at for t, s in seen["b"] if s != "live" and t > killed_at]
        res.figures["b_shown_unreachable_after_kill_s"] = (round(gone_for[0], 1) if gone_for
                                                           else None)
        res.figures["cut"] = {"for_s": cut_for, "task": c_task}
        res.figures["run_s"] = round(time.time() - start, 1)
    except TimeoutError as e:  # a wait that never came: said, with every machine's output
        res.stopped = f"{e}, {time.time() - t0:.0f}s into the run"
        say(f"fleet: stopped early: {res.stopped}")
    finally:
        watcher_stop.set()
        for mach in ms.values():
            if mach.proc is not None and mach.proc.poll() is None:
                nets.kill_whole(mach.name, mach.proc.pid)
        res.outputs = {name: mach.text() for name, mach in ms.items()}
        nets.teardown()
        os.killpg(daemon.pid, signal.SIGKILL)
        daemon.wait()
        res.seconds = round(time.time() - t0, 1)
    res.problems = problems(res)
    return res


def problems(res: Result) -> list[str]:
    """What the issue's "Done when" promises, checked; empty when all holds."""
    c, f = res.checks, res.figures
    if res.stopped is not None:  # the checks below would read a run that never ended
        return [f"stopped early: {res.stopped}"]
    out = []
    if c.get("merged") != c.get("tasks"):
        out.append(f"merged {c.get('merged')} of {c.get('tasks')} tasks")
    if any(v != 0 for v in c.get("team_exits", {}).values()):
        out.append(f"teams did not all exit 0 by themselves: {c.get('team_exits')}")
    later = c.get("later_claimed_by", {})
    if not later.get("b") or not later.get("c"):
        out.append(f"the later tasks were not claimed by both B and C: {later}")
    shown = f.get("b_shown_unreachable_after_kill_s")
    if shown is None or shown > f.get("lease_s", 0) + MACHINES_EVERY:
        out.append(f"machines on A did not show the dead B unreachable within one lease "
                   f"({f.get('lease_s')}s, sampled every {MACHINES_EVERY}s): {shown}")
    behind = {m: v for m, v in f.get("board_lag_s", {}).items() if v > LAG_BOUND}
    if behind:
        out.append(f"a machine's board trailed the remote's by more than {LAG_BOUND}s: {behind}")
    if not c.get("b_wip_ref") or not c.get("b_wip_has_commit"):
        out.append(f"B's work in progress was not on the remote when it died: {c.get('b_wip_ref')}")
    if not c.get("b_work_on_remote_while_down"):
        out.append("B's work in progress was not on the remote at the takeover")
    if not c.get("b_kept") or not c.get("b_kept_listed") or not c.get("b_kept_on_remote"):
        out.append(f"B, back, did not keep its leftovers in the attic, listed and shared: "
                   f"{c.get('b_leftovers')} kept {c.get('b_kept')} listed "
                   f"{c.get('b_kept_listed')} on the remote {c.get('b_kept_on_remote')}")
    doctor = c.get("b_doctor", "")
    if "uncommitted changes" in doctor and "kept whole as refs/liza-attic/" not in doctor:
        out.append(f"doctor on B names a dirty leftover without what kept it: {doctor[-800:]}")
    if c.get("silent_drops"):
        out.append(f"acknowledged ops dropped silently: {c['silent_drops']}")
    if f.get("ops_dropped") != f.get("ops_dropped_said"):
        out.append(f"dropped ops not said in the team output with their rescue ref or record: "
                   f"{c.get('drops')} / {c.get('drops_said')}")
    if c.get("work_at_once") or c.get("ops_after_takeover"):
        out.append(f"two coders on one task at once: {c.get('work_at_once')} "
                   f"{c.get('ops_after_takeover')}")
    if any(v != 0 for v in c.get("verify", {}).values()):
        out.append(f"verify refused a clone: {c.get('verify')}")
    seen = c.get("machines_seen_on_a", {})
    for m in ("b", "c"):
        states = seen.get(m, [])
        if "unreachable" not in states or states[-1] not in ("live", "gone") or \
                not {"live", "gone"} & set(states[states.index("unreachable") + 1:]):
            out.append(f"machines on A never showed {m} unreachable then back: {states}")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--net", default="auto", choices=("auto", "netns", "relay"))
    p.add_argument("--keep", action="store_true", help="keep the machines' directories")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="liza-fleet-"))
    try:
        res = run(work, net=args.net, say=lambda s: print(s, file=sys.stderr, flush=True))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps({"net": res.net, "seconds": res.seconds, "figures": res.figures,
                          "checks": res.checks, "problems": res.problems,
                          "stopped": res.stopped}, indent=2, default=str))
    else:
        f = res.figures
        print(f"fleet scenario ({res.net}), {res.seconds:.0f}s")
        print(f"  time for an idle machine to notice new work: {f.get('notice_s')}")
        print(f"  work B lost at its kill: {f.get('b_work_lost_s')}s of progress not on the remote")
        print(f"  B's task taken over {f.get('b_takeover_after_kill_s')}s after the kill; "
              f"B shown unreachable on A after {f.get('b_shown_unreachable_after_kill_s')}s")
        print(f"  ops dropped: {f.get('ops_dropped')} ({f.get('ops_dropped_acknowledged')} "
              f"acknowledged to an agent), said in the team output: {f.get('ops_dropped_said')}")
        print(f"  duplicate work: {f.get('duplicate_work_s')}s; takeovers: {f.get('takeovers')}")
        print(f"  longest a machine's board trailed the remote's: {f.get('board_lag_s')}")
        print(f"  later tasks claimed by: {res.checks.get('later_claimed_by')}")
        print(f"  machines on A: {res.checks.get('machines_seen_on_a')}")
        for pr in res.problems:
            print(f"  PROBLEM: {pr}")
        if args.keep:
            print(f"  kept: {work}")
    if res.problems:  # each machine's team output, last lines first to read
        for m, out in res.outputs.items():
            print(f"--- machine {m}, its team's last lines:", file=sys.stderr)
            print("\n".join(out.splitlines()[-60:]), file=sys.stderr)
    return 1 if res.problems else 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    raise SystemExit(main())
