#!/usr/bin/env python3
"""Agent launches per minute of one `git liza agent coder` supervisor under each failure mode
(not part of `dev.py bench`: it runs for SECONDS per mode, default 30). docs/agents.md
"Supervisor limits" quotes its figures.

    exit0-held       the agent exits 0 at once, its task still CLAIMED (a CLI whose tools were denied)
    exit0-held-1s    the same, after 1 s (a real CLI's start-up)
    always-42        the agent always exits 42
    always-crash     the agent always exits 3
    fast-progress    every run commits on the task branch and exits 0, never submits

Usage: python3 benchmarks/launches.py [SECONDS] [MODE...]   (default config; a fresh repo each)
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

BIN = Path(sys.executable).parent
MODES = {
    "exit0-held": "exit 0\n",
    "exit0-held-1s": "sleep 1; exit 0\n",
    "always-42": "exit 42\n",
    "always-crash": "exit 3\n",
    "fast-progress": "date +%s%N > run.txt; git add -A; git commit -qm step\n",
}
IDENTITY = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
            "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}


def measure(mode: str, seconds: float) -> str:
    d = Path(tempfile.mkdtemp(prefix="launches-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIZA_")}
    env.update(IDENTITY, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    repo = d / "repo"

    def run(*args: str) -> None:
        subprocess.run(args, cwd=repo, env=env, check=True, capture_output=True)
    repo.mkdir()
    run("git", "init", "-q", "-b", "main")
    (repo / "README.md").write_text("bench\n")
    run("git", "add", ".")
    run("git", "commit", "-qm", "init")
    run("git", "liza", "init", "launch bench")
    run("git", "liza", "add", "t1", "--desc", "d", "--spec-ref", "README.md", "--done-when", "x",
        "--scope", "x", "--ready")
    agent = d / "agent.sh"
    agent.write_text("#!/bin/sh\n" + MODES[mode])
    agent.chmod(0o755)
    p = subprocess.Popen([str(BIN / "git-liza"), "agent", "coder", "--", str(agent)], cwd=repo,
                         env={**env, "LIZA_AGENT_ID": "coder-1"}, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    out: list[str] = []
    pump = threading.Thread(target=lambda: out.extend(p.stdout or ()), daemon=True)
    pump.start()
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds and p.poll() is None:
        time.sleep(0.1)
    elapsed = time.monotonic() - t0
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
    p.wait(30)
    pump.join(5)
    starts = sum("started agent" in line for line in out)
    files = len(list((repo / ".liza" / "agent-prompts").glob("*.txt")))
    gave = next((line.split("] ", 1)[-1].strip() for line in out if "giving up" in line), "")
    return (f"| {mode} | {starts} in {elapsed:.0f} s | {starts * 60 / elapsed:.1f} | {files} | "
            f"{gave or '-'} |")


def main() -> None:
    args = sys.argv[1:]
    seconds = float(args.pop(0)) if args and args[0].replace(".", "").isdigit() else 30.0
    print("| mode | launches | per minute | prompt files | outcome |")
    print("|---|---|---|---|---|")
    for mode in args or list(MODES):
        print(measure(mode, seconds), flush=True)


if __name__ == "__main__":
    main()
