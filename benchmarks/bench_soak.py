"""Benchmark: a long soak in one process. What a process that lives holds, sampled every 1,000
transitions from /proc/PID (Linux): open files (those on live packs apart), open files on deleted
packs, threads, RSS; and the pack count and the size of `.liza/`. A script, not a test (the suite
runs a shorter soak: tests/team/test_soak.py, which shares `sample` and `Clock`):

    .venv/bin/python benchmarks/bench_soak.py [--transitions 10000] [--without-refresh]
    .venv/bin/python benchmarks/bench_soak.py --mcp [--transitions 3000]

Two handles on one repository (a coder beating every op, a planner every tenth, each reading what
the other wrote: a supervisor and its heartbeat thread), a new second per op so that every
heartbeat writes new objects. `--without-refresh` turns off the object database refresh
(gitliza/git/objects/odbfresh.py) to show what a process held before it: one deleted pack per transition.

`--mcp`: the same question of the MCP server (`git liza mcp`, gitliza/access/mcp.py), a process
that lives as long as its agent's session. A coder's session through the SDK's own stdio client
(as an agent CLI drives it) calls `heartbeat` and reads the board (`status`) once per transition,
while a planner handle in this process writes every tenth op, so the server also reads what
another writer wrote. The server's /proc/PID is sampled every 500 calls.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from busyteam import child  # noqa: E402 - benchmarks/ is on sys.path (as bench_busy.py)
from gitliza.core import clock
from gitliza.core.ops import Init, Register
from gitliza.core.ops.work import Heartbeat
from gitliza.services.api import Liza


@dataclass(frozen=True)
class Sample:
    fds: int  # open files, but those on live packs (their number is `packs`'s, bounded apart)
    deleted_packs: int  # open files on a pack file that was deleted
    threads: int
    rss_kb: int
    packs: int  # pack indexes in objects/pack
    liza_bytes: int  # what `.liza/` holds on disk


def sample(pid: int, repo: Path) -> Sample:
    fds = deleted = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:  # closed meanwhile
            continue
        # objects/pack/ and gitliza's own store (liza-objects/pack/, git/objects/ownstore.py)
        if "objects/pack/" not in target:
            fds += 1
        elif target.endswith(" (deleted)"):
            deleted += 1
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text()
                  .splitlines() if ":" in line)
    packs = sum(1 for d in (repo / ".git" / "objects" / "pack", repo / ".git" / "liza-objects" /
                            "pack") if d.is_dir() for n in os.listdir(d) if n.endswith(".idx"))
    liza_dir = repo / ".liza"
    size = sum(p.stat().st_size for p in liza_dir.rglob("*") if p.is_file()) \
        if liza_dir.exists() else 0
    return Sample(fds, deleted, int(status["Threads"]), int(status["VmRSS"].split()[0]), packs,
                  size)


class Clock:
    """A new second per op, so that every heartbeat writes new objects (a new pack)."""

    def __init__(self) -> None:
        self.t = 1_800_000_000

    def __call__(self) -> str:
        self.t += 1
        return clock.from_epoch(self.t)


def soak(repo: Path, transitions: int, every: int = 1000) -> list[tuple[int, Sample]]:
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    human = Liza.open(repo, "human", now=Clock(), sync=False)
    human.do(Init, goal="soak")
    human.do(Register, agent="coder-9", role="coder")
    human.do(Register, agent="planner-9", role="planner")
    del human
    coder = Liza.open(repo, "coder-9", now=Clock(), sync=False)
    planner = Liza.open(repo, "planner-9", now=Clock(), sync=False)
    out = []
    done = 0
    due = every
    while done < transitions:
        coder.do(Heartbeat)
        done += 1
        if done % 10 == 0:
            planner.do(Heartbeat)
            done += 1
        assert coder.board().agent("planner-9") is not None
        assert planner.board().agent("coder-9") is not None
        if done >= due:
            due += every
            out.append((done, sample(os.getpid(), repo)))
            print(f"{done:>6}  {out[-1][1]}", flush=True)
    return out


def soak_mcp(repo: Path, transitions: int, every: int = 500) -> list[tuple[int, Sample]]:
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from gitliza.access import mcp_config

    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    human = Liza.open(repo, "human", sync=False)
    human.do(Init, goal="soak")
    human.do(Register, agent="c1", role="coder")
    human.do(Register, agent="planner-9", role="planner")
    planner = Liza.open(repo, "planner-9", now=Clock(), sync=False)
    spec = mcp_config.mcp_json(repo, "c1", python=sys.executable)["mcpServers"]["gitliza"]
    params = StdioServerParameters(command=spec["command"], args=spec["args"], env=spec["env"],
                                   cwd=str(repo))
    out: list[tuple[int, Sample]] = []

    async def run() -> None:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                pid = child(" mcp ")
                done = 0
                while done < transitions:
                    res = await session.call_tool("heartbeat", {})
                    assert not res.is_error, res.content
                    done += 1
                    if done % 10 == 0:
                        planner.do(Heartbeat)
                        done += 1
                    res = await session.call_tool("status", {})
                    assert not res.is_error, res.content
                    if done % every in (0, 1) and (not out or done - out[-1][0] >= every - 1):
                        out.append((done, sample(pid, repo)))
                        print(f"{done:>6}  {out[-1][1]}", flush=True)

    anyio.run(run)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--transitions", type=int, default=10_000)
    ap.add_argument("--without-refresh", action="store_true")
    ap.add_argument("--mcp", action="store_true", help="sample the MCP server instead")
    args = ap.parse_args()
    if args.without_refresh:
        from gitliza.git.objects import odbfresh
        odbfresh.OdbRefresh.check = lambda self: False  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as tmp:
        rows = (soak_mcp if args.mcp else soak)(Path(tmp) / "repo", args.transitions)
    first, last = rows[0], rows[-1]
    print(f"\nafter {first[0]:,} -> {last[0]:,} transitions: open files {first[1].fds} -> "
          f"{last[1].fds}, deleted packs held {first[1].deleted_packs} -> "
          f"{last[1].deleted_packs}, threads {first[1].threads} -> {last[1].threads}, "
          f"RSS {first[1].rss_kb / 1024:.1f} -> {last[1].rss_kb / 1024:.1f} MB "
          f"({100 * (last[1].rss_kb / first[1].rss_kb - 1):+.1f}%), packs "
          f"{max(s.packs for _n, s in rows)} at most")
    return 0


if __name__ == "__main__":
    sys.exit(main())
