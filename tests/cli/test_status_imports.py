"""`git liza status` on a 1,000-task board imports what it shows, not what it seldom shows
(issue 51). A guard on the modules of the process, not on its time: benchmarks/ measure the time
(`python3 dev.py bench --only cli`); this keeps a heavy import from coming back unnoticed."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.cli.test_board import board, liza, ok  # noqa: F401 - the fixture

# What status must not load on a board with nothing of it to show, and why it would.
HEAVY = {
    "gitliza.core.agents.faults": "only an agent waiting for its provider is shown from it",
    "gitliza.core.invariants": "only lock-scope waits and label waits need it",
    "gitliza.core.lockscope": "only a live task with a lock scope needs it",
    "gitliza.core.ops": "the op records: writes and parsed records, not a read",
    "gitliza.core.ops.base": "the op records",
    "gitliza.core.ops.engine": "the op engine",
    "gitliza.git.objects.trees": "the tree writer (a write)",
    "gitliza.services.views.viewstamp": "only a clone with a materialized view",
    "typer": "the fast path runs without it", "click": "the fast path runs without it",
    "rich": "only a terminal gets tables drawn", "json": "only --json", "tomllib": "tomlfast",
    "yaml": "only import/export", "hashlib": "the builtin _sha1 hashes",
    "datetime": "clock.py counts epoch seconds", "random": "nothing random in a read",
}
TASKS = 1_000


# `python -m gitliza ARGS`, and at its exit (the CLI runs the atexit handlers before it ends the
# process) every module it imported, one a line. (`-X importtime` misses what importlib.import_module
# loads: the fast path imports a command's module that way.)
RUN = """
import atexit, runpy, sys
out = sys.argv.pop(1)
atexit.register(lambda: open(out, "w").write("\\n".join(sorted(sys.modules))))
runpy.run_module("gitliza", run_name="__main__", alter_sys=True)
"""


def imported(repo: Path, *args: str) -> tuple[str, set[str]]:
    """Run `git liza ARGS` in a process of its own, as a user does: its output, and every module
    the process imported."""
    listing = repo.parent / "modules.txt"
    env = dict(os.environ, LIZA_AGENT_ID="planner-1")
    r = subprocess.run([sys.executable, "-c", RUN, str(listing), *args], cwd=repo,
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout, set(listing.read_text().split("\n"))


def test_status_at_1000_tasks_loads_none_of_what_it_seldom_shows(board: Path) -> None:  # noqa: F811
    for part in range(0, TASKS, 500):  # `add --from` takes 500 tasks a file
        (board / "tasks.yaml").write_text("tasks:\n" + "".join(
            f"  - id: t{i}\n    desc: task {i}\n" for i in range(part, part + 500)))
        ok(liza(board, "add", "--from", "tasks.yaml"))
    out, mods = imported(board, "status")
    assert out.count("\nt") >= TASKS  # the table has every task (the board is really read)
    assert "gitliza.cli.commands.view" in mods and "pygit2" in mods  # the listing works
    loaded = {m: why for m, why in HEAVY.items() if m in mods}
    assert not loaded, f"status imported what it seldom shows: {loaded}"
