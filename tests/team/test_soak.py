"""Soak: nothing a long-lived process holds grows with the transitions it makes or sees.

Accelerated (heartbeat 1 s, lease 5 s, a new second per op): thousands of transitions through the
library API in this process, and a real supervisor (`git liza agent`) keeping a lease while
another writer churns the board. Sampled from /proc/PID: open files, open files whose file was
deleted (packs merged away), threads, RSS; and the pack count and the size of `.liza/`. Counts,
not times: the supervisor's samples are taken every N transitions, however long they take.
benchmarks/bench_soak.py runs the long version (10,000 transitions) for docs/performance.md.

And a team that works (issue 39): two coder supervisors and a reviewer's, instant scripted agents
(benchmarks/busyteam.py), through 300 claims, reviews and merges, sampled every 50 merged tasks;
benchmarks/bench_busy.py runs it for as long as asked and plots it."""
from __future__ import annotations

import dataclasses
import os
import time
import subprocess
import sys
from pathlib import Path

import pytest

from gitliza.core.ops import Register
from gitliza.core.ops.work import Heartbeat
from gitliza.git.objects.packs import most_packs
from gitliza.services.api import Liza
from tests.team.procs import Sup, add_task, make_board, ops, script, wait_status

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from bench_soak import Clock, Sample, sample  # noqa: E402
from busyteam import TEAM, Proc, Team, pack_counts, proc  # noqa: E402

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc (Linux)")]


def assert_flat(first: Sample, samples: list[Sample], writers: int) -> None:
    """What a sample holds moves with the moment (the live packs, a merge in progress): the
    bounds compare the worst of the early samples with the worst of the late ones. A leak of one
    file or a few hundred bytes per transition shows in hundreds of files or several percent."""
    early, late = [first, *samples[:2]], samples[-3:]
    # Under a burst the pack count runs past PACK_BUDGET while the marks are young (packs.py):
    # bounded by counts whatever the load (most_packs says how), not growing.
    assert max(s.packs for s in late) <= max(s.packs for s in early) + 16, (early, late)
    assert max(s.packs for s in samples) <= most_packs(writers), samples
    assert max(s.fds for s in late) <= max(s.fds for s in early) + 10, (early, late)
    assert max(s.deleted_packs for s in late) <= max(s.deleted_packs for s in early) + 2, \
        (early, late)
    assert max(s.threads for s in late) <= max(s.threads for s in early), (early, late)
    # RSS moves with the moment too (pack windows mapped, a merge's buffers): a leak lifts every
    # late sample, so the least of the late is held to the most of the early (one late peak
    # against the first sample alone failed at 11.6% once under load, and passed alone).
    assert min(s.rss_kb for s in late) <= max(s.rss_kb for s in early) * 1.10, (early, late)
    assert late[-1].liza_bytes <= first.liza_bytes + 64 * 1024, (first, late)


def test_thousands_of_transitions_in_one_process_hold_nothing_more(repo: Path) -> None:
    human = Liza.open(repo, "human", now=Clock())
    make_board(repo)
    human.do(Register, agent="coder-9", role="coder")
    human.do(Register, agent="planner-9", role="planner")
    del human  # a handle that never reads again keeps what it held: a few packs, not more
    coder = Liza.open(repo, "coder-9", now=Clock())
    planner = Liza.open(repo, "planner-9", now=Clock())
    pid = os.getpid()

    def run(n: int) -> None:
        for i in range(n):
            coder.do(Heartbeat)
            if i % 10 == 0:
                planner.do(Heartbeat)
            # Both handles read what the other wrote (as a supervisor and its heartbeat thread)
            assert coder.board().agent("planner-9") is not None
            assert planner.board().agent("coder-9") is not None

    # Issue 28's goal as the issue measures it: from the 1,001st to the 10,001st transition, open
    # files within 10 and RSS within 10% (the warm-up fills the caches and the pack directory).
    run(1000)
    first = sample(pid, repo)
    samples = []
    for _ in range(9):
        run(1000)
        samples.append(sample(pid, repo))
    assert_flat(first, samples, writers=1)  # one process: its handles share its pack counter


SLEEPER = "sleep 600\n"  # holds its task; the supervisor's lease keeper beats every second


def test_a_supervisor_keeping_a_lease_under_churn_holds_nothing_more(repo: Path,
                                                                      tmp_path: Path) -> None:
    make_board(repo)  # heartbeat every 1 s, lease 5 s
    add_task(repo, "t1")
    sup = Sup(repo, "coder", "coder-1", "--", str(script(tmp_path, "sleeper.sh", SLEEPER)))
    try:
        wait_status(repo, "t1", "CLAIMED")
        human = Liza.open(repo, "human")
        human.do(Register, agent="coder-9", role="coder")
        other = Liza.open(repo, "coder-9", now=Clock())
        pid = sup.proc.pid

        def churn(n: int) -> None:
            # Every write wakes the supervisor's lease keeper, which reads the board: it loads
            # the packs this process writes, merges and removes.
            for _ in range(n):
                other.do(Heartbeat)

        def state_commits() -> int:
            return int(subprocess.run(["git", "rev-list", "--count", "refs/liza/state"], cwd=repo,
                                      capture_output=True, text=True, check=True).stdout)

        def live_ref() -> str:
            return subprocess.run(["git", "rev-parse", "-q", "--verify",
                                   "refs/liza/live/coder-1"], cwd=repo, capture_output=True,
                                  text=True).stdout.strip()

        def caught_up() -> Sample:
            # A sample is taken once the supervisor has read the board after the churn stopped:
            # that read lets go of the packs the churn merged away. Sampled while it lags behind
            # the churn (a loaded machine gives it little CPU), it holds whatever was deleted
            # since its last read: a figure of the machine's load, not of what the process
            # keeps. Its lease keeper reads the board before each renewal; the second renewal
            # seen after the churn began after it (the first may have read before). The waits
            # are on the supervisor's own ref (off the audit chain, refs/liza/live/coder-1: the
            # board took only the churn), bounded by the lease it must keep.
            for _ in range(2):
                seen = live_ref()
                deadline = time.monotonic() + 60
                while live_ref() == seen and time.monotonic() < deadline:
                    time.sleep(0.1)
                assert live_ref() != seen, ("the supervisor renewed nothing", sup.output())
            return sample(pid, repo)

        churn(300)
        first = caught_up()
        before = state_commits()
        samples = []
        for _ in range(5):
            churn(300)
            samples.append(caught_up())
        assert sup.proc.poll() is None, sup.output()
        assert state_commits() - before >= 1500
        # Two writers of packs: this process's churn and the supervisor's token renewals.
        assert_flat(first, samples, writers=2)
    finally:
        sup.kill()


BUSY_TASKS = 300  # the bar: a team through claims, merges and reviews, 300 tasks
WARM_UP = 100  # tasks before the first sample: the caches and the pack directory filled
BACKLOG = 6  # tasks kept ready ahead of the team: it never waits for work, nor drowns in it


def settled(pid: int, readings: int = 5) -> Proc | None:
    """A sample whose RSS is the least of `readings` taken a second apart: a merge or a claim in
    progress holds a few MB for a moment (readings 20 s apart moved by up to 4 MB either way on a
    loaded machine), while what the process keeps is there at every reading, so it shows in the
    least as much as in any one."""
    got = []
    for _ in range(readings):
        p = proc(pid)
        if p is None:
            return None
        got.append(p)
        time.sleep(1)
    return dataclasses.replace(got[0], rss_kb=min(p.rss_kb for p in got),
                               anon_kb=min(p.anon_kb for p in got),
                               deleted_maps=min(p.deleted_maps for p in got))


@pytest.mark.timeout(2400)  # 300 tasks of real processes: minutes on a busy 2-core machine
def test_a_busy_team_holds_nothing_more_per_task(tmp_path: Path) -> None:
    """Two coders and a reviewer (instant scripted agents; the reviewer's supervisor merges)
    through 300 tasks: after the warm-up, each supervisor's open files stay within 10 and its
    RSS within 10%, it holds no deleted pack for long (open or mapped), and
    the pack directories stay bounded.
    Sampled at counts of merged tasks, not at times."""
    team = Team(tmp_path, sandbox="off")  # the sandbox has its own tests; this is the loop's
    team.setup()
    team.start()
    samples: list[dict[str, Proc]] = []
    packs: list[int] = []
    due = WARM_UP
    try:
        while due <= BUSY_TASKS:
            merged = team.merged()
            if team.added < merged + BACKLOG:
                team.add(merged + BACKLOG - team.added)
            packs.append(pack_counts(team.repo)[1])
            if merged >= due:
                got = {agent: settled(team.sups[agent].pid) for _r, agent, _b in TEAM}
                assert all(got.values()), [team.log_tail(a) for a in got if got[a] is None]
                samples.append({a: p for a, p in got.items() if p is not None})
                due += 50
            assert not [a for _r, a, _b in TEAM if a not in team.alive()], \
                [team.log_tail(a) for _r, a, _b in TEAM]
            time.sleep(1)
    finally:
        team.stop()
    first, late = samples[0], samples[-2:]
    for agent in first:
        a = first[agent]
        assert all(s[agent].fds <= a.fds + 10 for s in late), (agent, samples)
        # A deleted pack is let go at the handle's next read of the board (odbfresh.py): a few
        # may be held at the moment of a sample, never a pile (before: 90 to 250 per supervisor).
        assert all(s[agent].deleted_own + s[agent].deleted_repo <= 10 for s in samples), \
            (agent, samples)
        # Nor a pile of mapped ones: an index mapped by a database that never looks again shows
        # in no count of open files (the renewals' database mapped every pack the team wrote,
        # ~650 more per 50 tasks). A handle maps the index of every pack it loaded and lets the
        # removed ones go at its next read of the board: between two reads, a few handles hold
        # at most what the directory held, never more.
        assert all(s[agent].deleted_maps <= most_packs(len(TEAM)) for s in samples), \
            (agent, [s[agent].deleted_maps for s in samples])
    # The own store's packs: three long-lived writers (the supervisors) and the short-lived
    # ones (each agent's submit or verdict, this test's adds), whatever the load (packs.py).
    assert max(packs) <= most_packs(len(TEAM)), packs
    log = [(o, a, t) for o, a, t in ops(team.repo) if o in ("claim", "submit", "merge")]
    assert sum(1 for o, _a, _t in log if o == "merge") >= BUSY_TASKS
    assert {a for o, a, _t in log if o == "claim"} == {"coder-1", "coder-2"}
    # What grew per task (docs/performance.md, "A busy team"): the last live record of every task
    # (git/source.py), every reference name and tree path given to pygit2 (git/reflookup.py,
    # git/treepath.py), the TOML writer's renderings and the decoded archive (core/encoding/tomlblob.py),
    # glibc's free arenas (git/allocator.py), a parsed copy of the project's trees per merge
    # (git/remotes/direct.py), and the index of every pack the team wrote, mapped by the
    # renewals' object database (git/liveobjects.py). Issue 39's goal: RSS within 10% from the
    # 100th task to the 300th (before these fixes this range grew +45%).
    grown = {agent: round(max(s[agent].rss_kb for s in late) / first[agent].rss_kb - 1, 3)
             for agent in first}
    assert all(g <= 0.10 for g in grown.values()), (grown, samples)
