"""Round 3 (issue 46), a coder's worktree past the checkout bounds ends its run
(gitliza/sandbox/diskwatch.py): a scripted rogue coder under a real supervisor grows its
worktree (a sparse 1 GiB file of zeros, a pile of empty files) and waits; its supervisor stops
it, says it "reached its limit", and goes on to its next run."""
from __future__ import annotations

from pathlib import Path

import pytest

from gitliza.sandbox import diskwatch
from tests.cli.test_board import liza, ok
from tests.sandbox.test_rogue import PRELUDE, _agent_log, needs_bwrap
from tests.team.procs import WAIT, Sup, add_task, make_board, script


def _next(sup: Sup) -> None:
    """One more line of the supervisor's output (fails on its end or after WAIT)."""
    line = sup._q.get(timeout=WAIT)
    assert line is not None, sup.output()
    sup.lines.append(line)


def test_measure_counts_sparse_files_whole_and_stops_past_a_bound(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with open(tmp_path / "d" / "zeros", "wb") as f:
        f.truncate(1 << 30)
    for i in range(30):
        (tmp_path / f"f{i}").touch()
    (tmp_path / "link").symlink_to("/etc")  # not followed
    size = diskwatch.measure([tmp_path], 1 << 40, 10**6)
    assert size == diskwatch.Size(1 << 30, 32)
    assert diskwatch.over(size, 2048, 200_000) is None
    assert "1000 MB" in (diskwatch.over(size, 1000, 200_000) or "")
    assert "10 files" in (diskwatch.over(diskwatch.measure([tmp_path], 1 << 40, 10), 2048, 10)
                          or "")


@needs_bwrap
@pytest.mark.slow
@pytest.mark.parametrize("key,value,grow", [
    ("sandbox_checkout_max_mb", "64", "truncate -s 1G zeros.bin"),
    ("sandbox_checkout_max_files", "500", "mkdir many && cd many && seq 2000 | xargs touch"),
])
def test_a_coder_growing_its_worktree_past_the_bound_is_stopped(
        repo: Path, tmp_path: Path, key: str, value: str, grow: str) -> None:
    make_board(repo)
    ok(liza(repo, "config", key, value, agent=None))
    add_task(repo, "t1")
    agent = script(tmp_path, "grow.sh", PRELUDE.format() + f"""
{grow}
echo GREW
n=0; while [ $n -lt 1200 ]; do sleep 0.1; n=$((n+1)); done
echo NOT-STOPPED
""")
    sup = Sup(repo, "coder", "coder-1", "--sandbox", "on", "--", str(agent))
    sup.expect("reached its limit: its worktree holds over")
    while sum("started agent" in line for line in sup.lines) < 2:  # the next run: it went on
        _next(sup)
    ok(liza(repo, "abort", agent=None))
    sup.wait(120)
    log = _agent_log(repo, "coder-1")
    assert "GREW" in log and "NOT-STOPPED" not in log, log
    assert f"({key})" in sup.output()
