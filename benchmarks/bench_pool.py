"""A team that sizes itself: a plan that grows from 2 to 20 claimable tasks under
`git liza team --max-coders 4 --max-reviewers 2` (no fixed member), a scripted coder that works
2 s per task and submits, a scripted reviewer that approves (its supervisor merges).

    .venv/bin/python benchmarks/bench_pool.py [--tasks 20] [--work 2] [--idle-exit 5]

Two tasks at the start; the rest are added one every 0.5 s while the team runs. Reports the pool
supervisors started and stopped (the `pool_idle_exit` exits), the most running at once, their time
alive, the time they held a task (claim to submit, from the board's history) and the rest: idle
time; and the wall time from the team's start to its end. No assertions (docs/performance.md).
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gitliza.core import clock  # noqa: E402
from gitliza.services.api import Liza  # noqa: E402
from tests.conftest import git  # noqa: E402
from tests.team.procs import BIN, add_task, env_for, make_board, script  # noqa: E402
from tests.team.test_supervisor import SUBMIT  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=20)
    ap.add_argument("--work", type=float, default=2.0)
    ap.add_argument("--idle-exit", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        git(repo, "init", "-q", "-b", "main")
        (repo / "README.md").write_text("project\n")
        git(repo, "add", "README.md")
        git(repo, "commit", "-q", "-m", "initial")
        make_board(repo, pool_idle_exit=str(args.idle_exit))
        for i in (1, 2):
            add_task(repo, f"t{i}")
        agent = script(Path(tmp), "agent.sh", f"""case "$LIZA_ROLE" in
coder) sleep {args.work}
{SUBMIT} ;;
*) git liza verdict "$LIZA_TASK_ID" approve --commit "$LIZA_REVIEW_COMMIT" ;;
esac
""")
        t0 = time.time()
        team = subprocess.Popen([str(BIN / "git-liza"), "team", "--planners", "0", "--coders",
                                 "0", "--reviewers", "0", "--max-coders", "4", "--max-reviewers", "2",
                                 "--", str(agent)],
                                cwd=repo, env=env_for(), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        stamps: list[tuple[float, str]] = []

        def pump() -> None:
            assert team.stdout is not None
            for line in team.stdout:
                stamps.append((time.time(), line.rstrip("\n")))
        import threading
        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        for i in range(3, args.tasks + 1):
            time.sleep(0.5)
            add_task(repo, f"t{i}")
        team.wait(timeout=1800)
        reader.join(timeout=10)
        wall = time.time() - t0
        start: dict[str, float] = {}
        alive = 0.0
        live = most = stopped = 0
        for at, line in stamps:
            m = re.match(r"^\[(coder-\d+|reviewer-\d+)\] (.*)$", line)
            if not m:
                continue
            if m.group(2).startswith("started `git liza agent"):
                start[m.group(1)] = at
                live += 1
                most = max(most, live)
            elif "(pool_idle_exit); exiting" in m.group(2):
                stopped += 1
                live -= 1
                alive += at - start.get(m.group(1), at)
        board = Liza.open(repo, sync=False).board()
        held = 0.0
        for t in board.all_tasks():
            claimed = next((h.time for h in t.history if h.event == "claimed"), None)
            done = next((h.time for h in t.history if h.event == "ready_for_review"), None)
            if claimed and done:
                held += clock.to_epoch(done) - clock.to_epoch(claimed)
        print(f"pool: plan 2 -> {args.tasks} tasks (one added every 0.5 s), --max-coders 4, "
              f"--max-reviewers 2, pool_idle_exit {args.idle_exit}s, {args.work:g}s of work per task: "
              f"{len(start)} supervisors started, {stopped} stopped idle, at most {most} at once; "
              f"alive {alive:.0f} supervisor-s, holding a task {held:.0f} s, idle {alive - held:.0f}"
              f" s; team exit {team.returncode} after {wall:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
