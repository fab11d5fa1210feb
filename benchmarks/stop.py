"""A stop that always works: SIGINT/SIGTERM to a real `git liza team` at random moments.

    python benchmarks/stop.py [--runs 100] [--seed N] [--max-delay 12] [--no-sandbox]

Each run (tests/team/stopruns.py) starts a team of a coder and a reviewer on a board with one
task, its agents in the default bubblewrap sandbox (`--no-sandbox`: unsandboxed), signals the
team's process group or the team alone, directly or through git, at a random
moment (launch, agent running, submit, verdict, merge, waiting), and counts what is left. Prints
each run, then the runs with leftovers or problems and the time from the signal to the last
process gone (median, max). The suite runs the same with fewer runs (tests/team/test_stop.py).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import IDENTITY  # noqa: E402
from tests.team import stopruns  # noqa: E402


def isolated(home: Path) -> None:
    """The test suite's git isolation (tests/conftest.py): no machine config, fixed identity."""
    template = home / "template"
    template.mkdir(parents=True)
    os.environ.update({"HOME": str(home), "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
                       "GIT_CONFIG_NOSYSTEM": "1", "GIT_TEMPLATE_DIR": str(template),
                       "NO_COLOR": "1", **IDENTITY})
    (home / ".gitconfig").write_text("[user]\n\tname = Liza Test\n\temail = liza@example.invalid\n"
                                     "[init]\n\tdefaultBranch = main\n")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--max-delay", type=float, default=stopruns.MAX_DELAY)
    ap.add_argument("--no-sandbox", action="store_true",
                    help="run the agents unsandboxed (default: the bubblewrap sandbox)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="gitliza-stop-") as tmp:
        isolated(Path(tmp) / "home")
        done = []
        rng_runs = stopruns.runs(Path(tmp) / "runs", a.runs, a.seed, a.max_delay,
                                 report=lambda r: print(r.describe(), flush=True),
                                 sandbox=not a.no_sandbox)
        done.extend(rng_runs)
    bad = [r for r in done if not r.ok]
    gone = [r.to_gone for r in done if r.to_gone is not None]
    exits = [r.to_exit for r in done if r.to_exit is not None]
    print(f"\n{len(done)} runs ({'sandbox off' if a.no_sandbox else 'sandbox on'}: "
          f"{sum(1 for r in done if r.sandboxed)} with a sandboxed agent seen before the signal), "
          f"{sum(1 for r in done if r.left)} with processes left over, {len(bad)} with a problem")
    for r in bad:
        print("  " + r.describe())
    if gone:
        print(f"signal -> last process gone: median {statistics.median(gone):.2f}s, "
              f"max {max(gone):.2f}s; over 5 s: {sum(1 for g in gone if g > 5)}")
    if exits:
        print(f"signal -> team exited: median {statistics.median(exits):.2f}s, "
              f"max {max(exits):.2f}s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
