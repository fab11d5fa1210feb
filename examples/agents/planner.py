#!/usr/bin/env python3
"""The scripted planner: reads specs/vision.md and adds the tasks that build it, with
dependencies (INITIAL_PLANNING); on later wake-ups it answers what it can (a blocked task is
unblocked once, a failed integration goes back to the coders)."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import liza, liza_json, prompt, say, stop_if_paused  # noqa: E402

SPEC = "specs/vision.md"


def plan(root: Path) -> None:
    vision = (root / SPEC).read_text()
    reqs = re.findall(r"^\d+\. (.*)$", vision, re.M)
    say(f"read {SPEC}: {len(reqs)} requirements")
    default = re.search(r'Default output: `([^`]*)`', vision)
    greeting = default.group(1) if default else "Hello, World!"
    tasks = [
        ("greeting", "The greeting: hello/__init__.py and hello/greeting.py with "
         "greet(name='World') returning the greeting; unit tests in tests/",
         f"greet() returns '{greeting}' and greet('Alice') returns 'Hello, Alice!', "
         "both covered by unit tests", "the hello package and its greeting function; not the CLI",
         1, []),
        ("readme", "README.md documents how to run the CLI",
         "README.md shows `python -m hello` and `python -m hello --name NAME`",
         "documentation only", 3, []),
        ("cli", "The command line: hello/__main__.py parses --name and prints greet(name); "
         "exit code 0", "`python -m hello` prints 'Hello, World!' and `python -m hello --name Bob` "
         "prints 'Hello, Bob!', exit 0, covered by tests that run the module",
         "argument parsing and the __main__ entry point; reuses greet()", 2, ["greeting"]),
    ]
    for tid, desc, done_when, scope, prio, deps in tasks:
        args = ["add", tid, "--desc", desc, "--spec-ref", SPEC, "--done-when", done_when,
                "--scope", scope, "--priority", str(prio), "--ready"]
        for d in deps:
            args += ["--depends-on", d]
        liza(*args, cwd=root)
        say(f"added {tid}" + (f" (after {', '.join(deps)})" if deps else ""))


def replan(root: Path, trigger: str) -> None:
    status = liza_json("status", cwd=root)
    for t in status["tasks"]:
        if t["status"] == "BLOCKED":
            liza("unblock", t["id"], cwd=root)
            say(f"unblocked {t['id']}")
    say(f"{trigger}: nothing else to do")


def main() -> int:
    root = Path.cwd()
    stop_if_paused(root)
    trigger = os.environ.get("LIZA_WAKE_TRIGGER", "")
    assert "=== PLANNING CONTEXT ===" in prompt()
    if trigger == "INITIAL_PLANNING":
        plan(root)
    else:
        replan(root, trigger)
    return 0


if __name__ == "__main__":
    sys.exit(main())
