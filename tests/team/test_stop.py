"""A stop that always works: SIGINT or SIGTERM at a random moment (launch, agent running, submit,
verdict, merge, waiting) to a real `git liza team`, its process group, directly or through git,
with agents that sometimes ignore SIGTERM, each in the default bubblewrap sandbox; every run must
leave no process behind, exit 130 or 143, say one stop line per supervisor and leave a valid
board (tests/team/stopruns.py).

GITLIZA_STOP_RUNS sets the number of runs (20 here; `python benchmarks/stop.py --runs 100` is the
long version, with the times)."""
from __future__ import annotations

import os
import signal
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.team import stopruns
from tests.team.procs import WAIT, Sup, add_task, make_board, script


def _no_sandbox() -> str | None:
    """Why the agents cannot run sandboxed here (the stop test is about the default launch)."""
    if not sys.platform.startswith("linux"):
        return "what is left is found in /proc (Linux)"
    from gitliza.errors import MissingDependency
    from gitliza.sandbox import bwrap
    try:
        bwrap.require()
    except MissingDependency as e:
        return f"the stop test runs its agents in the sandbox: {e.message}"
    return None


WHY = _no_sandbox()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(WHY is not None, reason=WHY or "")]


def test_a_team_stopped_at_random_moments_leaves_nothing(tmp_path: Path) -> None:
    count = int(os.environ.get("GITLIZA_STOP_RUNS", "20"))
    done = stopruns.runs(tmp_path, count)
    left = [r.describe() for r in done if r.left]
    bad = [r.describe() for r in done if r.problems]
    assert len(done) == count
    assert left == [], "\n".join(left)
    assert bad == [], "\n".join(bad)
    # The agents ran in the sandbox (a run signalled before any agent started saw none).
    assert any(r.sandboxed for r in done), [r.describe() for r in done]


def _gone(mark: str, bound: float = stopruns.BOUND) -> dict[int, str]:
    """What of a run is still there once `bound` seconds passed (or nothing is left)."""
    end = time.monotonic() + bound
    while time.monotonic() < end and stopruns.marked(mark):
        time.sleep(0.05)
    return stopruns.marked(mark)


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_a_brokered_wait_ends_with_its_supervisor(repo: Path, tmp_path: Path, how: signal.Signals,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A sandboxed agent's `git liza wait` runs outside the sandbox, started by its supervisor's
    broker: stopping the supervisor alone (SIGINT, not its group) or killing it (SIGKILL) must
    end that wait too, not leave it running, orphaned, until its timeout."""
    make_board(repo, lease_duration="600")
    add_task(repo, "t1")
    mark = uuid.uuid4().hex
    monkeypatch.setenv(stopruns.STOP_MARK, mark)
    agent = script(tmp_path, "waits.sh", "git liza wait status --task t1 --status MERGED "
                                         "--timeout 300\n")
    sup = Sup(repo, "coder", "coder-1", "--sandbox", "on", "--", str(agent))
    try:
        sup.expect("started agent")
        end = time.monotonic() + WAIT
        while time.monotonic() < end and not any(
                "-m gitliza wait" in c for c in stopruns.marked(mark).values()):
            time.sleep(0.05)
        brokered = [c for c in stopruns.marked(mark).values() if "-m gitliza wait" in c]
        assert brokered, stopruns.marked(mark)  # the broker's own process, outside the sandbox
        sup.signal(how)
        code = sup.wait()
        assert code == (0 if how == signal.SIGINT else -signal.SIGKILL), sup.output()
        assert _gone(mark) == {}
    finally:
        sup.kill()
        for pid in stopruns.marked(mark):
            os.kill(pid, signal.SIGKILL)
