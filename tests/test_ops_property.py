"""The class of bug behind issue 12's bricked boards: every op, with generated arguments, driven
through the library API the CLI uses; after each accepted op the chain replays and the board is
valid (tests/opsmachine.py). Bounded here; benchmarks/torture.py runs it much longer."""
from __future__ import annotations

from pathlib import Path

import pygit2
import pytest
from hypothesis import HealthCheck, settings

from gitliza.services.api import Liza
from gitliza.core.ops.journal import SpecChangeOp
from gitliza.core.ops.goal import Init
from gitliza.errors import ValidationError
from tests.opsmachine import OpsMachine

OpsMachine.TestCase.settings = settings(
    max_examples=8, stateful_step_count=25, deadline=None, derandomize=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much])
TestOps = OpsMachine.TestCase


def test_a_nul_in_any_op_text_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    """Found by the machine: git cuts a commit message at NUL, so such an op never replayed (and
    the reflog write raised a bare ValueError). Refused up front now, as invalid text."""
    pygit2.init_repository(str(tmp_path))
    liza = Liza.open(tmp_path, "human", sync=False)
    liza.do(Init, goal="g")
    tip = liza.store.tip()
    with pytest.raises(ValidationError, match="NUL"):
        liza.do(SpecChangeOp, spec="a\x00b", change="c")
    assert liza.store.tip() == tip
