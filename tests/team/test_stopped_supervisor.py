"""Issue 36: a stopped team does not look busy. After Ctrl-C a supervisor records `supervise end`
and its agent's claim stays (a restart resumes it); `status`, `status --json`, `top`'s frame and
`doctor` say the supervisor stopped, when the lease ends, and what resumes it, from the board's
token and the live ref, not from the lease's time (which still runs)."""
from __future__ import annotations

import json
import re
import signal
from pathlib import Path

import pytest

from tests.cli.test_board import liza, ok
from tests.team.procs import Sup, add_task, make_board, script, wait_status

pytestmark = pytest.mark.slow


def test_status_top_and_doctor_tell_a_stopped_supervisor_from_a_live_one(
        repo: Path, tmp_path: Path) -> None:
    make_board(repo, lease_duration="600")
    add_task(repo, "mul")
    started = tmp_path / "started"
    hang = script(tmp_path, "hang.sh", f"cat > /dev/null\ntouch {started}\nsleep 120\n")
    sup = Sup(repo, "coder", "coder-1", "--", str(hang))
    try:
        wait_status(repo, "mul", "CLAIMED")
        sup.expect("mul")
        st = json.loads(ok(liza(repo, "status", "--json", agent=None)))
        [coder] = [a for a in st["agents"] if a["id"] == "coder-1"]
        assert coder["supervisor"] == "live" and "supervisor_note" not in coder
        assert "held by" not in ok(liza(repo, "status", agent=None))
        sup.signal(signal.SIGINT)
        assert sup.wait() == 0, sup.output()  # docs/agents.md: a supervisor exits 0
    finally:
        sup.kill()
    out = ok(liza(repo, "status", agent=None))
    [line] = [x for x in out.splitlines() if "held by coder-1" in x]
    assert line.startswith("mul: held by coder-1, supervisor stopped, lease ends in ")
    assert "`git liza team`" in line and "`git liza release mul`" in line
    st = json.loads(ok(liza(repo, "status", "--json", agent=None)))
    [coder] = [a for a in st["agents"] if a["id"] == "coder-1"]
    assert coder["supervisor"] == "stopped" and coder["current_task"] == "mul"
    # The minutes left may tick between two commands on a slow machine: compared without them.
    def same(a: str) -> str:
        return re.sub(r"lease ends in \d+m", "lease ends in Nm", a)
    assert same(coder["supervisor_note"]) == same(line)
    doc = liza(repo, "doctor", agent=None)
    assert doc.returncode == 0 and same(line) in same(doc.stdout), doc.stdout + doc.stderr
    # top's frame (rendered as text, as `top --once` prints it)
    top = liza(repo, "top", "--once", "--width", "200", agent=None)
    assert top.returncode == 0 and "stopped" in top.stdout and "held by coder-1" in top.stdout, \
        top.stdout
    # A restart resumes the claim: the supervisor is live again, the note is gone.
    sup = Sup(repo, "coder", "coder-1", "--", str(hang))
    try:
        sup.expect("mul")
        st = json.loads(ok(liza(repo, "status", "--json", agent=None)))
        [coder] = [a for a in st["agents"] if a["id"] == "coder-1"]
        assert coder["supervisor"] == "live" and coder["current_task"] == "mul"
        assert "held by" not in ok(liza(repo, "status", agent=None))
    finally:
        sup.signal(signal.SIGINT)
        sup.wait()
        sup.kill()
