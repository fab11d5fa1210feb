"""What a review quorum costs a team (issue 40; a script, not a test): real `git liza agent`
supervisors (one scripted coder, one or two scripted reviewers) on one repository build N tasks
with `review_quorum` 1 and then 2; the reviews (verdicts) and the wall time per merged task.

    .venv/bin/python benchmarks/bench_quorum.py            # 8 tasks per run
    .venv/bin/python benchmarks/bench_quorum.py -n 4 --criteria

The agents are shell scripts (the coder commits a file and submits; a reviewer approves, with
evidence for each criterion under --criteria), so the figure is the protocol's cost (the extra
review's claim, vote, prompt, launch), not a model's thinking time, which a real reviewer adds
once per extra approval. `--sandbox off`: the sandbox's cost is bench_team's and sandbox.py's.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_team import ENV, repo  # noqa: E402
from gitliza.core.ops import Add, Register  # noqa: E402
from gitliza.core.ops.goal import ConfigSet  # noqa: E402
from gitliza.services.api import Liza  # noqa: E402

BIN = Path(sys.executable).parent
CODER = ('echo "$LIZA_TASK_ID" > "$LIZA_TASK_ID.txt" && git add . && git commit -qm work '
         '&& git liza submit "$LIZA_TASK_ID" >/dev/null')
REVIEWER = 'git liza verdict "$LIZA_TASK_ID" approve {evidence} >/dev/null'


def start(path: Path, role: str, agent: str, script: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([str(BIN / "git-liza"), "agent", role, "--sandbox", "off", "--",
                             "sh", "-c", script], cwd=path, env=dict(ENV, LIZA_AGENT_ID=agent),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run(root: Path, quorum: int, n: int, criteria: bool) -> dict[str, float]:
    path, liza = repo(root, f"q{quorum}")
    liza.do(ConfigSet, key="review_quorum", value=str(quorum))
    liza.do(ConfigSet, key="reviewer_max_wait", value="3600")
    reviewers = [f"reviewer-{i}" for i in range(1, quorum + 1)]
    for agent, role in [("coder-1", "coder"), *((r, "code_reviewer") for r in reviewers)]:
        liza.do(Register, agent=agent, role=role)
    done_when = "- the file names the task\n- it is committed" if criteria else "it exists"
    evidence = ('--evidence "1=path:$LIZA_TASK_ID.txt:1" --evidence "2=test:git-log"'
                if criteria else "")
    t0 = time.monotonic()
    for i in range(n):
        liza.do(Add, task=f"t{i}", description="d", spec_ref="README.md", done_when=done_when,
                criteria=tuple(done_when[2:].split("\n- ")) if criteria else (), scope="x",
                ready=True)
    procs = [start(path, "coder", "coder-1", CODER)]
    procs += [start(path, "code_reviewer", r, REVIEWER.format(evidence=evidence))
              for r in reviewers]
    try:
        deadline = time.monotonic() + 120 + 30 * n
        while time.monotonic() < deadline:
            board = Liza.open(path).board()
            if all((t := board.task(f"t{i}")) is not None and t.status == "MERGED"
                   for i in range(n)):
                break
            time.sleep(0.5)
        else:
            raise SystemExit(f"quorum {quorum}: not every task merged in time")
        wall = time.monotonic() - t0
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(60)
    tasks = [board.task(f"t{i}") for i in range(n)]
    verdicts = sum(1 for t in tasks if t is not None
                   for h in t.history if h.event in ("vote", "approved", "rejected"))
    check = subprocess.run([str(BIN / "git-liza"), "verify", "--json"], cwd=path, env=ENV,
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    return {"reviews_per_task": verdicts / n, "seconds_per_task": wall / n, "wall": wall}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=8)
    ap.add_argument("--criteria", action="store_true",
                    help="two acceptance criteria per task, evidence on every approval")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-quorum-") as tmp:
        root = Path(tmp)
        home = root / "home"
        home.mkdir()
        ENV.update(HOME=str(home), GIT_CONFIG_GLOBAL=str(home / ".gitconfig"))
        results = {q: run(root, q, args.n, args.criteria) for q in (1, 2)}
    for q, r in results.items():
        print(f"review_quorum {q}: {r['reviews_per_task']:.2f} reviews per merged task, "
              f"{r['seconds_per_task']:.2f} s per merged task ({args.n} tasks in "
              f"{r['wall']:.1f} s, one coder, {q} reviewer(s))")
    ratio = results[2]["seconds_per_task"] / results[1]["seconds_per_task"]
    print(f"quorum 2 / quorum 1: {ratio:.2f}x the wall time per merged task")
    return 0


if __name__ == "__main__":
    sys.exit(main())
