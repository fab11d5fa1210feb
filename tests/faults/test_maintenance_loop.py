"""The user's own git maintenance beside a real team (issue 29, item 1).

Two coder supervisors and a reviewer supervisor run shell agents (they act only through git and
`git liza`), a planner adds tasks, and beside them a loop runs git's most destructive maintenance
again and again: `gc --aggressive --prune=now`, `repack -ad`, `prune`, `reflog expire --expire=now
--all`, `worktree prune`, `maintenance run`. Afterwards: `verify` is clean, `git fsck` finds no
missing object, every task branch and worktree HEAD resolves, no supervisor died, and the team went
on merging while the loop ran. Bounded in rounds (never in time) and reported.
"""
from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from tests.cli.test_board import liza, ok
from tests.conftest import git
from tests.faults import harness as h
from tests.sandbox.test_rogue import needs_bwrap
from tests.team.procs import Sup, add_task, env_for, make_board, script, task_of

pytestmark = pytest.mark.slow

ROUNDS = 12  # rounds of the whole maintenance list, at least
MAX_ROUNDS = 120  # ... and at most, while the team has tasks left to merge
TASKS = 10
MAINTENANCE = (("gc", "--aggressive", "--prune=now", "--quiet"), ("repack", "-ad", "-q"),
               ("prune",), ("reflog", "expire", "--expire=now", "--all"), ("worktree", "prune"),
               ("maintenance", "run"))

# A coder that commits several times (each commit is a window in which its objects are written
# and not yet referenced by its branch: what `git prune` deletes).
CODER = """test -n "$LIZA_TASK_ID"
for i in 1 2 3 4 5; do
  echo "$LIZA_TASK_ID $i" > "$LIZA_TASK_ID.txt"
  git add "$LIZA_TASK_ID.txt"
  git commit -q -m "implement $LIZA_TASK_ID, step $i"
done
git liza submit "$LIZA_TASK_ID"
"""
REVIEWER = """git liza verdict "$LIZA_TASK_ID" approve --commit "$LIZA_REVIEW_COMMIT"
"""


def _merged(repo: Path) -> int:
    return sum(1 for i in range(TASKS) if task_of(repo, f"t{i}")["status"] == "MERGED")


def test_the_team_survives_the_users_maintenance_in_a_loop(repo: Path, tmp_path: Path) -> None:
    _team_beside_maintenance(repo, tmp_path, ())


@needs_bwrap
def test_a_sandboxed_team_and_the_users_maintenance_coexist(repo: Path, tmp_path: Path) -> None:
    """Issue 38: the coders' commits come in from their own git dirs (gitview.py) while the loop
    runs: no maintenance command fails on an object only a coder's store holds (a worktree
    index naming it, a branch moved onto it) and no commit is lost between fetch and update."""
    # Every failure of a user's command fails this test, the live refs' included (their renewals
    # are in gitliza's own store now: git/liveobjects.py), and so does any lost commit.
    _team_beside_maintenance(repo, tmp_path, ("--sandbox", "on"))


def _team_beside_maintenance(repo: Path, tmp_path: Path, mode: tuple[str, ...]) -> None:
    make_board(repo, lease_duration="30", reviewer_max_wait="600")
    coder = script(tmp_path, "coder.sh", CODER)
    reviewer = script(tmp_path, "reviewer.sh", REVIEWER)
    sups = [Sup(repo, "coder", "coder-1", *mode, "--", str(coder)),
            Sup(repo, "coder", "coder-2", *mode, "--", str(coder)),
            Sup(repo, "code-reviewer", "reviewer-1", *mode, "--", str(reviewer))]
    stop = threading.Event()
    rounds = [0]
    merged_during = [0]
    failures: list[str] = []
    added = threading.Event()

    def maintain() -> None:
        # At least ROUNDS rounds, and on until the team has merged every task (at most
        # MAX_ROUNDS): every merge happens with the maintenance running.
        while not stop.is_set() and rounds[0] < MAX_ROUNDS and (
                rounds[0] < ROUNDS or merged_during[0] < TASKS):
            for cmd in MAINTENANCE:
                r = subprocess.run(["git", *cmd], cwd=repo, capture_output=True, text=True,
                                   env=env_for())
                if r.returncode != 0 and "another git process" not in r.stderr:
                    failures.append(f"git {' '.join(cmd)}: {r.returncode} {r.stderr.strip()}")
            rounds[0] += 1
            if added.is_set():
                try:
                    merged_during[0] = _merged(repo)
                except AssertionError as e:  # `show` failed: recorded, and the loop stops
                    failures.append(f"git liza show: {e}")
                    return

    loop = threading.Thread(target=maintain)
    try:
        loop.start()
        for i in range(TASKS):  # the planner: a task at a time while the loop runs
            add_task(repo, f"t{i}")
        added.set()
        loop.join()
    finally:
        stop.set()
        loop.join()
    try:
        dead = [s.output() for s in sups if s.proc.poll() is not None]
    finally:
        liza(repo, "abort", agent=None)
        codes = [s.wait() for s in sups]
    lost = _lost_commits(repo)
    h.report(f"maintenance loop{' (' + ' '.join(mode) + ')' if mode else ''}: {rounds[0]} rounds of {len(MAINTENANCE)} commands survived "
             f"beside a team; {merged_during[0]} of {TASKS} tasks merged during the loop, "
             f"{len(failures)} failed maintenance commands, {len(lost)} lost commits")
    assert not dead, dead
    assert codes == [0, 0, 0], [s.output() for s in sups]
    for s in sups:  # no agent crashed on a lost commit, no supervisor hit a missing object
        crashed = "crashed" in s.output()
        logs = "\n".join(p.read_text()[-600:] for p in sorted(
            (repo / ".liza" / "agent-logs").glob("*.log"))) if crashed else ""
        assert not crashed and "internal error" not in s.output(), s.output() + logs
    assert not failures, failures
    assert not lost, lost
    assert ROUNDS <= rounds[0] < MAX_ROUNDS
    assert merged_during[0] == TASKS  # the team merged everything while the loop ran
    ok(liza(repo, "verify", agent=None))
    fsck = subprocess.run(["git", "fsck", "--no-dangling"], cwd=repo, capture_output=True,
                          text=True)
    assert fsck.returncode == 0 and "missing" not in fsck.stdout + fsck.stderr, fsck.stderr
    for ref in git(repo, "for-each-ref", "--format=%(refname)").split():
        git(repo, "rev-parse", "--verify", "-q", ref + "^{commit}")
    assert _merged(repo) == TASKS
    doctor = liza(repo, "doctor", agent=None)
    assert "missing" not in doctor.stdout + doctor.stderr, doctor.stdout


def _lost_commits(repo: Path) -> list[str]:
    """Every coder commit (five a task) that the integration branch does not hold."""
    subjects = set(git(repo, "log", "--format=%s", "integration").splitlines())
    return [f"implement t{i}, step {k}" for i in range(TASKS) for k in range(1, 6)
            if f"implement t{i}, step {k}" not in subjects]
