"""Soak of the readers that live beside a busy team (issue 39): `git liza mcp` held by an agent's
session (the SDK's own stdio client calling `status` and `log` the whole time), `git liza events
--follow` (every event printed, read and counted) and `git liza web` (its board page and JSON
fetched over HTTP the whole time, its event stream kept connected), while two coders and a
reviewer (benchmarks/busyteam.py: instant scripted agents, real supervisors) claim, submit,
review and merge. After a warm-up, sampled at counts of merged tasks, not at times: each reader's
open files within 10, at most a few deleted packs held, RSS within 10%; and each kept working
(more calls, pages and events at every sample; every merge seen by `events --follow`).
tests/team/test_soak.py holds the supervisors' version, benchmarks/bench_busy.py the long run."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from gitliza.git.objects.packs import most_packs
from tests.gitdaemon import _free_port

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from busyteam import TEAM, Proc, Team, proc  # noqa: E402

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc (Linux)")]

READERS = ("events", "web", "mcp")
WARM_UP = 40  # merged tasks before the first sample: the readers' caches filled
SAMPLES = 4  # then one sample every EVERY merged tasks
EVERY = 30
BACKLOG = 6


@pytest.mark.timeout(1800)  # ~160 tasks of real processes: minutes on a busy 2-core machine
def test_readers_beside_a_busy_team_hold_nothing_more_per_task(tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="the MCP SDK (gitliza[mcp]) is not installed")
    team = Team(tmp_path, sandbox="off")  # the sandbox has its own tests; these are the readers'
    team.setup()
    team.start()
    samples: list[dict[str, Proc]] = []
    counts: list[tuple[int, int, int]] = []  # (MCP calls, web pages, events) at each sample
    due = WARM_UP
    try:
        team.watch(_free_port(), steady=True)
        team.mcp(steady=True)
        assert "mcp" in team.sups, "the MCP session did not start"
        while len(samples) <= SAMPLES:
            merged = team.merged()
            if team.added < merged + BACKLOG:
                team.add(merged + BACKLOG - team.added)
            if merged >= due:
                got = {name: proc(team.sups[name].pid) for name in READERS}
                assert all(got.values()), ([n for n in got if got[n] is None],
                                           [team.log_tail(n) for n in ("events", "web")])
                samples.append({n: p for n, p in got.items() if p is not None})
                counts.append((team.mcp_calls, team.web_reads, team.event_lines))
                due += EVERY
            assert not [a for a in (*READERS, *(a for _r, a, _b in TEAM)) if a not in
                        team.alive()], [team.log_tail(a) for _r, a, _b in TEAM]
            time.sleep(1)
        # Every merge the team made is printed by `events --follow` (it may trail a little).
        merged = team.merged()
        deadline = time.monotonic() + 120
        while team.event_merges < merged and time.monotonic() < deadline:
            time.sleep(0.5)
        assert team.event_merges >= merged, (team.event_merges, merged)
    finally:
        team.stop()
    assert not team.mcp_errors, team.mcp_errors[:3]
    # Each reader worked between every two samples: a stuck reader holds nothing more either.
    for a, b in zip(counts, counts[1:]):
        assert all(y > x for x, y in zip(a, b)), counts
    first, late = samples[0], samples[-2:]
    grown = {}
    for name in READERS:
        assert all(s[name].fds <= first[name].fds + 10 for s in late), (name, samples)
        # A deleted pack is let go at the reader's next read of the board (odbfresh.py): a few
        # may be held at the moment of a sample, never a pile.
        assert all(s[name].deleted_own + s[name].deleted_repo <= 10 for s in samples), \
            (name, samples)
        # Nor a pile of mapped indexes (a database that never looks again: no open file shows it).
        assert all(s[name].deleted_maps <= most_packs(len(TEAM)) for s in samples), \
            (name, [s[name].deleted_maps for s in samples])
        grown[name] = round(max(s[name].rss_kb for s in late) / first[name].rss_kb - 1, 3)
    assert all(g <= 0.10 for g in grown.values()), (grown, samples)
