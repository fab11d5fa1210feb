#!/usr/bin/env python3
"""The main job: a real team builds the upstream hello-CLI demo (docs/DEMO.md) end to end.

    python3 dev.py example              # sets up .venv, then runs this
    python3 examples/team.py            # with gitliza installed
    python3 examples/team.py --keep     # keep the throw-away repository to look around

A throw-away repository gets the demo's vision spec (specs/vision.md), a README and an
integration test script. `git liza init` creates the board; then four supervisors run as real
concurrent processes, `git liza agent planner|coder|coder|code-reviewer`, each running a scripted
reference agent from examples/agents/ (deterministic programs that act only through `git liza`
and git, as an LLM agent would). The planner reads the vision and adds tasks with dependencies;
the coders implement, test and submit in their worktrees; the reviewer runs the tests at the
review commit, rejects at least once with a blocker, and its supervisor merges what it approved.
Progress is printed live from the board. The run ends when the planner's supervisor marks the goal
COMPLETED; then every task must be MERGED, the integration branch must run `python -m hello` and
pass its tests, and `git liza verify` must accept the whole history.

To run the same team with a real agent CLI instead of the scripted agents, see README.md
("Running a team"): `git liza agent coder --cli claude`, and so on.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gitliza.api import Liza
from gitliza.git.refwatch import RefWatcher

HERE = Path(__file__).resolve().parent
AGENTS = HERE / "agents"
BIN = Path(sys.executable).parent
ENV = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           GIT_AUTHOR_NAME="Liza Example", GIT_AUTHOR_EMAIL="example@liza.invalid",
           GIT_COMMITTER_NAME="Liza Example", GIT_COMMITTER_EMAIL="example@liza.invalid")
for _k in [k for k in ENV if k.startswith("LIZA_")]:
    del ENV[_k]
TEAM = [("planner", "planner-1", "planner.py"), ("coder", "coder-1", "coder.py"),
        ("coder", "coder-2", "coder.py"), ("code-reviewer", "reviewer-1", "reviewer.py")]
CONFIG = {"heartbeat_interval": "2", "lease_duration": "60", "coder_max_wait": "300",
          "planner_max_wait": "300", "reviewer_max_wait": "300", "restart_delay": "1",
          "crash_delay": "1", "crash_delay_max": "4"}
DEADLINE = 600.0  # seconds: give up (abort the team) if the goal is not completed by then

VISION = """# Vision: Hello CLI

## Goal

Create a Python CLI tool that greets users.

## Requirements

1. Command: `hello` (or `python -m hello`)
2. Default output: `Hello, World!`
3. Optional `--name` argument: `hello --name Alice` -> `Hello, Alice!`
4. Exit code 0 on success

## Constraints

- Python 3.8+ compatible
- No external dependencies (stdlib only)
- Include basic tests

## Success Criteria

- `python -m hello` prints "Hello, World!"
- `python -m hello --name Bob` prints "Hello, Bob!"
- All tests pass
"""
INTEGRATION_TEST = """#!/bin/sh
# Run by the merge on the merged tree: a merge that breaks the tests is not recorded as MERGED.
set -e
if [ -d tests ]; then python3 -m unittest discover -s tests -t . -q; fi
"""


def sh(cwd: Path, *args: str, agent: str | None = None, check: bool = True) -> str:
    env = dict(ENV, **({"LIZA_AGENT_ID": agent} if agent else {}))
    r = subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True)
    if check and r.returncode != 0:
        sys.exit(f"team example failed: {' '.join(args)}: exit {r.returncode}\n"
                 f"{r.stdout}{r.stderr}")
    return r.stdout


def setup(repo: Path) -> None:
    repo.mkdir(parents=True)
    sh(repo, "git", "init", "-q", "-b", "main")
    (repo / "specs").mkdir()
    (repo / "specs" / "vision.md").write_text(VISION)
    (repo / "README.md").write_text("# hello\n\nA CLI that greets users (built by a Liza team).\n")
    (repo / "scripts").mkdir()
    (repo / "scripts" / "integration-test.sh").write_text(INTEGRATION_TEST)
    (repo / "scripts" / "integration-test.sh").chmod(0o755)
    sh(repo, "git", "add", ".")
    sh(repo, "git", "commit", "-q", "-m", "Initial commit: vision spec")
    sh(repo, "git", "liza", "init", "Build hello CLI per specs/vision.md")
    for k, v in CONFIG.items():
        sh(repo, "git", "liza", "config", k, v)


def start_team(repo: Path, logs: Path) -> list[tuple[str, subprocess.Popen[bytes], Path]]:
    logs.mkdir(parents=True, exist_ok=True)
    procs = []
    for role, agent, program in TEAM:
        log = logs / f"{agent}.log"
        argv = [str(BIN / "git-liza"), "agent", role, "--", sys.executable, str(AGENTS / program)]
        with log.open("wb") as out:
            p = subprocess.Popen(argv, cwd=repo, env=dict(ENV, LIZA_AGENT_ID=agent),
                                 stdout=out, stderr=subprocess.STDOUT)
        procs.append((agent, p, log))
        print(f"started `git liza agent {role}` as {agent} (pid {p.pid}, log {log})")
    return procs


def follow(repo: Path, deadline: float) -> bool:
    """Print every board transition as it lands; True when the goal is COMPLETED."""
    liza = Liza.open(repo)
    seen: str | None = None
    started = time.monotonic()
    with RefWatcher(repo) as w:
        while True:
            tip = w.tip()
            if tip is not None and tip != seen:
                # Walk and judge the one tip read above: the ref may move meanwhile, and that
                # move wakes the next wait, so nothing is skipped or judged before it is shown.
                new = []
                for c in liza.store.history(tip):
                    if str(c.id) == seen:
                        break
                    new.append(c)
                for c in reversed(new):
                    elapsed = time.monotonic() - started
                    print(f"  {elapsed:6.1f}s  {c.message.splitlines()[0]}", flush=True)
                seen = tip
                if liza.board(tip).goal.status == "COMPLETED":
                    return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            w.wait(left)


def check_result(repo: Path) -> None:
    status = Liza.open(repo).board()
    tasks = list(status.all_tasks())
    assert tasks and all(t.status == "MERGED" for t in tasks), [(t.id, t.status) for t in tasks]
    rejected = [t.id for t in tasks if any(h.event == "rejected" for h in t.history)]
    assert rejected, "the reviewer rejected nothing"
    print(f"\nevery task MERGED: {', '.join(sorted(t.id for t in tasks))}; "
          f"rejected at least once: {', '.join(rejected)}")
    check = repo.parent / "integration-check"
    sh(repo, "git", "worktree", "add", "-q", "--detach", str(check), "integration")
    try:
        out = sh(check, sys.executable, "-m", "hello")
        named = sh(check, sys.executable, "-m", "hello", "--name", "Bob")
        assert (out, named) == ("Hello, World!\n", "Hello, Bob!\n"), (out, named)
        print(f"integration: `python -m hello` -> {out.strip()!r}, --name Bob -> "
              f"{named.strip()!r}")
        tests = subprocess.run([sys.executable, "-m", "unittest", "discover", "-s", "tests",
                                "-t", "."], cwd=check, capture_output=True, text=True)
        assert tests.returncode == 0, tests.stderr
        print(f"integration tests: {tests.stderr.strip().splitlines()[-3]} ... OK")
    finally:
        sh(repo, "git", "worktree", "remove", "--force", str(check))
    print(sh(repo, "git", "liza", "verify").strip())


def main(argv: list[str]) -> int:
    keep = "--keep" in argv
    root = Path(tempfile.mkdtemp(prefix="gitliza-team-"))
    repo = root / "hello-cli"
    print(f"# the hello-CLI demo (docs/DEMO.md) in a throw-away repository: {repo}")
    setup(repo)
    procs = start_team(repo, root / "logs")
    ok = False
    try:
        ok = follow(repo, time.monotonic() + DEADLINE)
        if not ok:
            print("the goal was not completed in time: aborting the team")
            sh(repo, "git", "liza", "abort", "--reason", "example deadline")
        codes = {agent: p.wait(timeout=120) for agent, p, _ in procs}
        print(f"\nsupervisors exited: {codes}")
        if not ok or any(codes.values()):
            for agent, _, log in procs:
                print(f"--- {agent} ---\n{log.read_text()}")
            return 1
        check_result(repo)
        print(f"\nteam run complete. Supervisor logs: {root / 'logs'}")
        return 0
    finally:
        for _, p, _ in procs:
            if p.poll() is None:
                p.terminate()
                p.wait(30)
        if keep or not ok:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
