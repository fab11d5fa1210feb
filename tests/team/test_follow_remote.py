"""Supervisors follow the remote (issue 48): two real clones of a real bare remote with the server
hook, a real supervisor with a scripted agent on clone B, and nobody running `git liza sync` on B.

- B's idle coder claims, works and submits a task that A added after B started: B's remote
  follower (one per clone, here the supervisor's) saw the remote's board move and synced.
- B cut off from the remote for more than half a lease claims nothing, saying why, even a task
  on its own board; healed, it shares that task and works it.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pygit2
import pytest

from gitliza.hooks.install import install
from gitliza.services.sync import follower
from tests.cli.test_board import liza, ok
from tests.conftest import git
from tests.team.procs import Sup, add_task, make_board, script, task_of, until
from tests.team.test_supervisor import SUBMIT

pytestmark = pytest.mark.slow


def _machines(tmp_path: Path, repo: Path, **config: str) -> tuple[Path, Path, Path]:
    """The bare remote (server hook), A (the board's maker, auto-sync on) and B (joined)."""
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    install(bare, server=True, python=sys.executable)
    git(repo, "remote", "add", "origin", str(bare))
    git(repo, "push", "-q", "origin", "main")
    git(repo, "config", "liza.remote", "origin")
    make_board(repo, **{"follow_interval": "1", **config})
    b = tmp_path / "b"
    git(tmp_path, "clone", "-q", str(bare), str(b))
    ok(liza(b, "pull", agent=None))
    git(b, "config", "liza.remote", "origin")
    return bare, repo, b


def _idle_coder_on_b(tmp_path: Path, repo: Path) -> tuple[Path, Path, Path, Sup]:
    bare, a, b = _machines(tmp_path, repo)
    sup = Sup(b, "coder", "coder-1", "--", str(script(tmp_path, "agent.sh", SUBMIT)))
    sup.expect("supervising coder-1")
    return bare, a, b, sup


def _cut(b: Path, tmp_path: Path) -> None:
    git(b, "remote", "set-url", "origin", str(tmp_path / "nowhere.git"))


def _heal(b: Path, bare: Path) -> None:
    git(b, "remote", "set-url", "origin", str(bare))


@contextmanager
def _ending(sup: Sup, a: Path, b: Path, bare: Path) -> Iterator[None]:
    """The test's body; whatever becomes of it, B is healed and the team ended (abort on A)."""
    try:
        yield
    finally:
        _heal(b, bare)
        ok(liza(a, "abort", agent=None))
        sup.wait()
        sup.kill()


def _remote_ops(bare: Path) -> list[str]:
    return git(bare, "log", "--format=%(trailers:key=Liza-Op,valueonly)%(trailers:key=Liza-Task,"
                     "valueonly)%(trailers:key=Liza-Actor,valueonly)", "refs/liza/state").split()


def test_an_idle_machine_claims_work_added_on_another_without_a_sync(
        repo: Path, tmp_path: Path) -> None:
    bare, a, b, sup = _idle_coder_on_b(tmp_path, repo)
    with _ending(sup, a, b, bare):
        add_task(a, "t1")  # on A, shared by A's auto-sync; B is told nothing
        sup.expect("agent completed")
        assert task_of(b, "t1")["status"] == "READY_FOR_REVIEW"
        # The claim and the submit reached the remote (auto-sync of B's agent); B's board was
        # brought up to date by its follower alone.
        until(lambda: "ready_for_review" in " ".join(_remote_ops(bare)) or
               "submit" in " ".join(_remote_ops(bare)), "B's submit never reached the remote")
        ops = _remote_ops(bare)
        assert any(o.startswith("claim") for o in ops), ops


def test_a_cut_off_machine_claims_nothing_until_the_remote_answers(
        repo: Path, tmp_path: Path) -> None:
    bare, a, b, sup = _idle_coder_on_b(tmp_path, repo)
    with _ending(sup, a, b, bare):
        _cut(b, tmp_path)  # the cut
        sup.expect("follower: cannot reach origin")
        repo_b = pygit2.Repository(str(b))
        lease = 5  # procs.FAST

        def silent_long() -> bool:
            c = follower.read_contact(repo_b)
            return c is not None and c.silent_for(time.time()) > lease / 2 + 1
        until(silent_long, "the follower never recorded the silence")
        # A task on B's own board (added here, not shared): B must not claim it cut off, since
        # a machine on the other side may be claiming it meanwhile.
        ok(liza(b, "add", "t2", "--desc", "do t2", "--spec-ref", "README.md", "--done-when",
                "done", "--scope", "t2", "--ready", "--no-sync", agent=None))
        line = sup.expect("cut off from origin")
        assert "not claiming" in line and "waiting" in line
        assert task_of(b, "t2")["status"] == "UNCLAIMED"
        _heal(b, bare)  # healed
        sup.expect("follower: origin answers again")
        sup.expect("agent completed")
        assert task_of(b, "t2")["status"] == "READY_FOR_REVIEW"
        # The add made while cut off reached the remote (the follower pushes what it lacks).
        until(lambda: "t2" in " ".join(_remote_ops(bare)), "t2 never reached the remote")
        assert sup.output().count("cut off from origin") == 1  # said once, not per wake-up


def test_a_cut_off_machine_stops_its_working_agent_and_resumes_once_healed(
        repo: Path, tmp_path: Path) -> None:
    """Cut off longer than half a lease, the agent at work is stopped (a machine on the other side
    may take its task over: two coders must not work it at once); its claim is kept, and once the
    remote answers the same coder goes on with the task and submits it."""
    bare, a, b = _machines(tmp_path, repo)
    gate = tmp_path / "go"
    # The first session waits until the test lets it go (it is stopped before); later ones work.
    agent = script(tmp_path, "agent.sh", f"""n=$(cat {tmp_path}/runs 2>/dev/null || echo 0)
echo $((n+1)) > {tmp_path}/runs
if [ "$n" = 0 ]; then while [ ! -e {gate} ]; do sleep 0.2; done; fi
""" + SUBMIT)
    sup = Sup(b, "coder", "coder-1", "--", str(agent))
    with _ending(sup, a, b, bare):
        sup.expect("supervising coder-1")
        add_task(a, "t1")
        sup.expect("started agent")
        _cut(b, tmp_path)  # the cut
        line = sup.expect("agent stopped (cut off from origin")
        assert "stopping the agent on t1" in line
        sup.expect("cut off from origin")  # and it waits, claiming nothing
        assert task_of(b, "t1")["assigned_to"] == "coder-1"  # its claim is kept
        _heal(b, bare)  # healed
        # (With this test's 5 s lease, the claim may have lapsed during the wait: then the same
        # supervisor claims t1 again, its stopped session's work kept in the attic.)
        try:
            until(lambda: task_of(b, "t1")["status"] == "READY_FOR_REVIEW", "t1 not submitted")
        except AssertionError:
            raise AssertionError(sup.output()) from None
        assert task_of(b, "t1")["assigned_to"] == "coder-1"
        assert not gate.exists()  # the first session never went on: it was stopped


def test_machines_names_each_machine_live_then_unreachable_then_gone(
        repo: Path, tmp_path: Path) -> None:
    """`git liza machines` on A (no sync by hand: A's supervisor follows the remote): B is live
    while its supervisor renews, unreachable once B is killed whole and its token expired, and A
    itself gone once its supervisor ended cleanly."""
    import json
    import signal
    bare, a, b = _machines(tmp_path, repo)
    git(a, "config", "liza.machine", "machine-a")
    git(b, "config", "liza.machine", "machine-b")
    idle = str(script(tmp_path, "idle.sh", "true\n"))
    sup_a = Sup(a, "coder", "coder-1", "--", idle)
    sup_b = Sup(b, "coder", "coder-2", "--", idle)

    def seen() -> dict[str, dict[str, object]]:
        data = json.loads(ok(liza(a, "machines", "--json", agent=None)))
        return {m["host"]: m for m in data["machines"]}
    try:
        sup_a.expect("supervising coder-1")
        sup_b.expect("supervising coder-2")
        until(lambda: seen().get("machine-b", {}).get("status") == "live", "B never live on A")
        assert seen()["machine-a"]["status"] == "live"
        assert seen()["machine-b"]["agents"] == ["coder-2"]
        sup_b.kill()  # SIGKILL: B dies whole, its token is never given back
        until(lambda: seen()["machine-b"]["status"] == "unreachable",
              "B never unreachable on A")
        text = ok(liza(a, "machines", agent=None))
        assert "machine-a (this machine): live" in text and "machine-b: unreachable" in text
        status = ok(liza(a, "status", agent=None))
        assert "machine-b UNREACHABLE (coder-2)" in status and "machine-a live" in status
        sup_a.signal(signal.SIGTERM)
        assert sup_a.wait() == 0
        assert seen()["machine-a"]["status"] == "gone"
    finally:
        sup_a.kill()
        sup_b.kill()


def _records_the_remote(bare: Path, seen: Path) -> str:
    """An agent script's first lines: it writes down the remote's board ops when it starts."""
    return f"""git --git-dir={bare} log \\
--format='%(trailers:key=Liza-Op,valueonly) %(trailers:key=Liza-Task,valueonly)' \\
refs/liza/state > {seen}.tmp
mv {seen}.tmp {seen}
"""


def _held_back_until_healed(sup: Sup, b: Path, bare: Path, what: str, op: str,
                            seen: Path) -> None:
    """B's `what` of t2 (its op `op`) is on B's board only: its agent does not start, saying why
    once; healed, the op reaches the remote first, then the agent starts (`seen`: what the
    remote's board held when it did)."""
    line = sup.first_of(f"{what} of t2 not started", "started agent")
    assert "not on the remote's board" in line and "origin" in line, line
    assert f"{op} t2" not in " ".join(_remote_ops(bare))
    assert not seen.exists(), f"the agent started on a {what} only B knew of"
    _heal(b, bare)
    sup.expect(f"{what} of t2 acknowledged by the remote; starting the agent")
    sup.expect("started agent")
    until(seen.exists, "the agent never started once healed")
    assert f"{op} t2" in " ".join(seen.read_text().split()), seen.read_text()


def test_a_claim_the_remote_has_not_acknowledged_starts_no_agent(
        repo: Path, tmp_path: Path) -> None:
    """B claims a task while it cannot reach the remote (not yet long enough to count as cut
    off): the claim is committed on B's board only, and B's agent must not start on it, since a
    machine on the other side may be working the same task. Healed, the claim reaches the remote
    first, then the agent starts (it records what the remote's board held when it started)."""
    bare, a, b = _machines(tmp_path, repo, lease_duration="60")  # cut off only after 30 s
    seen = tmp_path / "seen"
    agent = script(tmp_path, "agent.sh", _records_the_remote(bare, seen) + SUBMIT)
    sup = Sup(b, "coder", "coder-1", "--", str(agent))
    with _ending(sup, a, b, bare):
        sup.expect("supervising coder-1")
        _cut(b, tmp_path)
        ok(liza(b, "add", "t2", "--desc", "do t2", "--spec-ref", "README.md", "--done-when",
                "done", "--scope", "t2", "--ready", "--no-sync", agent=None))
        sup.expect("claimed t2")
        assert task_of(b, "t2")["status"] == "CLAIMED"  # claimed here, on B's board only
        _held_back_until_healed(sup, b, bare, "claim", "claim", seen)
        sup.expect("agent completed")
        assert task_of(b, "t2")["status"] == "READY_FOR_REVIEW"
        assert sup.output().count("claim of t2 not started") == 1  # said once, not per look

def _ready_for_review_on_b_only(b: Path, task: str) -> None:
    """`task` added, claimed by coder-9, committed and submitted on B while B is cut off: READY
    FOR REVIEW on B's board only (each op's auto-sync failed: "committed locally")."""
    import json
    import subprocess
    from tests.team.procs import env_for
    ok(liza(b, "add", task, "--desc", f"do {task}", "--spec-ref", "README.md", "--done-when",
            "done", "--scope", task, "--ready", "--no-sync", agent=None))
    ok(liza(b, "register", "coder-9", "--role", "coder", agent=None))
    wt = json.loads(ok(liza(b, "claim", task, "--json", agent="coder-9")))["worktree"]
    (Path(wt) / f"{task}.txt").write_text(f"{task}\n")
    for argv in (["git", "add", f"{task}.txt"], ["git", "commit", "-qm", task]):
        subprocess.run(argv, cwd=wt, check=True, env=env_for("coder-9"))
    ok(liza(b, "submit", task, agent="coder-9"))


def test_a_review_lease_the_remote_has_not_acknowledged_starts_no_reviewer(
        repo: Path, tmp_path: Path) -> None:
    """The acknowledged-claim rule for reviewers: B's reviewer takes a review lease while B cannot
    reach the remote (not yet long enough to count as cut off). A reviewer on the other side of
    the cut may take the same review meanwhile, so B's reviewer agent must not start until the
    remote's board holds B's lease; healed, it starts, with claim-review on the remote's board."""
    bare, a, b = _machines(tmp_path, repo, lease_duration="60")  # cut off only after 30 s
    seen = tmp_path / "seen"
    reviewer = script(tmp_path, "r.sh", _records_the_remote(bare, seen) + """\
test "$(git rev-parse HEAD)" = "$LIZA_REVIEW_COMMIT"
git liza verdict "$LIZA_TASK_ID" approve --commit "$LIZA_REVIEW_COMMIT"
""")
    _cut(b, tmp_path)
    _ready_for_review_on_b_only(b, "t2")
    assert "t2" not in " ".join(_remote_ops(bare))
    sup = Sup(b, "code-reviewer", "reviewer-1", "--", str(reviewer))
    with _ending(sup, a, b, bare):
        sup.expect("supervising reviewer-1")
        sup.expect("reviewing t2")
        assert task_of(b, "t2")["reviewing_by"] == "reviewer-1"  # taken here, on B's board only
        _held_back_until_healed(sup, b, bare, "review lease", "claim-review", seen)
        sup.expect("merged t2")
        assert task_of(b, "t2")["status"] == "MERGED"
        assert sup.output().count("review lease of t2 not started") == 1  # said once
        # Its first session is the review's start, not a resume of it.
        prompts = sorted((b / ".liza" / "agent-prompts").glob("reviewer-1-*.txt"))
        assert prompts and "RESUME" not in prompts[0].read_text()


def test_a_renewal_the_remote_refuses_to_take_does_not_end_the_supervisor(
        repo: Path, tmp_path: Path) -> None:
    """A supervisor whose token expired (its machine too loaded to renew in time: here, stopped
    for longer than the lease) renews it by a board op; when the remote refuses the clone's push
    (here its hook refuses every push; in the fleet scenario, a takeover of this clone judged on a
    lease renewed since), that op stays committed here and the supervisor works on, saying so.
    Before, the refusal ended the supervisor (exit 3): the fleet scenario's A team exited 3."""
    import signal
    bare, a, b = _machines(tmp_path, repo)
    sup = Sup(b, "coder", "coder-1", "--", str(script(tmp_path, "idle.sh", "true\n")))
    with _ending(sup, a, b, bare):
        sup.expect("supervising coder-1")
        hook = bare / "hooks" / "pre-receive"
        kept = hook.read_bytes()
        hook.write_text("#!/bin/sh\necho 'no pushes today' >&2\nexit 1\n")
        try:
            sup.signal(signal.SIGSTOP)
            time.sleep(7)  # (the lease is 5 s: the token expires meanwhile; this measures nothing)
            sup.signal(signal.SIGCONT)
            # Any change of B's board wakes the supervisor (a task not ready: nothing to claim).
            ok(liza(b, "add", "t9", "--desc", "do t9", "--spec-ref", "README.md", "--done-when",
                    "done", "--scope", "t9", "--no-sync", agent=None))
            line = sup.first_of("token renewed here, not shared yet", "gitliza: error")
            assert "not shared yet" in line and "no pushes today" in line, line
            assert sup.proc.poll() is None, sup.output()  # it works on
        finally:
            hook.write_bytes(kept)
