"""Liveness off the audit chain (core/presence/renewals.py, git/liveref.py, services/liveness.py): a
heartbeat is a renewal on refs/liza/live/<agent>, never a commit on refs/liza/state, and every
lease rule still holds: a renewed lease blocks a reclaim, an unrenewed one expires and is taken
over (the reclaim records the renewal it judged, and verify replays it), the coder who lost it
stands down, and a renewal made on one clone reaches another through a real bare remote before
it expires. Real repositories, the real CLI, real push and fetch; time moves with LIZA_NOW."""
from __future__ import annotations

import json
from pathlib import Path

import pygit2
import pytest

from gitliza.core import clock

from gitliza.core.presence import leasemarks
from gitliza.core.presence.renewals import Renewal
from gitliza.git import liveref
from gitliza.services.api import Liza
from tests.conftest import git
from tests.services.test_lifecycle import (board, claimed, fails, later, ok, run,  # noqa: F401
                                           setup_board, task, tip)

LIVE = "refs/liza/live/"
GRACE = leasemarks.grace(300)  # an observer takes a lease over after the lease and this grace


def live_tip(repo: Path, agent: str) -> str:
    return git(repo, "rev-parse", "--verify", "-q", LIVE + agent, check=False)


def last_args(repo: Path) -> dict[str, object]:
    body = git(repo, "log", "-1", "--format=%B", "refs/liza/state")
    line = next(ln for ln in body.splitlines() if ln.startswith("Liza-Args: "))
    args: dict[str, object] = json.loads(line[len("Liza-Args: "):])
    return args


def test_a_heartbeat_moves_the_live_ref_not_the_board(board: Path) -> None:
    repo = board
    claimed(repo, "t1", "c1")
    before, lease = tip(repo), task(repo, "t1").lease_expires
    for seconds in (60, 120, 180):
        out = ok(repo, "heartbeat", agent="c1", now=later(seconds))
        assert out["task"] == "t1" and out["live_commit"] == live_tip(repo, "c1")
    assert tip(repo) == before, "a heartbeat wrote a board commit"
    # The renewal is one root commit holding live.toml: nothing of the earlier ones is reachable.
    assert git(repo, "rev-list", "--count", LIVE + "c1") == "1"
    assert git(repo, "ls-tree", "--name-only", LIVE + "c1") == "live.toml"
    git(repo, "fsck", "--strict", "--no-dangling")  # objects formed by hand: git accepts them
    assert 'agent = "c1"' in git(repo, "show", LIVE + "c1:live.toml")
    # Readers see the effective lease: status, show, the agent's heartbeat.
    assert task(repo, "t1").lease_expires > lease
    shown = json.loads(run(repo, "show", "t1", "--json").stdout)
    assert shown["lease_expires"] == task(repo, "t1").lease_expires
    status = json.loads(run(repo, "status", "--json").stdout)
    c1 = next(a for a in status["agents"] if a["id"] == "c1")
    assert c1["lease_expires"] == task(repo, "t1").lease_expires
    # A planner's idle heartbeat is a renewal too.
    ok(repo, "heartbeat", agent="p1")
    assert tip(repo) == before and live_tip(repo, "p1")


def test_a_renewed_lease_blocks_the_reclaim_and_an_unrenewed_one_is_taken_over(
        board: Path) -> None:
    repo = board
    claimed(repo, "t1", "c1")
    board_lease = task(repo, "t1").lease_expires
    ok(repo, "heartbeat", agent="c1", now=later(250))
    renewed = task(repo, "t1").lease_expires
    # Past the lease the claim granted, within the renewed one: the claim is refused, nothing moves.
    between = clock.plus(board_lease, 10)
    assert between < renewed
    assert "already claimed by c1" in fails(repo, 1, "claim", "t1", agent="c2", now=between)
    # Past the renewed lease: taken over, and the reclaim records the renewal it judged.
    gone = clock.plus(renewed, GRACE + 10)
    claimed(repo, "t1", "c2", now=gone)
    judged = last_args(repo)["live"]
    assert isinstance(judged, list)
    c1_live = [r for r in judged if r["agent"] == "c1"]
    assert c1_live and c1_live[0]["lease_expires"] == renewed
    assert c1_live[0]["commit"] == live_tip(repo, "c1")
    # c1 stands down: its renewal is refused (exit 1), the board and its live ref stay.
    before, its_live = tip(repo), live_tip(repo, "c1")
    assert "stand down" in fails(repo, 1, "heartbeat", "--task", "t1", agent="c1", now=gone)
    assert "stand down" in fails(repo, 1, "submit", "t1", agent="c1", now=gone)
    assert tip(repo) == before and live_tip(repo, "c1") == its_live
    # The whole chain replays from the ops alone.
    assert run(repo, "verify").returncode == 0


def test_an_expired_lease_is_never_revived_by_a_late_renewal(board: Path) -> None:
    repo = board
    claimed(repo, "t1", "c1")
    gone = clock.plus(task(repo, "t1").lease_expires, GRACE + 5)
    assert "expired" in fails(repo, 1, "heartbeat", agent="c1", now=gone)
    assert not live_tip(repo, "c1")
    claimed(repo, "t1", "c2", now=gone)


def forge(repo: Path, r: Renewal, ref: str | None = None) -> str:
    """Write a renewal with gitliza's checks bypassed (what a rogue agent can do with git)."""
    written = liveref.write(pygit2.Repository(str(repo)), r.agent, lambda _c: r,
                            lambda body, _a: body)
    assert written.commit is not None
    if ref is not None:
        git(repo, "update-ref", ref, written.commit)
    return written.commit


def test_a_forged_renewal_cannot_hold_a_lease_or_revive_one(board: Path) -> None:
    repo = board
    claimed(repo, "t1", "c1")
    t = task(repo, "t1")
    now = later(1)
    # A day's lease from one renewal: more than lease_duration after its heartbeat, ignored.
    forge(repo, Renewal(agent="c1", heartbeat=now, task="t1",
                        lease_expires=clock.plus(now, 86400)))
    assert task(repo, "t1").lease_expires == t.lease_expires
    # A renewal for another generation (no supervisor holds c1) is ignored.
    forge(repo, Renewal(agent="c1", heartbeat=now, generation=7, task="t1",
                        lease_expires=clock.plus(now, 250)))
    assert task(repo, "t1").lease_expires == t.lease_expires
    # A renewal of c1 under c2's name is not c2's (nor c1's).
    r = Renewal(agent="c1", heartbeat=now, task="t1", lease_expires=clock.plus(now, 250))
    blob = pygit2.Repository(str(repo))
    c1_commit = forge(repo, r)
    git(repo, "update-ref", LIVE + "c2", c1_commit)
    assert all(x.agent != "c2" or x.commit != c1_commit for x in liveref.read_all(blob))
    claimed(repo, "t1", "c2", now=clock.plus(t.lease_expires or "", 300))


def test_the_view_follows_the_renewal(board: Path) -> None:
    repo = board
    git(repo, "config", "liza.materialize", "true")
    claimed(repo, "t1", "c1")
    out = ok(repo, "heartbeat", agent="c1", now=later(100))
    text = (repo / ".liza" / "state.yaml").read_text()
    assert f'lease_expires: "{out["lease_expires"]}"' in text
    assert f'heartbeat: "{out["heartbeat"]}"' in text


# -- across machines ------------------------------------------------------------------------------
@pytest.fixture
def clones(tmp_path: Path, bare: Path) -> tuple[Path, Path, Path]:
    """(bare remote with the server hook, clone A, clone B), sharing one board, auto-sync on."""
    from gitliza.hooks.install import install
    import sys
    install(bare, server=True, python=sys.executable)
    a = tmp_path / "a"
    git(tmp_path, "clone", "-q", str(bare), str(a))
    git(a, "commit", "-q", "--allow-empty", "-m", "initial")
    setup_board(a, tasks=("t1",))
    git(a, "push", "-q", "origin", "main", "integration")
    git(a, "config", "liza.remote", "origin")
    ok(a, "sync")
    b = tmp_path / "b"
    git(tmp_path, "clone", "-q", str(bare), str(b))
    git(b, "config", "liza.remote", "origin")
    ok(b, "sync")
    return bare, a, b


def test_a_lease_renewed_on_one_clone_is_seen_on_another_before_it_expires(
        clones: tuple[Path, Path, Path]) -> None:
    bare, a, b = clones
    # Everything is dated in the past: the server judges takeovers (and refuses ops from the
    # future) by its own clock, which LIZA_NOW does not move.
    base = later(-3000)
    claimed(a, "t1", "c1", now=base)
    board_lease = task(a, "t1").lease_expires
    assert board_lease is not None
    state = tip(bare)
    ok(a, "heartbeat", agent="c1", now=clock.plus(board_lease, -60))
    renewed = task(a, "t1").lease_expires
    assert renewed is not None and renewed > board_lease
    # Shared (the remote had no copy of c1's renewal), and the board did not move.
    assert live_tip(bare, "c1") == live_tip(a, "c1") and tip(bare) == state
    ok(b, "sync", now=clock.plus(board_lease, -55))  # B's clock: it first sees the mark here
    assert task(b, "t1").lease_expires == renewed
    # B judges by the renewal: the claim granted's lease is past, the renewed one is not.
    assert "already claimed" in fails(b, 1, "claim", "t1", agent="c2",
                                      now=clock.plus(board_lease, 30))
    # Another heartbeat soon after is kept local (the remote's copy is fresh): no push.
    shared = live_tip(bare, "c1")
    ok(a, "heartbeat", agent="c1", now=clock.plus(board_lease, -50))
    assert live_tip(bare, "c1") == shared != live_tip(a, "c1")
    # A's next sync carries the renewal kept local (newer than the remote's copy).
    kept = live_tip(a, "c1")
    ok(a, "sync")
    assert live_tip(bare, "c1") == kept
    renewed = task(a, "t1").lease_expires
    assert renewed is not None
    ok(b, "sync", now=clock.plus(board_lease, -40))
    # c1 dies: B, having seen its renewal unchanged for the lease and the grace on its own
    # clock, takes t1 over, and the server accepts the reclaim.
    claimed(b, "t1", "c2", now=clock.plus(renewed, GRACE + 30))
    assert tip(bare) == tip(b)
    ok(a, "sync")
    assert task(a, "t1").assigned_to == "c2"
    assert run(a, "verify").returncode == 0


def test_the_server_refuses_a_reclaim_that_leaves_out_a_renewal_it_holds(
        clones: tuple[Path, Path, Path]) -> None:
    """B never fetched c1's renewal: by B's board (and B's own clock) the lease is over, by the
    server's renewals it is not. The server refuses the takeover; B keeps nothing of it."""
    bare, a, b = clones
    t = later(0)
    claimed(a, "t1", "c1", now=clock.plus(t, -1500))  # the board's lease: until t - 1200
    ok(a, "heartbeat", agent="c1", now=clock.plus(t, -1210))  # renewed until t - 910
    ok(b, "sync", now=clock.plus(t, -1400))
    git(b, "update-ref", "-d", "refs/remotes/origin/liza/live/c1")  # as if never fetched
    assert task(b, "t1").lease_expires == clock.plus(t, -1200)
    # (A claim syncs first and would have learned of the renewal: they are made offline here.)
    # B first sees the board's lease, then sees it unchanged for the lease and its grace.
    assert "already claimed" in fails(b, 1, "claim", "t1", "--no-sync", agent="c2",
                                      now=clock.plus(t, -1400))
    ok(b, "claim", "t1", "--no-sync", agent="c2", now=clock.plus(t, -1400 + 300 + 60 + 10))
    before = tip(bare)
    r = run(b, "push")
    assert r.returncode == 3 and "takes over a lease renewed since" in r.stderr, r.stderr
    assert tip(bare) == before
    ok(a, "sync")
    assert task(a, "t1").assigned_to == "c1"


def test_the_server_refuses_a_live_ref_moved_by_anyone_but_its_agent(
        clones: tuple[Path, Path, Path]) -> None:
    bare, a, b = clones
    claimed(a, "t1", "c1")
    ok(a, "heartbeat", agent="c1")
    good = live_tip(bare, "c1")
    assert good
    now = later(5)

    def push(ref_value: str, ref: str, **env: str) -> str:
        git(b, "update-ref", "refs/rogue", ref_value)
        r = run(b, "sync")  # noqa: F841 - keep B's copy fresh
        import os
        import subprocess
        p = subprocess.run(["git", "push", "--porcelain", "origin", f"+refs/rogue:{ref}"],
                           cwd=b, capture_output=True, text=True, env={**os.environ, **env})
        assert p.returncode != 0, p.stdout
        return p.stderr

    # c2 writes "c1's" renewal (a long lease for c1's task) and pushes it onto c1's ref.
    forged = forge(b, Renewal(agent="c2", heartbeat=now))
    assert "a renewal of c2, not of c1" in push(forged, LIVE + "c1")
    # A record that names c1, pushed by a pusher bound to c2 only.
    git(bare, "config", "liza-pusher.carol.agents", "c2")
    as_c1 = forge(b, Renewal(agent="c1", heartbeat=now, task="t1",
                             lease_expires=clock.plus(now, 200)))
    assert "may act only as c2" in push(as_c1, LIVE + "c1", LIZA_PUSHER="carol")
    # Not a live record at all (a board commit on a live ref).
    assert "not a live record" in push(tip(b), LIVE + "c1", LIZA_PUSHER="carol")
    # An older renewal replayed over a newer one.
    git(bare, "config", "--unset-all", "liza-pusher.carol.agents")
    old = forge(b, Renewal(agent="c1", heartbeat=clock.plus(now, -3000)))
    assert "older renewal" in push(old, LIVE + "c1")
    assert live_tip(bare, "c1") == good


def test_the_watchers_lease_alarm_follows_the_renewal(board: Path) -> None:
    """`git liza watch --once` (the watcher's stale-lease alarm) at a time past the lease the
    claim granted: no alarm while the renewal off the chain covers it, the alarm once it does not."""
    repo = board
    claimed(repo, "t1", "c1")
    granted = task(repo, "t1").lease_expires
    assert granted is not None
    ok(repo, "heartbeat", agent="c1", now=clock.plus(granted, -30))
    renewed = task(repo, "t1").lease_expires
    assert renewed is not None and renewed > clock.plus(granted, 200)
    quiet = run(repo, "watch", "--once", "--json", now=clock.plus(granted, 150))
    assert "LEASE_EXPIRED" not in quiet.stdout + quiet.stderr, quiet.stdout + quiet.stderr
    loud = run(repo, "watch", "--once", "--json", now=clock.plus(renewed, 600))
    assert loud.returncode == 1 and "LEASE EXPIRED: c1 on t1" in loud.stdout + loud.stderr, \
        loud.stdout + loud.stderr


def test_a_heartbeat_by_hand_keeps_the_supervisors_token_renewal(board: Path) -> None:
    """The live ref holds one record: a heartbeat made outside the supervisor (no generation in
    its environment) carries the token's renewed expiry over instead of dropping it."""
    from gitliza.core.states import Role
    from gitliza.services import liveness
    from gitliza.team.generation import Generation
    repo = board
    sup_liza = Liza.open(repo, "c1")
    token = Generation("c1")
    token.take(sup_liza, Role.CODER, takeover=False)
    granted = sup_liza.board().get("supervisors", "c1").expires
    sup_liza._now = lambda: clock.plus(granted, -10)  # noqa: SLF001 - the renewal's time
    liveness.renew(sup_liza, extend_task=False)
    renewed = Liza.open(repo).board().get("supervisors", "c1").expires
    assert renewed == clock.plus(granted, 290)
    ok(repo, "heartbeat", agent="c1", now=clock.plus(granted, -5))
    assert Liza.open(repo).board().get("supervisors", "c1").expires == renewed


def test_a_renewal_the_remote_would_refuse_stays_here_and_does_not_block_sync(
        clones: tuple[Path, Path, Path]) -> None:
    """A stale record on a local live ref (a generation the board never gave c1) is not pushed:
    the sync of everything else goes through, and the remote keeps its own copy."""
    bare, a, _b = clones
    claimed(a, "t1", "c1")
    forge(a, Renewal(agent="c1", heartbeat=later(5), generation=9))
    assert not live_tip(bare, "c1")
    ok(a, "release", "t1", agent="c1")  # a protocol op: its auto-sync pushes the board
    assert tip(bare) == tip(a) and not live_tip(bare, "c1")


def test_a_sync_drops_a_takeover_the_holders_renewal_outran_at_once(
        clones: tuple[Path, Path, Path]) -> None:
    """The same takeover made by a sync instead of a push (issue 48, fleet run 8): the sync's
    fetch brings c1's renewal, by which the remote will never take the claim. Before, the server
    refused it at every push, and every later op of B rode on the same refused push (exit 3 for
    35 s, until the board moved past the lease). Now the sync drops it at once as a lost race,
    said like every dropped op, and B's board is the remote's."""
    import pygit2

    from gitliza.services.sync import droplog
    bare, a, b = clones
    t = later(0)
    claimed(a, "t1", "c1", now=clock.plus(t, -1500))
    ok(a, "heartbeat", agent="c1", now=clock.plus(t, -1210))
    ok(b, "sync", now=clock.plus(t, -1400))
    git(b, "update-ref", "-d", "refs/remotes/origin/liza/live/c1")  # as if never fetched
    assert "already claimed" in fails(b, 1, "claim", "t1", "--no-sync", agent="c2",
                                      now=clock.plus(t, -1400))
    ok(b, "claim", "t1", "--no-sync", agent="c2", now=clock.plus(t, -1400 + 300 + 60 + 10))
    r = run(b, "sync")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "dropped claim t1 by c2" in out and "renewed its lease" in out, out
    assert tip(b) == tip(bare)
    assert task(b, "t1").assigned_to == "c1"
    alerts = droplog.alerts(pygit2.Repository(str(b)))
    assert len(alerts) == 1 and "claim t1 by c2" in alerts[0].text, alerts
    # B's next op is shared again at once.
    ok(b, "heartbeat", agent="c2")
    assert run(b, "verify").returncode == 0


def _operator_hook(bare: Path, mode: str) -> Path:
    """The operator's own pre-receive, chained by gitliza's (docs/hooks-install.md): refuses every
    push while the file returned holds "always", the next one when it holds "once"."""
    refuse = bare.parent / "refuse"
    refuse.write_text(mode)
    hook = bare / "hooks" / "pre-receive.gitliza-legacy"
    hook.write_text(f"""#!/bin/sh
cat > /dev/null
case "$(cat '{refuse}' 2>/dev/null)" in
always) echo "refused by the operator" >&2; exit 1 ;;
once) rm -f '{refuse}'; echo "refused once by the operator" >&2; exit 1 ;;
esac
exit 0
""")
    hook.chmod(0o755)
    return refuse


def test_a_takeover_outrun_between_the_fetch_and_the_push_is_dropped_at_the_next_round(
        clones: tuple[Path, Path, Path]) -> None:
    """The race the fetch cannot see: c1's renewal reaches the remote after B's sync fetched and
    before it pushed B's takeover (here the operator's own pre-receive, which runs first, moves
    the live ref to a renewal c1 made, as c1's push landing at that moment would). The server
    refuses the takeover as outrun; that refusal alone starts one more round, whose fetch brings
    the renewal, and the takeover is dropped and said. Before: exit 3 at every push until the
    board itself moved past the lease."""
    bare, a, b = clones
    t = later(0)
    claimed(a, "t1", "c1", now=clock.plus(t, -1500))  # the board's lease: until t - 1200
    ok(b, "sync", now=clock.plus(t, -1400))
    ok(a, "heartbeat", "--no-sync", agent="c1", now=clock.plus(t, -1210))  # not shared yet
    git(bare, "fetch", "-q", str(a), "refs/liza/live/c1:refs/held/c1")  # its objects, no ref
    assert "already claimed" in fails(b, 1, "claim", "t1", "--no-sync", agent="c2",
                                      now=clock.plus(t, -1400))
    ok(b, "claim", "t1", "--no-sync", agent="c2", now=clock.plus(t, -1400 + 300 + 60 + 10))
    landed = bare.parent / "landed"
    hook = bare / "hooks" / "pre-receive.gitliza-legacy"
    hook.write_text(f"""#!/bin/sh
cat > /dev/null
[ -e '{landed}' ] && exit 0
touch '{landed}'
env -u GIT_QUARANTINE_PATH git update-ref refs/liza/live/c1 refs/held/c1
""")
    hook.chmod(0o755)
    r = run(b, "sync")
    out = r.stdout + r.stderr
    assert landed.exists()  # the renewal landed inside the push
    assert r.returncode == 0, out
    assert "dropped claim t1 by c2" in out and "renewed its lease" in out, out
    assert tip(b) == tip(bare) and task(b, "t1").assigned_to == "c1"


def test_a_refusal_by_the_remotes_hook_a_fetch_cannot_cure_is_raised_at_once(
        clones: tuple[Path, Path, Path]) -> None:
    """Any other refusal (the operator's own hook here) is the command's error at once (exit 3),
    nothing of it on the remote: another round would only be refused the same way."""
    bare, a, _b = clones
    refuse = _operator_hook(bare, "once")
    before = tip(bare)
    r = run(a, "claim", "t1", agent="c1")
    assert r.returncode == 3 and "refused once by the operator" in r.stderr, r.stderr
    assert not refuse.exists()  # refused once, and not tried again
    assert tip(bare) == before
    ok(a, "sync")  # the next sync shares the claim
    assert tip(bare) == tip(a)


def test_a_claim_left_on_the_local_board_by_a_failed_sync_keeps_its_worktree(
        clones: tuple[Path, Path, Path]) -> None:
    """Fleet run 10: a claim committed here whose sync failed (exit != 0) stays on the local
    board, and the supervisor starts the coder once the remote has it; the failing command used to
    remove the worktree it had made, and the coder then ran in a directory that was no
    repository (exit 1). The worktree stays while the board holds the claim; one removed by
    hand is made again before an agent starts in it."""
    from gitliza.services.api import Liza
    from gitliza.services.lifecycle.claim import restore_worktree
    bare, a, _b = clones
    refuse = _operator_hook(bare, "always")
    r = run(a, "claim", "t1", agent="c1")
    assert r.returncode == 3, r.stderr
    assert task(a, "t1").status == "CLAIMED" and task(a, "t1").assigned_to == "c1"
    wt = a / ".worktrees" / "t1"
    assert (wt / ".git").exists()
    refuse.unlink()
    ok(a, "sync")
    assert tip(bare) == tip(a)
    # Work committed, then the directory lost: made again at the branch tip, the work in it.
    (wt / "w.txt").write_text("work\n")
    git(wt, "add", "w.txt")
    git(wt, "commit", "-qm", "work")
    git(a, "worktree", "remove", "--force", str(wt))
    said = restore_worktree(Liza.open(a, "c1"), "t1")
    assert said is not None and "recreated" in said
    assert (wt / "w.txt").read_text() == "work\n"
    assert restore_worktree(Liza.open(a, "c1"), "t1") is None  # there: nothing to do
    assert restore_worktree(Liza.open(a, "c2"), "t1") is None  # not c2's claim


def test_a_renewal_into_a_link_that_answers_nothing_gives_up_early(
        clones: tuple[Path, Path, Path]) -> None:
    """A partition that drops packets: the remote accepts the connection and never answers (a
    link gone down mid-transfer looks the same). The renewal's push gave the lease keeper up to
    the transport's 120 s, so the keeper neither renewed nor saw the partition and stopped its
    agent (fleet run 18: a cut-off coder worked on for 50 s, 11.6 s of it beside its task's
    taker). Now the push gives up after a quarter of the lease, or 10 s, and says so."""
    import socket
    import subprocess
    import threading
    bare, a, _b = clones
    claimed(a, "t1", "c1")
    ok(a, "config", "lease_duration", "8")
    pit = socket.socket()
    pit.bind(("127.0.0.1", 0))
    pit.listen(8)
    held: list[socket.socket] = []
    def accept() -> None:
        try:
            for _ in range(8):
                held.append(pit.accept()[0])
        except OSError:  # closed at the test's end
            pass
    threading.Thread(target=accept, daemon=True).start()
    git(a, "remote", "set-url", "origin", f"git://127.0.0.1:{pit.getsockname()[1]}/remote.git")
    try:
        # (A remote copy older than a third of the lease: this renewal is due to be pushed.)
        r = run(a, "heartbeat", agent="c1", now=later(10))
    except subprocess.TimeoutExpired:  # run's own bound, 120 s: the transport's whole timeout
        raise AssertionError("the renewal's push waited on a silent remote") from None
    finally:
        pit.close()
        for s in held:
            s.close()
    assert r.returncode == 0, r.stderr
    assert "renewal of c1 kept here, not shared yet" in r.stderr, r.stderr
