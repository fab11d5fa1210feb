"""benchmarks/bench_agents.py, in its smallest form: the simulated agents' ops really land on the
board (one repository) and on the remote (git daemon, three clones), and replay. No timing."""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pygit2
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import bench_agents  # noqa: E402

from gitliza.git.store import Store  # noqa: E402
from gitliza.services.verify.engine import replay  # noqa: E402

# Intervals of seconds instead of minutes: a few dozen ops in a short window (fewer through the
# remote, where every op is a fetch and a push).
FAST = bench_agents.Mix(heartbeat_s=2.0, renew_s=5.0, task_s=4.0, review_s=2.0)
SLOWER = bench_agents.Mix(heartbeat_s=5.0, renew_s=12.0, task_s=10.0, review_s=5.0)


def test_mix_at_the_config_defaults() -> None:
    mix = bench_agents.Mix.defaults()
    assert (mix.heartbeat_s, mix.renew_s) == (60.0, 150.0)
    assert mix.team(3000) == (2000, 1000)
    rates = mix.rates(3000)
    assert rates["heartbeat"] == pytest.approx(50.0)
    assert rates["renew"] == pytest.approx(20.0)
    assert all(rates[k] == pytest.approx(2000 / 600) for k in bench_agents.PIPELINE)
    assert mix.per_agent() == pytest.approx(1 / 60 + 1 / 150 + 5 * 2 / 3 / 600)


@pytest.mark.slow
@pytest.mark.parametrize("shared", [False, True], ids=["one-repo", "git-daemon"])
def test_every_op_lands_on_the_board_and_replays(tmp_path: Path, shared: bool) -> None:
    step = bench_agents.run_step(tmp_path, 15, 3.0 if shared else 2.0, 3 if shared else 2,
                                 shared=shared, mix=SLOWER if shared else FAST)
    assert step.issued >= 8
    # Under load an op may give up (nothing committed) or stay unshared (a sync that lost every
    # round: the next sync shares it); an op refused by the board or dropped would be a flaw.
    assert set(step.failed) <= {"gave_up", "unshared"}, step.errors
    assert step.committed + step.renewed == step.issued - step.failed.get("gave_up", 0)
    # Every committed op is a commit on the board (the remote's, for the shared topology; the
    # benchmark synced every clone once more at the end), and the chain replays op for op.
    assert step.landed == step.committed
    repo = pygit2.Repository(step.board)
    tip = repo.lookup_reference("refs/liza/state").target
    report = replay(Store(repo), tip, step.since)
    assert report.commits == step.landed
    assert report.ops == Counter(step.by_op)
    # Heartbeats and token renewals went off the audit chain: none of them is a board commit.
    assert "claim" in report.ops and "heartbeat" not in report.ops and step.renewed >= 1
    assert "supervise" not in report.ops
