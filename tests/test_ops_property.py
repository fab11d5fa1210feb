"""The class of bug behind issue 12's bricked boards: every op, with generated arguments, driven
through the library API the CLI uses; after each accepted op the chain replays and the board is
valid (tests/opsmachine.py). Bounded here; benchmarks/torture.py runs it much longer."""
from __future__ import annotations

from hypothesis import HealthCheck, settings

from tests.opsmachine import OpsMachine

OpsMachine.TestCase.settings = settings(
    max_examples=8, stateful_step_count=25, deadline=None, derandomize=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much])
TestOps = OpsMachine.TestCase
