"""The team runtime's costs (a script, not a test): `git liza agent` supervisors as real processes.

    .venv/bin/python benchmarks/bench_team.py                # idle 60 s, 20 wakes, 20 cycles
    .venv/bin/python benchmarks/bench_team.py --idle 10 -n 5

idle     CPU time (user + system, from /proc) of a waiting coder supervisor over --idle seconds:
         it blocks on inotify (RefWatcher), so the goal is indistinguishable from zero.
wake     latency from a board transition (the CAS of the ref, in this process) to the waiting
         supervisor's agent process running (the agent's first instruction writes the time):
         planner  a human blocks a task -> BLOCKED_TASKS -> prompt, spawn
         coder    a task becomes claimable -> claim (worktree created) -> prompt, spawn
cycle    supervisor overhead per task cycle outside the agent: from one agent's last instruction
         to the next agent's first, with work waiting (wait, heartbeat thread stop, board read,
         claim with its worktree, prompt built and saved, spawn).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gitliza.services.api import Liza  # noqa: E402
from gitliza.services.lifecycle.integration import ensure_integration_branch  # noqa: E402
from gitliza.core.ops import Add, Block, Init  # noqa: E402
from gitliza.core.ops.goal import ConfigSet  # noqa: E402

BIN = Path(sys.executable).parent
ENV = {k: v for k, v in os.environ.items() if not k.startswith("LIZA_")}
ENV.update(PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", GIT_AUTHOR_NAME="b",
           GIT_AUTHOR_EMAIL="b@b.invalid", GIT_COMMITTER_NAME="b",
           GIT_COMMITTER_EMAIL="b@b.invalid", GIT_CONFIG_NOSYSTEM="1")


def repo(root: Path, name: str) -> tuple[Path, Liza]:
    path = root / name
    path.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=path, check=True, env=ENV)
    (path / "README.md").write_text("bench\n")
    subprocess.run(["git", "add", "."], cwd=path, check=True, env=ENV)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=path, check=True, env=ENV)
    liza = Liza.open(path)
    liza.do(Init, goal="bench")
    # 21 back-to-back sessions measure the supervisor's own overhead, not its launch cap.
    for k, v in {"coder_max_wait": "3600", "planner_max_wait": "3600", "heartbeat_interval": "60",
                 "lease_duration": "600", "max_launches_per_minute": "600"}.items():
        liza.do(ConfigSet, key=k, value=v)
    ensure_integration_branch(liza, liza.board().config.integration_branch)
    return path, liza


def supervisor(path: Path, role: str, agent: str, script: str) -> subprocess.Popen[str]:
    p = subprocess.Popen([str(BIN / "git-liza"), "agent", role, "--", "sh", "-c", script, "x"],
                         cwd=path, env=dict(ENV, LIZA_AGENT_ID=agent), text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert p.stdout is not None
    for line in p.stdout:
        if "generation" in line:
            return p
    raise SystemExit(f"supervisor did not start: {p.wait()}")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime


def stamps(path: Path, n: int, timeout: float = 120) -> list[float]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            lines = path.read_text().split()
            if len(lines) >= n:
                return [float(x) for x in lines]
        time.sleep(0.005)  # the benchmark harness polls; the supervisor under test does not
    raise SystemExit(f"timed out waiting for {n} agent starts in {path}")


def bench_idle(root: Path, seconds: float) -> None:
    path, _ = repo(root, "idle")
    p = supervisor(path, "coder", "coder-1", "exit 0")
    time.sleep(1.0)  # let start-up finish
    before = cpu_seconds(p.pid)
    time.sleep(seconds)
    used = cpu_seconds(p.pid) - before
    p.terminate()
    p.wait(30)
    print(f"idle     coder supervisor, {seconds:.0f} s waiting: CPU {used * 1000:.0f} ms "
          f"({100 * used / seconds:.3f} %)")


def bench_wake_planner(root: Path, n: int) -> None:
    path, liza = repo(root, "wake-planner")
    out, ends = root / "planner-starts", root / "planner-ends"
    # The agent records when it started, then retires the blocked task (no trigger left).
    script = (f'date +%s.%N >> {out}; t=$(git liza status --json | sed -n '
              f'\'s/.*"id": "\\(w[0-9]*\\)".*/\\1/p\' | head -1); '
              f'git liza abandon "$t" --reason done >/dev/null; date +%s.%N >> {ends}')
    liza.do(Add, task="keep", description="a draft: the goal stays open")
    liza.do(Add, task="w0", description="d", spec_ref="README.md", done_when="w", scope="x", ready=True)
    liza.do(Block, task="w0", reason="r", questions=("q?",))
    p = supervisor(path, "planner", "planner-1", script)
    stamps(ends, 1)
    lat = []
    for i in range(1, n + 1):
        liza.do(Add, task=f"w{i}", description="d", spec_ref="README.md", done_when="w", scope="x",
                ready=True)
        t0 = time.time()
        liza.do(Block, task=f"w{i}", reason="r", questions=("q?",))
        t1 = time.time()
        lat.append(stamps(out, i + 1)[i] - (t0 + t1) / 2)
        stamps(ends, i + 1)
        time.sleep(0.2)  # the supervisor is back to waiting
    p.terminate()
    p.wait(30)
    report("wake     planner (BLOCKED_TASKS -> agent running)", lat)


def bench_coder(root: Path, n: int) -> None:
    path, liza = repo(root, "coder")
    out, ends = root / "coder-starts", root / "coder-ends"
    script = (f'date +%s.%N >> {out}; git liza block "$LIZA_TASK_ID" --reason r --question q '
              f'>/dev/null; date +%s.%N >> {ends}')
    p = supervisor(path, "coder", "coder-1", script)
    lat = []
    for i in range(n):  # wake: one task at a time
        t0 = time.time()
        liza.do(Add, task=f"c{i}", description="d", spec_ref="README.md", done_when="w", scope="x",
                ready=True)
        t1 = time.time()
        lat.append(stamps(out, i + 1)[i] - (t0 + t1) / 2)
        stamps(ends, i + 1)
        time.sleep(0.2)
    report("wake     coder (task claimable -> claimed, worktree, agent running)", lat)
    p.terminate()
    p.wait(30)
    # cycle: n tasks waiting at once; overhead = next start - previous end
    path, liza = repo(root, "cycle")
    out, ends = root / "cycle-starts", root / "cycle-ends"
    script = script.replace(str(root / "coder-starts"), str(out)).replace(
        str(root / "coder-ends"), str(ends))
    for i in range(n + 1):
        liza.do(Add, task=f"k{i}", description="d", spec_ref="README.md", done_when="w", scope="x",
                ready=True)
    p = supervisor(path, "coder", "coder-1", script)
    starts = stamps(out, n + 1)
    finished = stamps(ends, n + 1)
    report("cycle    coder (agent exit -> next agent running, work waiting)",
           [starts[i + 1] - finished[i] for i in range(n)])
    p.terminate()
    p.wait(30)


def report(what: str, values: list[float]) -> None:
    ms = sorted(v * 1000 for v in values)
    p90 = ms[min(len(ms) - 1, int(len(ms) * 0.9))]
    print(f"{what}: p50 {statistics.median(ms):.0f} ms, p90 {p90:.0f} ms, "
          f"min {ms[0]:.0f} ms (n={len(ms)})")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--idle", type=float, default=60.0)
    ap.add_argument("-n", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-team-") as tmp:
        root = Path(tmp)
        home = root / "home"
        home.mkdir()
        ENV.update(HOME=str(home), GIT_CONFIG_GLOBAL=str(home / ".gitconfig"))
        os.environ.update(HOME=str(home), GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
                          GIT_CONFIG_NOSYSTEM="1")
        bench_wake_planner(root, args.n)
        bench_coder(root, args.n)
        bench_idle(root, args.idle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
