"""A busy team as real processes: two `git liza agent coder` supervisors and one `git liza agent
code-reviewer`, their agents instant shell scripts (a coder commits one file and submits, the
reviewer approves, its supervisor merges), tasks added by a human as the team goes. Shared by the
busy-team benchmark (benchmarks/bench_busy.py) and the soak test that does real work
(tests/team/test_soak.py).

What a sample holds, per long-lived process (read from /proc/PID, Linux): open files apart from
those on packs, open files on deleted packs (of the repository's `objects/pack` and of gitliza's own
store `liza-objects/pack`, apart), RSS; and, for the repository, the pack count of each of the two
pack directories."""
from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent

CODER = """echo "$LIZA_TASK_ID" > "$LIZA_TASK_ID.txt"
git add "$LIZA_TASK_ID.txt"
git commit -q -m "implement $LIZA_TASK_ID"
git liza submit "$LIZA_TASK_ID" >/dev/null
"""
REVIEWER = 'git liza verdict "$LIZA_TASK_ID" approve --commit "$LIZA_REVIEW_COMMIT" >/dev/null\n'
TEAM = (("coder", "coder-1", CODER), ("coder", "coder-2", CODER),
        ("code-reviewer", "reviewer-1", REVIEWER))
# Scaled liveness (the defaults are 60 s and 300 s): a renewal every second per supervisor, as
# the heartbeat soak, so that liveness churns beside the work.
CONFIG = {"heartbeat_interval": "1", "lease_duration": "10", "coder_max_wait": "36000",
          "planner_max_wait": "36000", "reviewer_max_wait": "36000",
          "max_launches_per_minute": "600", "restart_delay": "1", "crash_delay": "1",
          "crash_delay_max": "2"}


def environment(root: Path, sandbox: str, code: str | None = None) -> dict[str, str]:
    home = root / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIZA_")}
    env.update(PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", HOME=str(home),
               GIT_CONFIG_GLOBAL=str(home / ".gitconfig"), GIT_CONFIG_NOSYSTEM="1",
               GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b.invalid", GIT_COMMITTER_NAME="b",
               GIT_COMMITTER_EMAIL="b@b.invalid", LIZA_SANDBOX=sandbox)
    if code:
        env["PYTHONPATH"] = code
    return env


def git(cwd: Path, *args: str, env: dict[str, str]) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def liza(cwd: Path, *args: str, env: dict[str, str], agent: str | None = None,
         retries: int = 0) -> str:
    """`retries`: how many more times to run a command that ended in exit 2 (the CAS gave up
    beside busy writers, which the error says to retry; nothing was written)."""
    e = dict(env, **({"LIZA_AGENT_ID": agent} if agent else {}))
    for _ in range(retries + 1):
        r = subprocess.run([str(BIN / "git-liza"), *args], cwd=cwd, env=e, capture_output=True,
                           text=True)
        if r.returncode != 2:
            break
        time.sleep(0.5)
    if r.returncode != 0:
        raise RuntimeError(f"git liza {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
    return r.stdout


@dataclass(frozen=True)
class Proc:
    fds: int  # open files but those on packs
    deleted_own: int  # open files on deleted packs of liza-objects/pack
    deleted_repo: int  # open files on deleted packs of objects/pack
    live_packs: int  # open files on packs still there
    rss_kb: int
    anon_kb: int  # RSS but mapped files (packs): the process's own memory
    # Mappings of deleted pack files: libgit2 maps a pack's index with no file left open, so a
    # pack it holds after its removal may show here and in no count of open files (issue 39:
    # 3,900 in a supervisor after 30 minutes, from a database that never let go of one).
    deleted_maps: int = 0


def proc(pid: int) -> Proc | None:
    fds = own = rep = live = 0
    try:
        names = os.listdir(f"/proc/{pid}/fd")
        status = Path(f"/proc/{pid}/status").read_text()
        with open(f"/proc/{pid}/maps") as f:
            maps = sum(1 for ln in f if "/pack/pack-" in ln and ln.rstrip().endswith("(deleted)"))
    except OSError:
        return None
    for fd in names:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if "/pack/pack-" not in target:
            fds += 1
        elif not target.endswith(" (deleted)"):
            live += 1
        elif "/liza-objects/pack/" in target:
            own += 1
        else:
            rep += 1
    kb = {ln.split(":")[0]: int(ln.split()[1]) for ln in status.splitlines()
          if ln.startswith(("VmRSS:", "RssAnon:"))}
    return Proc(fds, own, rep, live, kb["VmRSS"], kb["RssAnon"], maps)


def pack_counts(repo: Path) -> tuple[int, int]:
    """Pack indexes in objects/pack and in liza-objects/pack."""
    out = []
    for d in (repo / ".git" / "objects" / "pack", repo / ".git" / "liza-objects" / "pack"):
        try:
            out.append(sum(1 for n in os.listdir(d) if n.endswith(".idx")))
        except FileNotFoundError:
            out.append(0)
    return out[0], out[1]


class _Pid:
    """A process this harness did not start itself (the MCP server, the SDK client's child)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def poll(self) -> int | None:
        return None if os.path.exists(f"/proc/{self.pid}") else 0

    def terminate(self) -> None:
        try:
            os.kill(self.pid, 15)
        except OSError:
            pass

    def wait(self, timeout: float | None = None) -> int:
        deadline = time.monotonic() + (timeout or 60)
        while self.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        return 0


def child(needle: str) -> int:
    """The pid of this process's child whose command line holds `needle`."""
    me = str(os.getpid())
    for _ in range(600):
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if stat.rsplit(")", 1)[1].split()[1] == me and needle in cmd:
                return int(pid)
        time.sleep(0.1)
    raise RuntimeError(f"no child running {needle!r}")


@dataclass
class Team:
    root: Path
    sandbox: str = "off"
    code: str | None = None
    repo: Path = field(init=False)
    env: dict[str, str] = field(init=False)
    sups: dict[str, Any] = field(default_factory=dict)  # name -> Popen (or _Pid)
    added: int = 0
    port: int = 0

    def __post_init__(self) -> None:
        self.repo = self.root / "repo"
        self.env = environment(self.root, self.sandbox, self.code)

    def setup(self) -> None:
        self.repo.mkdir()
        git(self.repo, "init", "-q", "-b", "main", env=self.env)
        (self.repo / "README.md").write_text("busy team\n")
        git(self.repo, "add", ".", env=self.env)
        git(self.repo, "commit", "-qm", "init", env=self.env)
        liza(self.repo, "init", "busy team", env=self.env)
        for k, v in CONFIG.items():
            liza(self.repo, "config", k, v, env=self.env)

    def start(self) -> None:
        logs = self.root / "logs"
        logs.mkdir(exist_ok=True)
        for role, agent, body in TEAM:
            with open(logs / f"{agent}.log", "ab") as out:
                self.sups[agent] = subprocess.Popen(
                    [str(BIN / "git-liza"), "agent", role, "--", "sh", "-ec", body],
                    cwd=self.repo, env=dict(self.env, LIZA_AGENT_ID=agent),
                    stdout=out, stderr=subprocess.STDOUT)

    def watch(self, port: int, steady: bool = False) -> None:
        """The readers that live beside a team: `git liza events --follow` and `git liza web`
        (a reader of its event stream kept connected, its board page fetched by `poke`). With
        `steady`, the pages are fetched the whole time (a thread, `web_reads` counts them) and
        the events printed are counted (`event_lines`, the merges apart in `event_merges`)."""
        import threading
        import urllib.request
        logs = self.root / "logs"
        self.event_lines = self.event_merges = self.web_reads = 0
        self.sups["events"] = subprocess.Popen(
            [str(BIN / "git-liza"), "events", "--follow", "--json"], cwd=self.repo, env=self.env,
            stdout=subprocess.PIPE if steady else subprocess.DEVNULL,
            stderr=open(logs / "events.log", "ab"))
        self.sups["web"] = subprocess.Popen(
            [str(BIN / "git-liza"), "web", "--port", str(port), "--no-open", "--read-only"],
            cwd=self.repo, env=self.env, stdout=open(logs / "web.log", "ab"),
            stderr=subprocess.STDOUT)
        self.port = port
        # The board asks for the token `web` prints with its URL (a request without it is a 401);
        # a script sends it as a bearer token (`?token=` sets a cookie and redirects).
        deadline = time.monotonic() + 300
        self.web_token = ""
        while not self.web_token and time.monotonic() < deadline:
            found = re.search(r"\?token=(\S+)", (logs / "web.log").read_text(errors="replace"))
            if found:
                self.web_token = found.group(1)
            else:
                time.sleep(0.5)
        self.web_auth = {"Authorization": f"Bearer {self.web_token}"}

        def stream() -> None:
            while self.sups["web"].poll() is None:
                try:
                    with urllib.request.urlopen(urllib.request.Request(
                            f"http://127.0.0.1:{port}/events", headers=self.web_auth)) as r:
                        while r.read(4096):
                            pass
                except (OSError, http.client.HTTPException):  # not up yet, or stopped
                    time.sleep(1)
        threading.Thread(target=stream, daemon=True).start()
        if not steady:
            return

        def events() -> None:
            out = self.sups["events"].stdout
            for line in out:
                self.event_lines += 1
                if json.loads(line).get("op") == "merge":
                    self.event_merges += 1

        def browse() -> None:
            while self.sups["web"].poll() is None:
                try:
                    for path in ("/", "/api/board"):
                        urllib.request.urlopen(urllib.request.Request(
                            f"http://127.0.0.1:{port}{path}", headers=self.web_auth),
                            timeout=60).read()
                    self.web_reads += 1
                except OSError:  # not listening yet
                    time.sleep(0.5)
                time.sleep(0.2)
        threading.Thread(target=events, daemon=True).start()
        threading.Thread(target=browse, daemon=True).start()

    def mcp(self, steady: bool = False) -> None:
        """`git liza mcp` as an agent's session holds it open beside the team: a client (the SDK's
        own stdio client, in a thread) calls `status` whenever `poke` asks (with the readers), or
        with `steady` the whole time (`status` and `log`; `mcp_calls` counts them, `mcp_errors`
        holds what failed). Its server's pid goes into `sups` as "mcp"."""
        import threading

        import anyio
        from mcp.client.session import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        from gitliza.access import mcp_config
        spec = mcp_config.mcp_json(self.repo, "human", python=sys.executable)["mcpServers"][
            "gitliza"]
        params = StdioServerParameters(command=spec["command"], args=spec["args"],
                                       env={**self.env, **spec["env"]}, cwd=str(self.repo))
        self._mcp_due = threading.Event()
        self.mcp_calls = 0
        self.mcp_errors: list[str] = []
        ready = threading.Event()

        async def session() -> None:
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    self.sups["mcp"] = _Pid(child(" mcp "))
                    ready.set()
                    while True:
                        if steady:
                            await anyio.sleep(0.2)
                        else:
                            await anyio.to_thread.run_sync(self._mcp_due.wait)
                            self._mcp_due.clear()
                        for name, args in (("status", {}), ("log", {"n": 20}))[:2 if steady
                                                                                else 1]:
                            got = await s.call_tool(name, args)
                            if got.is_error:
                                self.mcp_errors.append(f"{name}: {got.content}")
                            self.mcp_calls += 1

        def run() -> None:
            try:
                anyio.run(session)
            except Exception:  # noqa: BLE001 - the server stopped under it (Team.stop)
                if "mcp" in self.sups and self.sups["mcp"].poll() is None:
                    raise
        threading.Thread(target=run, daemon=True).start()
        ready.wait(120)

    def poke(self) -> None:
        """A browser's reads of the web board: the board page and its JSON."""
        import urllib.request
        if getattr(self, "_mcp_due", None) is not None:
            self._mcp_due.set()
        for path in ("/", "/api/board"):
            try:
                urllib.request.urlopen(urllib.request.Request(
                    f"http://127.0.0.1:{self.port}{path}", headers=getattr(self, "web_auth", {})),
                    timeout=30).read()
            except OSError:
                pass

    def add(self, n: int = 1) -> None:
        for _ in range(n):
            self.added += 1
            liza(self.repo, "add", f"t{self.added}", "--desc", "d", "--spec-ref", "README.md",
                 "--done-when", "w", "--scope", "x", "--ready", env=self.env, retries=5)

    def statuses(self) -> dict[str, int]:
        board = json.loads(liza(self.repo, "status", "--json", env=self.env))
        out: dict[str, int] = {}
        for t in board["tasks"]:
            out[t["status"]] = out.get(t["status"], 0) + 1
        return out

    def merged(self) -> int:
        """Tasks merged so far: each adds its file to the integration branch (one git command,
        where `status` would leave the archived tasks out)."""
        try:
            names = git(self.repo, "ls-tree", "--name-only", "integration", env=self.env)
        except subprocess.CalledProcessError:  # no merge yet: no integration branch
            return 0
        return sum(1 for n in names.splitlines() if n.startswith("t") and n.endswith(".txt"))

    def alive(self) -> list[str]:
        return [a for a, p in self.sups.items() if p.poll() is None]

    def log_tail(self, agent: str, lines: int = 30) -> str:
        text = (self.root / "logs" / f"{agent}.log").read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        try:
            liza(self.repo, "abort", env=self.env)
        except RuntimeError:
            pass
        for name in ("events", "web", "mcp"):
            if name in self.sups and self.sups[name].poll() is None:
                self.sups[name].terminate()
        for p in self.sups.values():
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)

    def latencies(self) -> list[tuple[float, float]]:
        """(seconds since the first add, add-to-merge seconds) of every merged task, from the
        board's log (its times are the transitions' own, to the second)."""
        log = json.loads(liza(self.repo, "log", "--all", "--json", env=self.env))
        from gitliza.core.clock import to_epoch
        added: dict[str, float] = {}
        merged: dict[str, float] = {}
        for e in log:
            if e.get("task") is None:
                continue
            if e["op"] == "add":
                added[e["task"]] = to_epoch(e["time"])
            elif e["op"] == "merge":
                merged[e["task"]] = to_epoch(e["time"])
        if not added:
            return []
        t0 = min(added.values())
        return sorted((added[t] - t0, merged[t] - added[t]) for t in merged if t in added)
