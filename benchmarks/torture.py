"""Torture: the property test of tests/test_ops_property.py, run long. A script, not a test:

    .venv/bin/python benchmarks/torture.py [--examples 200] [--steps 80] [--seed N]

Every registered op is drawn with generated arguments (mapping orders, unicode, optional fields
present and absent, lists) and applied through the library API on a real repository; each accepted
op must replay (verify) and leave a valid board. Prints how many ops of each kind were accepted and
refused, and exits 1 with hypothesis' minimal failing sequence when a property breaks.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis.stateful import run_state_machine_as_test  # noqa: E402

from tests.opsmachine import OpsMachine  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=200)
    ap.add_argument("--steps", type=int, default=80)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    accepted: Counter[str] = Counter()
    refused: Counter[str] = Counter()

    class Counted(OpsMachine):
        def teardown(self) -> None:
            accepted.update(self.accepted)
            refused.update(self.refused)
            super().teardown()

    started = time.perf_counter()
    cfg = settings(max_examples=args.examples, stateful_step_count=args.steps, deadline=None,
                   database=None, suppress_health_check=list(HealthCheck))
    if args.seed is not None:
        import random
        random.seed(args.seed)
    try:
        run_state_machine_as_test(Counted, settings=cfg)
    finally:
        took = time.perf_counter() - started
        total = sum(accepted.values())
        print(f"{args.examples} runs of up to {args.steps} steps in {took:.1f}s: {total} ops "
              f"accepted ({total / took if took else 0:.0f}/s), {sum(refused.values())} refused")
        for name in sorted(set(accepted) | set(refused)):
            print(f"  {name:<14} accepted {accepted[name]:>6}  refused {refused[name]:>6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
