"""Leases that survive clock skew (issue 29 item 3), with real clocks: libfaketime moves the clock
of every process of one clone by +-10 minutes (python, git, the CLI's subprocesses), against a real
bare remote whose server hook runs on the true clock (its receive-pack is started without the
fake clock, as on another machine). The lease is scaled down to 20 s.

The four rules: a live lease is never taken (by a fast observer, nor from a slow holder); a dead
one is taken once its observer saw it unchanged for the lease and its grace (not 10 minutes later
because its holder's clock ran fast); a fast clone's ops never make the correct clocks' ops queue
or fail; a claim replayed by sync never becomes a takeover. The skew is named at sync in one line,
a clock beyond the bound is refused with that line, and verify passes on every clone and on the
remote's board, reclaim evidence included.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import git
from tests.services.test_multi_machine import BIN, Team, make_team, remote_ref

pytestmark = pytest.mark.slow

LIB = next((p for p in ("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
                        "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
                        "/usr/local/lib/faketime/libfaketime.so.1") if os.path.exists(p)), None)
if LIB is None:
    pytest.skip("libfaketime is not installed (Debian: apt-get install faketime)",
                allow_module_level=True)

LEASE = 20  # seconds; the grace is LEASE // 5 = 4 s (core/presence/leasemarks.grace)
WAIT = LEASE + 4


def _state(bare: Path, task: str) -> dict[str, object]:
    """The remote's record of `task` (`git liza show` on the bare repository reads its board)."""
    out = subprocess.run(["git", "liza", "show", task, "--json"], cwd=bare, capture_output=True,
                         text=True, check=True,
                         env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"})
    data: dict[str, object] = json.loads(out.stdout)
    return data


class Skewed:
    """Commands in one clone with its clock moved by `offset` seconds (libfaketime)."""

    def __init__(self, team: Team, clone: Path, offset: int) -> None:
        self.team, self.clone, self.offset = team, clone, offset
        if offset:
            # The remote is another machine: its receive-pack (and so the server hook) must run
            # on the true clock, not inherit this clone's.
            git(clone, "config", "remote.origin.receivepack",
                "env -u LD_PRELOAD -u FAKETIME git-receive-pack")

    def run(self, *args: str, agent: str | None = None) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
               "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
        env.pop("LIZA_NOW", None)
        env.pop("LIZA_AGENT_ID", None)
        if self.offset:
            env["LD_PRELOAD"] = LIB or ""
            env["FAKETIME"] = f"{self.offset:+d}s"
        if agent:
            env["LIZA_AGENT_ID"] = agent
        return subprocess.run(["git", "liza", *args], cwd=self.clone, capture_output=True,
                              text=True, env=env, check=False, timeout=300)

    def ok(self, *args: str, agent: str | None = None) -> str:
        r = self.run(*args, agent=agent)
        assert r.returncode == 0, f"{args} ({agent}): {r.stdout}{r.stderr}"
        return r.stdout + r.stderr


def _team(tmp_path: Path) -> tuple[Team, Path, Path, Path]:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    tm, a, b, c = make_team(tmp_path, bare, str(bare))
    tm.liza(a, "register", "coder-2", "--role", "coder")
    tm.liza(a, "config", "heartbeat_interval", "2")
    tm.liza(a, "config", "lease_duration", str(LEASE))
    for tid in ("t3", "t4"):
        tm.liza(a, "add", tid, "--desc", f"build {tid}", "--spec-ref", "spec.md",
                "--done-when", "tests pass", "--scope", "src", "--ready", agent="planner-1")
    for clone in (b, c):
        tm.liza(clone, "sync")
    return tm, a, b, c


def _holder(bare: Path, task: str) -> object:
    return _state(bare, task).get("assigned_to")


def _verify_everywhere(a: Skewed, *others: Skewed) -> None:
    for s in (a, *others):
        s.ok("sync")
        s.ok("verify")  # exit 0: every commit replays, reclaim evidence included
        s.ok("verify", "--remote", "origin")


@pytest.mark.parametrize("offset", [600, -600])
def test_a_live_lease_is_never_taken_and_a_dead_one_is_taken_after_the_lease(
        tmp_path: Path, offset: int) -> None:
    tm, a_path, b_path, _c = _team(tmp_path)
    a, b = Skewed(tm, a_path, 0), Skewed(tm, b_path, offset)

    # A live holder on the correct clock; the skewed observer may not take its task, however
    # long it watches, as long as the holder renews.
    a.ok("claim", "t1", agent="coder-1")
    b.ok("sync")
    refused = 0
    for _ in range(4):
        r = b.run("claim", "t1", agent="coder-2")
        assert r.returncode == 1, r.stdout + r.stderr
        assert "live for this clone" in r.stderr or "already claimed" in r.stderr, r.stderr
        refused += 1
        time.sleep(LEASE / 3)
        a.ok("heartbeat", "--task", "t1", agent="coder-1")
        b.ok("sync")
    assert refused == 4 and _holder(tm.bare, "t1") == "coder-1"
    a.ok("release", "t1", agent="coder-1")

    # A live holder on the skewed clock: the correct clock may not take it either.
    b.ok("claim", "t2", agent="coder-2")
    a.ok("sync")
    r = a.run("claim", "t2", agent="coder-1")
    assert r.returncode == 1 and "live for this clone" in r.stderr, r.stdout + r.stderr
    assert _holder(tm.bare, "t2") == "coder-2"

    # coder-2 dies now (no more heartbeats). A watches its mark; the lease and the grace later,
    # on A's own clock (not 10 minutes later because coder-2's clock ran fast), A takes t2 over.
    time.sleep(WAIT + 1)
    a.ok("sync")
    got = a.ok("claim", "t2", agent="coder-1")
    assert _holder(tm.bare, "t2") == "coder-1", got
    # The reclaim recorded its evidence: the holder, the mark and A's own sightings.
    msg = git(a_path, "log", "-1", "--format=%B", "refs/liza/state")
    assert re.search(r'"takeover": ?"coder-2 \S+Z \S+Z \S+Z"', msg), msg
    # And B, whose coder lost the task, learns it at its next sync (its heartbeat stands down).
    b.ok("sync")
    r = b.run("heartbeat", "--task", "t2", agent="coder-2")
    assert r.returncode != 0 and "stand down" in r.stderr, r.stderr
    _verify_everywhere(a, b)


def test_a_fast_clone_blocks_nobody_and_its_skew_is_named_at_sync(tmp_path: Path) -> None:
    tm, a_path, b_path, c_path = _team(tmp_path)
    a, fast, slow = Skewed(tm, a_path, 0), Skewed(tm, b_path, 600), Skewed(tm, c_path, -600)

    # The fast clone's op is accepted (within liza.maxClockSkew), and the server names the skew;
    # sync repeats it in one line.
    out = fast.ok("claim", "t1", agent="coder-2")
    ahead = [ln for ln in out.splitlines() if "clock is" in ln and "ahead of origin's" in ln]
    assert len(ahead) == 1 and re.search(r"clock is (59\d|60\d) s ahead", ahead[0]), out
    # The correct clock's ops go through at once, on top of it: nothing queues.
    before = remote_ref(tm.bare, "refs/liza/state")
    a.ok("claim", "t3", agent="coder-1")
    a.ok("heartbeat", "--task", "t3", agent="coder-1")
    assert remote_ref(tm.bare, "refs/liza/state") != before
    assert _holder(tm.bare, "t3") == "coder-1"
    # The slow clone sees ops dated in its future: its clock is named as behind.
    out = slow.ok("sync")
    behind = [ln for ln in out.splitlines() if "behind origin's" in ln]
    assert len(behind) == 1 and re.search(r"clock is (59\d|60\d|61\d) s behind", behind[0]), out

    # A clock beyond the bound is refused with the same one line, and blocks nobody else.
    # (A renewal is liveness, off the board: refused by origin, it stays here with that line, and
    # the heartbeat itself succeeds; a board op is refused, exit 3.)
    far = Skewed(tm, c_path, 1200)
    shared = remote_ref(tm.bare, "refs/liza/live/rev-1")
    r = far.run("heartbeat", agent="rev-1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"this machine's clock is 1\d\d\d s ahead of origin's", r.stderr), r.stderr
    assert remote_ref(tm.bare, "refs/liza/live/rev-1") == shared
    r = far.run("note", "from the far future", agent="rev-1")
    assert r.returncode == 3, r.stdout + r.stderr
    assert re.search(r"this machine's clock is 1\d\d\d s ahead of origin's", r.stderr), r.stderr
    a.ok("heartbeat", "--task", "t3", agent="coder-1")
    fast.ok("heartbeat", "--task", "t1", agent="coder-2")
    # The refused op stays local; the correct clock takes it back to a sane board.
    _verify_everywhere(a, fast)


@pytest.mark.parametrize("offset", [600, -600])
def test_a_replayed_claim_never_becomes_a_takeover(tmp_path: Path, offset: int) -> None:
    tm, a_path, b_path, _c = _team(tmp_path)
    a, b = Skewed(tm, a_path, 0), Skewed(tm, b_path, offset)
    # Cut off, B's coder claims t4 while nobody holds it.
    git(b_path, "remote", "set-url", "origin", str(tmp_path / "unreachable.git"))
    b.ok("claim", "t4", "--no-sync", agent="coder-2")
    # Meanwhile A's coder claims it and shares it; its lease then runs out by any clock's date
    # (B's claim is dated after it when B runs fast), but coder-1 is alive.
    a.ok("claim", "t4", agent="coder-1")
    for _ in range(4):  # past the first lease and its grace, renewed all along
        time.sleep(LEASE / 3)
        a.ok("heartbeat", "--task", "t4", agent="coder-1")
    git(b_path, "remote", "set-url", "origin", str(tm.bare))
    r = b.run("sync", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    dropped = [d for d in report["dropped"] if d["op"] == "claim" and d["task"] == "t4"]
    assert len(dropped) == 1 and dropped[0]["stand_down"], report
    assert "already claimed by coder-1" in dropped[0]["reason"], dropped
    assert _holder(tm.bare, "t4") == "coder-1"
    _verify_everywhere(a, b)


def test_libfaketime_moves_the_clock_of_the_cli() -> None:
    """The harness itself: the skewed clone's processes do see the moved clock (else every test
    above would pass on one clock)."""
    env = {**os.environ, "LD_PRELOAD": LIB or "", "FAKETIME": "+600s"}
    before = int(time.time())
    out = subprocess.run([shutil.which("python3") or "python3", "-c",
                          "import time; print(int(time.time()))"], capture_output=True,
                         text=True, env=env, check=True)
    after = int(time.time()) + 1
    # Bracketed by the real clock read before and after the child: exactly 600 s ahead, however
    # long the child took to start (no bound on the machine's speed).
    assert before + 600 <= int(out.stdout) <= after + 600
