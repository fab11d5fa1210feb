#!/usr/bin/env python3
"""The scripted code reviewer: checks that the worktree is at the review commit, runs the tests,
and checks done_when against them (every quoted expected output must be exercised by a test; a
documentation task must show the commands it names). Rejects with the reference's format."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import liza_json, main_root, run, say, stop_if_paused, tests_pass  # noqa: E402


def review(task: dict[str, object], wt: Path, base: str, commit: str) -> list[str]:
    blockers: list[str] = []
    head = run("git", "rev-parse", "HEAD", cwd=wt).stdout.strip()
    if head != commit:
        return [f"[blocker] worktree HEAD {head[:12]} is not the review commit {commit[:12]}"]
    changed = run("git", "diff", "--name-only", f"{base}..{commit}", cwd=wt).stdout.split()
    say(f"reviewing {task['id']}: {', '.join(changed)}")
    done_when = str(task.get("done_when", ""))
    if "documentation" in str(task.get("scope", "")):
        readme = (wt / "README.md").read_text()
        for cmd in re.findall(r"`([^`]+)`", done_when):
            if cmd.replace("NAME", "").strip() not in readme:
                blockers.append(f"[blocker] README.md - does not show `{cmd}`")
        return blockers
    ok, count, out = tests_pass(wt)
    if count == 0:
        return ["[blocker] tests/ - test discovery finds 0 tests"]
    if not ok:
        return [f"[blocker] tests fail:\n{out[-800:]}"]
    tests = "".join(p.read_text() for p in (wt / "tests").glob("test_*.py"))
    for expected in re.findall(r"'([^']+)'", done_when):
        if expected not in tests:
            blockers.append(f"[blocker] tests/ - no test covers {expected!r} (done_when)\n"
                            "  Why it matters: done_when must be verified by tests\n"
                            f"  Suggestion: add a test asserting {expected!r}")
    return blockers


def main() -> int:
    task_id, wt = os.environ["LIZA_TASK_ID"], Path(os.environ["LIZA_WORKTREE"])
    commit = os.environ["LIZA_REVIEW_COMMIT"]
    stop_if_paused(main_root())
    task = liza_json("show", task_id)
    blockers = review(task, wt, str(task["base_commit"]), commit)
    if blockers:
        reason = (f"Blockers: {len(blockers)}\n" + "\n".join(f"- {b}" for b in blockers)
                  + "\n\nConcerns: 0\n\nOverall: done_when is not fully covered yet.")
        run("git", "liza", "verdict", task_id, "reject", "--commit", commit, "--reason", reason)
        say(f"rejected {task_id}: {blockers[0].splitlines()[0]}")
    else:
        run("git", "liza", "verdict", task_id, "approve", "--commit", commit)
        say(f"approved {task_id}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
