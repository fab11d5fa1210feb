"""What the scripted reference agents share. They act as an LLM agent would: they read their
prompt (LIZA_PROMPT_FILE) and the board through `git liza`, change files and commit with git, and
report through `git liza`; they never touch refs/liza/state or the supervisor's work (claims,
review leases, merges, heartbeats).

When a scripted agent exits it reports its usage as any `-- COMMAND` agent does (`git liza usage
report`, docs/usage.md): it calls no model, so it counts what a model would have read and
written, a token per four characters of its prompt (input) and of what it said (output), as
model `scripted`, which the example's price table prices."""
from __future__ import annotations

import atexit
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

EXIT_RESTART = 42  # paused, or told to stand down: the supervisor restarts us later


_SAID = [0]  # characters the agent said


def say(text: str) -> None:
    _SAID[0] += len(text)
    print(f"  [{os.environ.get('LIZA_AGENT_ID', '?')}] {text}", flush=True)


@atexit.register
def _report_usage() -> None:
    if not os.environ.get("LIZA_RUN_ID") or not os.environ.get("LIZA_PROMPT_FILE"):
        return  # not run by a supervisor
    read = len(Path(os.environ["LIZA_PROMPT_FILE"]).read_text())
    subprocess.run(["git", "liza", "usage", "report", "--input", str(read // 4 + 1),
                    "--output", str(_SAID[0] // 4 + 1), "--model", "scripted"],
                   capture_output=True, check=False)


def run(*args: str, cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True)
    if check and r.returncode != 0:
        out = (r.stdout + r.stderr).strip()
        if "stand down" in out:
            say(f"told to stand down: {out}")
            sys.exit(EXIT_RESTART)
        sys.exit(f"{' '.join(args)} failed ({r.returncode}): {out}")
    return r


def liza(*args: str, cwd: Path | None = None) -> str:
    return run("git", "liza", *args, cwd=cwd).stdout


def liza_json(*args: str, cwd: Path | None = None) -> Any:
    return json.loads(liza(*args, "--json", cwd=cwd))


def prompt() -> str:
    return Path(os.environ["LIZA_PROMPT_FILE"]).read_text()


def field(text: str, name: str) -> str | None:
    """One `NAME: value` line of the prompt."""
    m = re.search(rf"^{re.escape(name)}: (.*)$", text, re.M)
    return m.group(1).strip() if m else None


def section(text: str, title: str) -> str | None:
    """The body of `=== TITLE ... ===` up to the next blank-line-separated heading."""
    m = re.search(rf"^=== {re.escape(title)}[^\n]*===\n(.*?)(?:\n\n[A-Z=]|\Z)", text, re.M | re.S)
    return m.group(1).strip() if m else None


def stop_if_paused(root: Path) -> None:
    """The protocol: an agent that sees PAUSE (the file or the board) exits 42."""
    if (root / ".liza" / "PAUSE").exists() or liza_json("status", cwd=root)["control"].get("paused"):
        say("team is paused: exiting 42")
        sys.exit(EXIT_RESTART)


def main_root() -> Path:
    common = run("git", "rev-parse", "--path-format=absolute", "--git-common-dir").stdout.strip()
    return Path(common).parent


def tests_pass(cwd: Path) -> tuple[bool, int, str]:
    """Run the project's tests (stdlib unittest): (passed, number of tests, output)."""
    r = subprocess.run([sys.executable, "-m", "unittest", "discover", "-s", "tests", "-t", "."],
                       cwd=cwd, capture_output=True, text=True)
    m = re.search(r"Ran (\d+) tests?", r.stderr)
    return r.returncode == 0, int(m.group(1)) if m else 0, r.stderr
