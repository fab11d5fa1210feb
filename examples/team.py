#!/usr/bin/env python3
"""The main job: a real team builds the upstream hello-CLI demo (its vision spec, VISION below) end
to end.

    python3 dev.py example              # sets up .venv, then runs this
    python3 examples/team.py            # with gitliza installed
    python3 examples/team.py --keep     # keep the throw-away repository to look around
    python3 examples/team.py --web      # watch it on the live web board (gitliza[web]); the
                                        # board stays served after the run until Ctrl-C
    python3 examples/team.py --cli claude [--mcp] [--permissions worktree|bypass|own]
                                        # the same team with a real agent CLI (codex, gemini,
                                        # mistral too) and your own credentials

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

With `--cli NAME` the supervisors run that agent CLI instead (`git liza agent ROLE --cli NAME`),
with whatever credentials your environment gives it (ANTHROPIC_API_KEY, OPENAI_API_KEY,
GEMINI_API_KEY, MISTRAL_API_KEY, or the CLI's own login); the run then needs no rejection (a real
reviewer may approve at once) and gets a longer deadline. tests/agentcli/ runs this path against
a scripted model server.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gitliza.services.api import Liza
from gitliza.git.refwatch import RefWatcher

HERE = Path(__file__).resolve().parent
AGENTS = HERE / "agents"
BIN = Path(sys.executable).parent
ENV = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           GIT_AUTHOR_NAME="Liza Example", GIT_AUTHOR_EMAIL="example@liza.invalid",
           GIT_COMMITTER_NAME="Liza Example", GIT_COMMITTER_EMAIL="example@liza.invalid")
for _k in [k for k in ENV if k.startswith("LIZA_")]:
    del ENV[_k]


def _sandbox_or_off() -> None:
    """The agents run sandboxed (docs/security.md); where no sandbox can start here, the demo
    says so and runs them with --sandbox off rather than not at all."""
    from gitliza.errors import MissingDependency
    from gitliza.sandbox import bwrap
    try:
        bwrap.require()
    except MissingDependency as e:
        print(f"(no agent sandbox on this machine: {e}; the demo runs with --sandbox off)")
        ENV["LIZA_SANDBOX"] = "off"


TEAM = [("planner", "planner-1", "planner.py"), ("coder", "coder-1", "coder.py"),
        ("coder", "coder-2", "coder.py"), ("code-reviewer", "reviewer-1", "reviewer.py")]
CONFIG = {"heartbeat_interval": "2", "lease_duration": "60", "coder_max_wait": "300",
          "planner_max_wait": "300", "reviewer_max_wait": "300", "restart_delay": "1",
          "crash_delay": "1", "crash_delay_max": "4"}
DEADLINE = 600.0  # seconds: give up (abort the team) if the goal is not completed by then
CLI_DEADLINE = 3600.0  # ... with a real agent CLI (a model takes minutes per task)

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
    # USD per million tokens, for runs whose CLI reports no cost (docs/usage.md): the scripted
    # agents' model, and Codex's and Gemini's runs (example rates; no prices are built in).
    sh(repo, "git", "liza", "config", "prices", "scripted=3/15 codex=1.25/10 gemini=1.25/10")


def agent_argv(role: str, program: str, cli: str | None = None, mcp: bool = False,
               permissions: str | None = None) -> list[str]:
    """The supervisor of one member: the scripted agent, or `--cli NAME` (a real agent CLI)."""
    argv = [str(BIN / "git-liza"), "agent", role]
    if cli is None:
        return [*argv, "--", sys.executable, str(AGENTS / program)]
    argv += ["--cli", cli]
    if mcp:
        argv.append("--mcp")
    if permissions:
        argv += ["--permissions", permissions]
    return argv


def start_team(repo: Path, logs: Path, cli: str | None = None, mcp: bool = False,
               permissions: str | None = None) -> list[tuple[str, subprocess.Popen[bytes], Path]]:
    logs.mkdir(parents=True, exist_ok=True)
    procs = []
    for role, agent, program in TEAM:
        log = logs / f"{agent}.log"
        argv = agent_argv(role, program, cli, mcp, permissions)
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


def check_result(repo: Path, scripted: bool = True) -> None:
    status = Liza.open(repo).board()
    tasks = list(status.all_tasks())
    assert tasks and all(t.status == "MERGED" for t in tasks), [(t.id, t.status) for t in tasks]
    rejected = [t.id for t in tasks if any(h.event == "rejected" for h in t.history)]
    assert rejected or not scripted, "the reviewer rejected nothing"
    print(f"\nevery task MERGED: {', '.join(sorted(t.id for t in tasks))}; "
          f"rejected at least once: {', '.join(rejected) or 'none'}")
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
    print("\nwhat the team used (`git liza usage`):")
    print(sh(repo, "git", "liza", "usage").rstrip())


def serve_board(repo: Path) -> tuple[subprocess.Popen[str], str]:
    """`git liza web` on the example's board (opens a browser where there is one); its URL."""
    proc = subprocess.Popen([sys.executable, "-m", "gitliza", "web", "--port", "0"], cwd=repo,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    first, url = proc.stdout.readline(), proc.stdout.readline().strip()
    if not url.startswith("http"):
        proc.wait(10)
        sys.exit(f"team example: `git liza web` did not start (exit {proc.returncode}): "
                 "pip install 'gitliza[web]'")
    print(f"# the live board: {url}")
    return proc, url


def keep_serving(web: tuple[subprocess.Popen[str], str]) -> None:
    proc, url = web
    print(f"\nthe board is still served at {url}\n(Ctrl-C to stop it)")
    try:
        proc.wait()
    except KeyboardInterrupt:
        pass
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(30)


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="The hello-CLI demo built by a Liza team.")
    p.add_argument("--keep", action="store_true", help="keep the throw-away repository")
    p.add_argument("--web", action="store_true", help="serve the live web board (`git liza web`) "
                   "during the run and after it, until Ctrl-C (needs gitliza[web])")
    p.add_argument("--cli", help="run a real agent CLI: claude, codex, gemini or mistral "
                                 "(default: the scripted agents of examples/agents/)")
    p.add_argument("--mcp", action="store_true", help="with --cli: give the agents gitliza's "
                                                      "MCP tools")
    p.add_argument("--permissions", help="with --cli: worktree (default) | bypass | own")
    p.add_argument("--again", default="python3 dev.py example --keep", help=argparse.SUPPRESS)
    p.add_argument("--deadline", type=float, help="seconds before the team is aborted "
                   f"(default {DEADLINE:g}, {CLI_DEADLINE:g} with --cli)")
    args = p.parse_args(argv)
    if (args.mcp or args.permissions) and not args.cli:
        p.error("--mcp and --permissions go with --cli")
    return args


def main(argv: list[str]) -> int:
    args = parse(argv)
    keep = args.keep
    root = Path(tempfile.mkdtemp(prefix="gitliza-team-"))
    repo = root / "hello-cli"
    what = f"agent CLI {args.cli}" if args.cli else "scripted agents"
    print(f"# the hello-CLI demo (README.md, the main job) with {what} in a throw-away repository: {repo}")
    _sandbox_or_off()
    setup(repo)
    web = serve_board(repo) if args.web else None
    procs = start_team(repo, root / "logs", args.cli, args.mcp, args.permissions)
    ok = False
    deadline = args.deadline or (CLI_DEADLINE if args.cli else DEADLINE)
    try:
        ok = follow(repo, time.monotonic() + deadline)
        if not ok:
            print("the goal was not completed in time: aborting the team")
            sh(repo, "git", "liza", "abort", "--reason", "example deadline")
        codes = {agent: p.wait(timeout=120) for agent, p, _ in procs}
        print(f"\nsupervisors exited: {codes}")
        if not ok or any(codes.values()):
            for agent, _, log in procs:
                print(f"--- {agent} ---\n{log.read_text()}")
            return 1
        check_result(repo, scripted=args.cli is None)
        print("\nteam run complete. " + (
            f"Supervisor logs: {root / 'logs'}" if keep else
            "The throw-away repository and its supervisor logs are deleted now "
            f"(run it with --keep to look around: `{args.again}`)."))
        return 0
    finally:
        for _, p, _ in procs:
            if p.poll() is None:
                p.terminate()
                p.wait(30)
        if web is not None:
            keep_serving(web)
        if keep or not ok:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
