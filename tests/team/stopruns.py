"""Stop a real team at a random moment, many times, and count what is left.

One run: a copy of a board with one ready task, `git liza team --planners 0 --coders 1
--reviewers 1 -- AGENT` started in its own process group (as a terminal starts a job), directly
(`git-liza`) or through git (`git liza`), then after a random delay SIGINT or SIGTERM to the
whole group (a terminal's Ctrl-C) or to the team's process alone. The agents are shell scripts
that work for a random while and act through `git liza` (the coder commits and submits, the
reviewer approves, its supervisor merges, the coder waits for the merge), some ignoring SIGTERM, so the signal lands at launch,
while an agent runs, during a submit, a verdict or a merge, or while the supervisors wait.

The agents run in the default bubblewrap sandbox (gitliza/sandbox/: a user and PID namespace,
`--die-with-parent`, their `git liza` calls brokered by their supervisor), as a user's team does;
`sandbox=False` runs them unsandboxed. Every process of a run carries a marker in its environment
(STOP_MARK; the team passes its environment down, less LIZA_*, and the sandbox keeps it), so what
is left is found in /proc whatever its parent or PID namespace. A run is
judged by counts: processes left once the team has exited and a generous bound passed, the
team's exit code, stop lines per supervisor, `git liza validate`. The times (signal to the team's
exit, signal to the last process gone) are reported for benchmarks/stop.py, never asserted.
"""
from __future__ import annotations

import os
import random
import re
import shutil
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from tests.team.procs import BIN, add_task, env_for, make_board

STOP_MARK = "GITLIZA_STOP_RUN"
BOUND = 30.0  # seconds a run may take to be gone before what is left counts as left over
# The signal comes within this many seconds of the start: a sandboxed team's first agent starts
# some 3 to 6 s in on a loaded machine, and the work (0-3 s, a submit, a verdict, a merge, the
# coder's wait) takes as long again, so every phase gets its share of signals.
MAX_DELAY = 12.0

AGENT = """#!/bin/sh
[ "$STOP_TRAP" = 1 ] && trap '' TERM   # a stubborn agent: only SIGKILL ends it
sleep "$STOP_SLEEP"
case "$LIZA_ROLE" in
coder)
  echo "$LIZA_TASK_ID" > "$LIZA_TASK_ID.txt"
  git add "$LIZA_TASK_ID.txt"
  git diff --cached --quiet || git commit -q -m "implement $LIZA_TASK_ID"
  git liza submit "$LIZA_TASK_ID"
  # Waits for the merge: in the sandbox a brokered call its supervisor runs outside, which a stop
  # must end too (it would otherwise run on, orphaned, until its timeout).
  git liza wait status --task "$LIZA_TASK_ID" --status MERGED --timeout 60 || true ;;
code-reviewer|code_reviewer|reviewer)
  git liza verdict "$LIZA_TASK_ID" approve --commit "$LIZA_REVIEW_COMMIT" ;;
esac
"""


@dataclass
class Run:
    n: int
    delay: float
    sig: signal.Signals
    group: bool
    via_git: bool
    trap: bool
    sandbox: bool = True
    sandboxed: bool = False  # a bubblewrap of the run was seen before the signal
    code: int | None = None
    to_exit: float | None = None  # seconds from the signal to the team's exit
    to_gone: float | None = None  # seconds from the signal to the last process of the run gone
    left: list[str] = field(default_factory=list)  # processes left over (pid and command)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.left and not self.problems

    def describe(self) -> str:
        how = f"{self.sig.name} to the {'group' if self.group else 'team'}" + \
            (" through git" if self.via_git else "") + (", stubborn agent" if self.trap else "")
        return (f"run {self.n}: {how} at {self.delay:.2f}s -> exit {self.code}, "
                f"gone in {self.to_gone if self.to_gone is None else round(self.to_gone, 2)}s"
                + (f"; LEFT {self.left}" if self.left else "")
                + (f"; {'; '.join(self.problems)}" if self.problems else ""))


def template(root: Path) -> tuple[Path, Path]:
    """A repository with a board (short leases) and one ready task, and the agent script."""
    from tests.conftest import git
    repo = root / "template"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("# stop test\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "-q", "-m", "first")
    make_board(repo, coder_max_wait="60", reviewer_max_wait="60")
    add_task(repo, "t1")
    agent = root / "agent.sh"
    agent.write_text(AGENT)
    agent.chmod(0o755)
    return repo, agent


def marked(mark: str) -> dict[int, str]:
    """Live processes (not zombies) whose environment carries `mark`: pid -> command line."""
    want = f"{STOP_MARK}={mark}".encode()
    out = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_bytes()
            if stat[stat.rindex(b")") + 2:].split()[0] == b"Z":
                continue
            if want in Path(entry.path, "environ").read_bytes().split(b"\0"):
                cmd = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ")
                out[int(entry.name)] = cmd.decode(errors="replace").strip()[:120]
        except (OSError, ValueError, IndexError):
            continue
    return out


def one_run(root: Path, repo0: Path, agent: Path, n: int, rng: random.Random,
            max_delay: float = MAX_DELAY, sandbox: bool = True) -> Run:
    run = Run(n, rng.uniform(0.0, max_delay), rng.choice((signal.SIGINT, signal.SIGTERM)),
              group=rng.random() < 0.75, via_git=rng.random() < 0.5, trap=rng.random() < 0.2,
              sandbox=sandbox)
    d = root / f"run-{n}"
    shutil.copytree(repo0, d / "repo", symlinks=True)
    repo = d / "repo"
    mark = uuid.uuid4().hex
    env = env_for()
    if sandbox:  # the default launch: every agent in its bubblewrap sandbox (issue 26)
        del env["LIZA_SANDBOX"]
    env.update({STOP_MARK: mark, "STOP_SLEEP": f"{rng.uniform(0.0, 3.0):.2f}",
                "STOP_TRAP": "1" if run.trap else "0"})
    cmd = ["git", "liza"] if run.via_git else [str(BIN / "git-liza")]
    out = (d / "out.txt").open("wb")
    team = subprocess.Popen([*cmd, "team", "--planners", "0", "--coders", "1", "--reviewers", "1",
                             "--", str(agent)], cwd=repo, env=env, stdin=subprocess.DEVNULL,
                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=_as_a_terminal_job)
    out.close()
    try:
        start = time.monotonic()
        while time.monotonic() - start < run.delay:  # until the signal: is an agent sandboxed?
            run.sandboxed = run.sandboxed or any(_agent_box(c) for c in marked(mark).values())
            time.sleep(min(0.05, max(0.0, run.delay - (time.monotonic() - start))))
        t0 = time.monotonic()
        if run.group:
            os.killpg(team.pid, run.sig)
        else:
            team.send_signal(run.sig)
        try:
            run.code = team.wait(BOUND)
            run.to_exit = time.monotonic() - t0
        except subprocess.TimeoutExpired:
            run.problems.append(f"the team did not exit within {BOUND:.0f}s")
        while time.monotonic() - t0 < BOUND and marked(mark):
            time.sleep(0.02)
        left = marked(mark)
        if left:
            run.left = [f"{pid} {c}" for pid, c in sorted(left.items())]
        else:
            run.to_gone = time.monotonic() - t0
    finally:
        for pid in marked(mark):  # leave nothing behind for the next run, whatever happened
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if team.poll() is None:
            team.kill()
            team.wait()
    _judge(run, repo, (d / "out.txt").read_text(errors="replace"))
    return run


def _agent_box(cmd: str) -> bool:
    """An agent's bubblewrap (policy.bwrap_argv), not the supervisor's probe of bubblewrap
    (bwrap.py), which unshares no IPC namespace."""
    return cmd.split(" ", 1)[0].endswith("bwrap") and "--unshare-ipc" in cmd


def _as_a_terminal_job() -> None:
    """SIGINT as a terminal's job has it, whatever ours is: a run started from a background job
    of a script inherits SIGINT ignored, and a signal before the team's first line would be
    dropped by the kernel, as the user asked by ignoring it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _judge(run: Run, repo: Path, out: str) -> None:
    # 130 or 143; a team killed by the signal before it could catch it (-2, -15) is a stop too.
    stopped = {128 + int(run.sig), -int(run.sig), 130, 143, -2, -15}
    early = _interrupted_interpreter(out)
    if run.code is not None and run.code not in stopped and not early:
        run.problems.append(f"exit {run.code}: " + out.strip().splitlines()[-1:][0]
                            if out.strip() else f"exit {run.code}")
    for agent in ("coder-1", "reviewer-1"):
        lines = re.findall(rf"^\[{agent}\] SIG(?:INT|TERM): stopping", out, re.M)
        if len(lines) > 1:
            run.problems.append(f"{agent} said its stop {len(lines)} times")
        if f"[{agent}] supervising {agent} (" in out and not lines and \
                f"[{agent}] goal" not in out and "no work for" not in out:
            run.problems.append(f"{agent} took its token but never said it stopped")
    if run.sandbox and "WARNING: --sandbox off" in out:
        run.problems.append("an agent ran unsandboxed")
    if "cannot start a sandbox" in out:  # a probe killed by the stop is no verdict on bubblewrap
        run.problems.append("the stop passed for a missing sandbox")
    if "Traceback" in out and not early:
        run.problems.append("a traceback: " + out[out.index("Traceback"):][:300])
    r = subprocess.run([str(BIN / "git-liza"), "validate"], cwd=repo, env=env_for(),
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        run.problems.append(f"validate: {r.stdout.strip()} {r.stderr.strip()}"[:300])


def _interrupted_interpreter(out: str) -> bool:
    """SIGINT to the team while Python itself starts, before gitliza's first line runs: Python's
    own KeyboardInterrupt (its traceback, an exit by SIGINT, or exit 1 when it lands in the import
    of `site`). Nothing was started then; it is the one window no program written in Python
    closes. Anything else with a traceback is a defect."""
    if "started `git liza agent" in out or "KeyboardInterrupt" not in out:
        return False
    # Python's own: an import of the entry point, or of `site` (Python then says "Fatal Python
    # error: init_import_site" and exits 1).
    return (out.rstrip().endswith("KeyboardInterrupt") and out.count("Traceback") == 1) or \
        out.startswith("Fatal Python error: init_import_site")


def runs(root: Path, count: int, seed: int | None = None, max_delay: float = MAX_DELAY,
         report: Callable[[Run], None] = lambda _r: None, sandbox: bool = True) -> list[Run]:
    rng = random.Random(seed)
    repo0, agent = template(root)
    done = []
    for n in range(count):
        r = one_run(root, repo0, agent, n, rng, max_delay, sandbox)
        if not r.ok:  # the team's whole output, for the report
            r.problems.append("output: " + (root / f"run-{n}" / "out.txt").read_text(
                errors="replace").replace("\n", " | ")[-4000:])
        report(r)
        done.append(r)
        shutil.rmtree(root / f"run-{n}", ignore_errors=True)
    return done
