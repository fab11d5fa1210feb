"""SIGKILL at each write window of each transition, then verify, doctor --fix and the next op.

Per transition: the op is calibrated once (its writes into the repository, under strace), then
re-run from the same starting state once per window with SIGKILL injected on entry to that write.
After each kill: the history verifies, the board is either exactly before or exactly after the op,
`doctor --fix` leaves nothing behind (nothing `git count-objects -v` calls garbage either), and the
lifecycle goes on (the op again if it was not recorded, then the next op)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import git
from tests.faults import harness as h

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", list(h.TRANSITIONS))
def test_a_kill_in_any_write_window_loses_nothing(tmp_path: Path, repo: Path, name: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    strace = h.need_strace()
    monkeypatch.setenv("LIZA_NOW", h.NOW)  # the in-process ops at the CLI's fixed time
    t = h.TRANSITIONS[name]
    h.board_with(repo, ("t1", "t2"))
    t.prepare(repo, "t1")
    base = tmp_path / "base"
    h.restore(repo, base)
    before = git(repo, "rev-parse", "refs/liza/state")
    # Warm-up (the CLI's first run in a fresh checkout writes its caches), then calibration.
    h.liza(repo, *t.args, agent=t.agent, check=True)
    h.restore(base, repo)
    windows, rc = h.calibrate(strace, repo, t.args, t.agent, tmp_path / "calibration.log")
    assert rc == 0 and windows, f"calibration of {name}: exit {rc}, {len(windows)} windows"
    tally = h.Tally()
    for w in windows:
        h.restore(base, repo)
        status = h.kill_at(strace, repo, t.args, t.agent, w)
        if status != 128 + 9 and status != -9:
            tally.missed += 1
            continue
        tally.kills += 1
        h.recover_and_go_on(repo, t, before, tally)
        assert h.garbage(repo) == 0, f"garbage after doctor --fix, kill before {w.line}"
    h.report(tally.line(name) + f", windows {len(windows)}")
    for problem in tally.verify_failures + tally.after_fix + tally.next_op_failures:
        h.report(f"{name}: {problem}")
    assert tally.kills >= len(windows) // 2, tally.line(name)
    assert not tally.verify_failures, tally.verify_failures[:3]
    assert not tally.after_fix, tally.after_fix[:3]
    assert not tally.next_op_failures, tally.next_op_failures[:3]
