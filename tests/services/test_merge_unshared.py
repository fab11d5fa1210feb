"""A merge whose auto-sync could not share it is taken back (issue 48, the fleet scenario): kept, a
MERGED record the remote lacks wedged the clone as soon as the remote's integration branch moved
on (every later sync, so every op of the clone, failed IntegrationDiverged; under load machine B's
whole team exited 2). A real bare remote with the server hook; the push fails (a push URL that
leads nowhere) while the fetch works, as when every round of the sync loses the race."""
from __future__ import annotations

from pathlib import Path

from tests.conftest import git
from tests.services.test_lifecycle import ok, run, to_review
from tests.services.test_liveness import clones  # noqa: F401


def _status_on(repo: Path, task: str) -> str:
    data = ok(repo, "show", task)
    return str(data["status"])


def test_a_merge_the_remote_did_not_take_is_taken_back_and_merged_once_it_can_be(
        clones: tuple[Path, Path, Path]) -> None:
    bare, a, _b = clones
    to_review(a, "t1", "c1", "r1")
    ok(a, "verdict", "t1", "approve", agent="r1")
    integ_before = git(a, "rev-parse", "integration")
    remote_integ = git(bare, "rev-parse", "integration")
    git(a, "config", "remote.origin.pushurl", str(a.parent / "nowhere.git"))
    r = run(a, "merge", "t1", agent="r1")
    assert r.returncode != 0, r.stdout + r.stderr  # not "merged" with nothing shared
    assert "did not reach the remote; taken back" in r.stderr, r.stderr
    # Taken back: the board says APPROVED, the integration branch is where it was.
    assert _status_on(a, "t1") == "APPROVED"
    assert git(a, "rev-parse", "integration") == integ_before
    assert git(bare, "rev-parse", "integration") == remote_integ
    # The remote answers pushes again: the reviewer's next merge is shared.
    git(a, "config", "--unset", "remote.origin.pushurl")
    ok(a, "merge", "t1", agent="r1")
    assert _status_on(a, "t1") == "MERGED"
    assert git(bare, "rev-parse", "integration") == git(a, "rev-parse", "integration")
    ok(a, "sync")
    ok(a, "verify")
