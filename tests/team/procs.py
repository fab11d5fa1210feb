"""Helpers for supervisor tests: a board with short leases, scripted agents, supervisors as real
processes whose output is read line by line."""
from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable

from tests.cli.test_board import liza, ok

BIN = Path(sys.executable).parent
WAIT = 60.0  # upper bound for anything a test waits for (never a timing assertion)

FAST = {"heartbeat_interval": "1", "lease_duration": "5", "coder_max_wait": "600",
        "planner_max_wait": "600", "reviewer_max_wait": "600", "restart_delay": "1",
        "crash_delay": "1", "crash_delay_max": "2"}


def env_for(agent: str | None = None) -> dict[str, str]:
    e = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    for k in [k for k in e if k.startswith("LIZA_")]:
        del e[k]
    if agent:
        e["LIZA_AGENT_ID"] = agent
    # The scripted agents of these tests keep their counters and markers in the test's tmp dir,
    # which a sandbox hides: they test the supervisor's loop, so they run it unsandboxed
    # (tests/sandbox/ runs supervisors with `--sandbox on`, which wins over this).
    e["LIZA_SANDBOX"] = "off"
    return e


def make_board(repo: Path, **config: str) -> Path:
    ok(liza(repo, "init", "Build hello", agent=None))
    for k, v in {**FAST, **config}.items():
        ok(liza(repo, "config", k, v, agent=None))
    return repo


def new_board_repo(prefix: str, **config: str) -> tuple[Path, Path]:
    """A throw-away directory and in it `repo`: one commit on main and a board (make_board), for
    the scripts that run outside pytest (benchmarks/) and so have no `repo` fixture."""
    import tempfile
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    repo = tmp / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("project\n")
    for args in (("init", "-q", "-b", "main"), ("add", "README.md"),
                 ("commit", "-q", "-m", "initial")):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env_for())
    return tmp, make_board(repo, **config)


def add_task(repo: Path, task: str, *deps: str) -> None:
    args = ["add", task, "--desc", f"do {task}", "--spec-ref", "README.md", "--done-when", "done",
            "--scope", task, "--ready"]
    for d in deps:
        args += ["--depends-on", d]
    ok(liza(repo, *args, agent=None))


def script(tmp: Path, name: str, body: str) -> Path:
    """A scripted agent: a shell script (it acts only through git and `git liza`)."""
    path = tmp / name
    path.write_text("#!/bin/sh\nset -e\n" + body)
    path.chmod(0o755)
    return path


class Sup:
    """One `git liza agent` supervisor process."""

    def __init__(self, repo: Path, role: str, agent: str, *argv: str,
                 env: dict[str, str] | None = None) -> None:
        # git-liza itself, not `git liza` (git would run it as a child: signals to git's pid
        # would not reach the supervisor).
        self.proc = subprocess.Popen(
            [str(BIN / "git-liza"), "agent", role, *argv], cwd=repo,
            env={**env_for(agent), **(env or {})},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        self._q: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._q.put(line.rstrip("\n"))
        self._q.put(None)

    def expect(self, text: str, timeout: float = WAIT) -> str:
        """Read output until a line containing `text` (fails on EOF or after `timeout`)."""
        for line in self.lines:
            if text in line:
                return line
        return self.first_of(text, timeout=timeout)

    def first_of(self, *texts: str, timeout: float = WAIT) -> str:
        """The first line, from the next one read on, that contains one of `texts` (fails on EOF
        or after `timeout` without a new line): which of several outcomes came first."""
        while True:
            try:
                line = self._q.get(timeout=timeout)
            except queue.Empty:
                shown = f"no {texts[0]!r}" if len(texts) == 1 else f"none of {texts!r}"
                raise AssertionError(f"{shown} in:\n" + "\n".join(self.lines)) from None
            if line is None:
                self._q.put(None)
                shown = texts[0] if len(texts) == 1 else texts
                raise AssertionError(f"exited before {shown!r}:\n" + "\n".join(self.lines))
            self.lines.append(line)
            if any(t in line for t in texts):
                return line

    def wait(self, timeout: float = WAIT) -> int:
        code = self.proc.wait(timeout)
        try:
            self.expect("\0", 0.5)  # drain
        except AssertionError:
            pass
        return code

    def output(self) -> str:
        return "\n".join(self.lines)

    def signal(self, sig: signal.Signals) -> None:
        self.proc.send_signal(sig)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def commits_then_hangs(tell: str, subject: str = "wip on $LIZA_TASK_ID",
                       edits: bool = True) -> str:
    """An agent script that commits once (committed.txt, `subject`), leaves an uncommitted edit of
    README.md and an untracked new.txt (with `edits`), runs `tell` (how the test learns it got
    there) and hangs until it is killed: a session that dies with work in its worktree."""
    work = f"""test -n "$LIZA_TASK_ID"
echo committed > committed.txt
git add committed.txt
git commit -q -m "{subject}"
"""
    if edits:
        work += """echo "an uncommitted edit" > README.md
echo "untracked" > new.txt
"""
    return f"{work}{tell}\nexec sleep 600\n"


def board_json(repo: Path) -> Any:
    import json
    return json.loads(ok(liza(repo, "status", "--json", agent=None)))


def task_of(repo: Path, task: str) -> Any:
    import json
    return json.loads(ok(liza(repo, "show", task, "--json", agent=None)))


def ops(repo: Path) -> list[tuple[str, str, str | None]]:
    """(op, actor, task) of every state commit, oldest first."""
    import json
    log = json.loads(ok(liza(repo, "log", "--all", "--json", agent=None)))
    return [(e["op"], e["actor"], e.get("task")) for e in reversed(log)]


def wait_status(repo: Path, task: str, status: str) -> None:
    ok(liza(repo, "wait", "status", "--task", task, "--status", status, "--timeout", str(WAIT),
            agent=None))


def until(cond: Callable[[], object], what: str | Callable[[], str],
          timeout: float = WAIT) -> None:
    """Wait for `cond()` to hold, looking again every 50 ms. `timeout` bounds a hang and measures
    nothing: it is generous, and a condition that has not come by then, not even at one last look,
    fails the test as "never came: `what`" (`what()` when it needs the moment's details)."""
    import time
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    if not cond():
        raise AssertionError(f"never came: {what() if callable(what) else what} "
                             f"(looked for {timeout:.0f} s)")
