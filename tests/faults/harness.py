"""The fault-injection harness: real processes, real git, real kills, and the checks after them.

A kill lands in a *write window*: just before one of the writes (a file created for writing, a
rename, an unlink, a mkdir) a transition makes in the repository. The windows are not guessed
from delays: a calibration run of the op under strace lists its system calls, and each write into
the repository is then re-run with strace injecting SIGKILL on entry to exactly that call (strace
counts invocations per system call, so a window is a call name and its ordinal). The clock is
fixed (LIZA_NOW), so every run writes the same objects and makes the same calls.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from gitliza.services.lifecycle.claim import claim
from gitliza.services.lifecycle.doctor import doctor
from gitliza.services.locations import task_dir
from gitliza.services.lifecycle.merge import merge
from gitliza.services.lifecycle.review import claim_review, submit, verdict
from gitliza.services.api import Liza
from gitliza.git.store import Store
from gitliza.services.verify.engine import verify
from tests.access.mcp_client import setup_board
from tests.conftest import git

VENV_BIN = Path(sys.executable).parent
NOW = "2026-01-02T03:04:05Z"
WRITES = ("openat", "rename", "renameat", "renameat2", "unlink", "unlinkat", "mkdir", "mkdirat",
          "link", "linkat", "rmdir")
_CALL = re.compile(r"^(\w+)\((.*)\)\s+=\s+(-?\d+|\?)")
AGENTS = (("p1", "planner"), ("c1", "coder"), ("c2", "coder"), ("r1", "code_reviewer"))


def need_strace() -> str:
    path = shutil.which("strace")
    if path is None:
        pytest.skip("strace is not installed (apt-get install strace): no kill windows")
    probe = subprocess.run([path, "-qq", "-o", os.devnull, "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("strace cannot trace here (ptrace not permitted): no kill windows")
    return path


def cli_env(agent: str | None, **extra: str) -> dict[str, str]:
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "LIZA_NOW": NOW}
    env.pop("LIZA_AGENT_ID", None)
    if agent:
        env["LIZA_AGENT_ID"] = agent
    env.update(extra)
    return env


def liza(repo: Path, *args: str, agent: str | None = None, check: bool = False,
         timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`git liza ARGS` as a real process."""
    r = subprocess.run(["git", "liza", *args], cwd=repo, env=cli_env(agent), capture_output=True,
                       text=True, timeout=timeout)
    if check:
        assert r.returncode == 0, f"git liza {' '.join(args)}: {r.returncode} {r.stderr}"
    return r


def board_with(repo: Path, tasks: tuple[str, ...]) -> None:
    """A board with agents p1, c1, c2, r1 and ready tasks (in-process: set-up, not under test)."""
    setup_board(repo, tasks, AGENTS)


def work(repo: Path, tid: str, coder: str) -> None:
    """A commit in the task's worktree."""
    wt = task_dir(Liza.open(repo, coder).repo, tid)
    (wt / f"{tid}.txt").write_text(f"{tid}\n")
    git(wt, "add", f"{tid}.txt")
    git(wt, "commit", "-q", "-m", f"work on {tid}")


# Each transition: how to bring a task to where the op starts (in-process), the op as the CLI
# runs it, and what the lifecycle does next (in-process), to check that work goes on.
def _claimed(repo: Path, tid: str) -> None:
    claim(Liza.open(repo, "c1"), tid)
    work(repo, tid, "c1")


def _submitted(repo: Path, tid: str) -> None:
    _claimed(repo, tid)
    submit(Liza.open(repo, "c1"), tid)


def _in_review(repo: Path, tid: str) -> None:
    _submitted(repo, tid)
    claim_review(Liza.open(repo, "r1"), tid)


def _approved(repo: Path, tid: str) -> None:
    _in_review(repo, tid)
    verdict(Liza.open(repo, "r1"), tid, "approve")


@dataclass(frozen=True)
class Transition:
    name: str
    prepare: Callable[[Path, str], None]
    args: tuple[str, ...]
    agent: str
    done_status: str  # the task's status once the op is recorded (claim-review keeps it)
    after: Callable[[Path, str], None]  # the next op, from the recorded state


TRANSITIONS = {
    "claim": Transition("claim", lambda r, t: None, ("claim", "t1"), "c1", "CLAIMED",
                        lambda r, t: (work(r, t, "c1"), submit(Liza.open(r, "c1"), t))),
    "submit": Transition("submit", _claimed, ("submit", "t1"), "c1", "READY_FOR_REVIEW",
                         lambda r, t: claim_review(Liza.open(r, "r1"), t)),
    "claim-review": Transition("claim-review", _submitted, ("claim-review", "t1"), "r1",
                               "READY_FOR_REVIEW",  # with the reviewer's lease on it
                               lambda r, t: verdict(Liza.open(r, "r1"), t, "approve")),
    "verdict": Transition("verdict", _in_review, ("verdict", "t1", "approve"), "r1", "APPROVED",
                          lambda r, t: merge(Liza.open(r, "r1"), t)),
    "merge": Transition("merge", _approved, ("merge", "t1"), "r1", "MERGED",
                        lambda r, t: claim(Liza.open(r, "c1"), "t2")),
    "release": Transition("release", _claimed, ("release", "t1"), "c1", "UNCLAIMED",
                          lambda r, t: claim(Liza.open(r, "c2"), t)),
}


@dataclass(frozen=True)
class Window:
    call: str
    ordinal: int  # among all invocations of `call` by the process
    line: str  # what the calibration run saw (for the report)


def _is_write(call: str, args: str, root: str) -> bool:
    if call not in WRITES or root not in args:
        return False
    if call == "openat":
        return bool(re.search(r"O_WRONLY|O_RDWR|O_CREAT", args))
    return True


def calibrate(strace: str, repo: Path, args: tuple[str, ...], agent: str, log: Path
              ) -> tuple[list[Window], int]:
    """Run the op once under strace: its write windows in the repository, and its exit code."""
    cmd = [strace, "-qq", "-o", str(log), "-e", "trace=" + ",".join(WRITES),
           str(VENV_BIN / "git-liza"), *args]
    r = subprocess.run(cmd, cwd=repo, env=cli_env(agent), capture_output=True, text=True,
                       timeout=120)
    seen: Counter[str] = Counter()
    windows = []
    kinds: set[tuple[str, str]] = set()
    root = str(repo)
    for line in log.read_text().splitlines():
        m = _CALL.match(line)
        if m is None:
            continue
        call = m.group(1)
        seen[call] += 1
        if _is_write(call, m.group(2), root):
            # One window per kind of write: the files of a checkout, the objects of a pack
            # (named by their hash) are each the same window again.
            kind = (call, re.sub(r"\.worktrees/([^/]+)/(?!\.git\b)[^\"]*", r".worktrees/\1/F",
                                 re.sub(r"[0-9a-f]{12,}|_\d+_\d+", "H", m.group(2))))
            if kind not in kinds:
                kinds.add(kind)
                windows.append(Window(call, seen[call], line[:160]))
    return windows, r.returncode


def kill_at(strace: str, repo: Path, args: tuple[str, ...], agent: str, w: Window) -> int:
    """Run the op with SIGKILL injected on entry to window `w`; its exit status (-9: killed)."""
    cmd = [strace, "-qq", "-o", os.devnull, "-e", f"trace={w.call}",
           "-e", f"inject={w.call}:signal=KILL:when={w.ordinal}",
           str(VENV_BIN / "git-liza"), *args]
    r = subprocess.run(cmd, cwd=repo, env=cli_env(agent), capture_output=True, text=True,
                       timeout=120)
    return r.returncode


@dataclass
class Tally:
    kills: int = 0
    missed: int = 0  # the window was not reached (the run differed from the calibration)
    outcomes: Counter[str] = field(default_factory=Counter)  # recorded / not recorded
    leftovers: Counter[str] = field(default_factory=Counter)  # doctor's findings, by kind
    after_fix: list[str] = field(default_factory=list)  # what doctor --fix could not fix
    next_op_failures: list[str] = field(default_factory=list)
    verify_failures: list[str] = field(default_factory=list)

    def line(self, name: str) -> str:
        return (f"{name}: kills {self.kills} (missed {self.missed}), outcomes "
                f"{dict(self.outcomes)}, leftovers {dict(self.leftovers)}, unfixed "
                f"{len(self.after_fix)}, next-op failures {len(self.next_op_failures)}, verify "
                f"failures {len(self.verify_failures)}")


def recover_and_go_on(repo: Path, t: Transition, before: str, tally: Tally) -> None:
    """After a kill: verify, doctor --fix, then the op again if it was not recorded, then the next
    op. Everything as an agent would do it, counted."""
    store = Store.discover(repo)
    try:
        verify(store)
    except Exception as e:  # counted, and the test fails on it
        tally.verify_failures.append(f"{type(e).__name__}: {e}")
    tip = git(repo, "rev-parse", "refs/liza/state")
    recorded = tip != before
    tally.outcomes["recorded" if recorded else "not recorded"] += 1
    if recorded:  # exactly the op, on exactly the board before it
        assert git(repo, "rev-parse", "refs/liza/state~1") == before
        op = git(repo, "log", "-1", "--format=%(trailers:key=Liza-Op,valueonly)",
                 "refs/liza/state").strip()
        assert op == t.args[0], f"a kill left a transition that is not the op's: {op}"
    age_leftovers(repo)
    report = doctor(Liza.open(repo), fix=True)
    for p in report.problems:
        tally.leftovers[p.kind] += 1
    tally.after_fix += [f"{p.kind} {p.subject}: {p.detail} {p.error}" for p in report.remaining]
    try:
        # Not recorded, and doctor did not finish it either (an APPROVED task already merged):
        # the agent runs the op again.
        if git(repo, "rev-parse", "refs/liza/state") == before:
            r = liza(repo, *t.args, agent=t.agent)
            if r.returncode != 0:
                raise AssertionError(f"op again: {r.returncode} {r.stderr.strip()}")
        task = Liza.open(repo).board().task("t1")
        if task is None or task.status.value != t.done_status:
            raise AssertionError(f"t1 is {task and task.status.value}, not {t.done_status}")
        t.after(repo, "t1")
    except Exception as e:
        tally.next_op_failures.append(f"{type(e).__name__}: {' '.join(str(e).split())[:300]}")


def age_leftovers(repo: Path, seconds: float = 3600) -> None:
    """Make what a killed process left look as old as it is when someone runs doctor later (a
    live writer's lock or half-written pack is milliseconds old; doctor leaves those alone)."""
    then = time.time() - seconds
    gitdir = repo / ".git"
    for path in gitdir.rglob("*.lock"):
        os.utime(path, (then, then), follow_symlinks=False)
    for pack_dir in (gitdir / "objects" / "pack", gitdir / "liza-objects" / "pack"):
        names = {p.name for p in pack_dir.iterdir()} if pack_dir.is_dir() else set()
        for n in names:
            if n.startswith("tmp_") or (n.endswith(".pack") and n[:-5] + ".idx" not in names):
                os.utime(pack_dir / n, (then, then))


def garbage(repo: Path) -> int:
    r = subprocess.run(["git", "count-objects", "-v"], cwd=repo, capture_output=True, text=True,
                       check=True)
    return int(next(x.split()[1] for x in r.stdout.splitlines() if x.startswith("garbage:")))


def restore(src: Path, dst: Path) -> None:
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, symlinks=True)


def report(text: str) -> None:
    """One line for the run's log (pytest -s, or the captured output of a failure)."""
    sys.stderr.write(f"faults: {text}\n")

