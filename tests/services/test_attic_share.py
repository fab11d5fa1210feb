"""The attic travels with sync and is kept `config attic_keep` days (issue 38, item 3): real bare
remote with the server hook, two real clones, real pushes and fetches through `git liza sync`."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pygit2

from gitliza.services import attic
from tests.conftest import git
from tests.services.test_lifecycle import ok, run
# (bare remote with the server hook, clone A, clone B): one board, auto-sync on
from tests.services.test_liveness import clones  # noqa: F401

DAY = 86400


def keep(repo: Path, task: str, text: str, age_days: float = 0) -> str:
    """Keep a commit of `repo` (made here, on no branch) in the attic, kept `age_days` ago."""
    (repo / "work.txt").write_text(text)
    git(repo, "add", "work.txt")
    tree = git(repo, "write-tree")
    commit = git(repo, "commit-tree", tree, "-p", "HEAD", "-m", f"work on {task}: {text}")
    git(repo, "reset", "-q")
    (repo / "work.txt").unlink()
    r = pygit2.Repository(str(repo))
    return attic.to_attic(r, task, pygit2.Oid(hex=commit), "a test",
                          int(time.time() - age_days * DAY))


def names(repo: Path, prefix: str = "refs/liza-attic/") -> set[str]:
    return set(git(repo, "for-each-ref", "--format=%(refname)", prefix).split())


def test_an_entry_kept_on_one_machine_is_listed_and_restored_on_the_other(
        clones: tuple[Path, Path, Path], tmp_path: Path) -> None:
    bare, a, b = clones
    ref = keep(a, "t1", "only on a")
    assert "attic: 1 pushed" in ok(a, "sync")["notices"]
    assert ref in names(bare)
    ok(b, "sync")
    assert ref in names(b)
    listed = json.loads(run(b, "attic", "t1", "--json").stdout)
    assert [e["ref"] for e in listed] == [ref]
    r = run(b, "attic", "t1", "--restore", ref.rsplit("/", 1)[1][:12], "--into",
            str(tmp_path / "back"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "back" / "work.txt").read_text() == "only on a"
    # Both ways: what b keeps reaches a.
    mine = keep(b, "t2", "only on b")
    ok(b, "sync")
    ok(a, "sync")
    assert mine in names(a) and ref in names(a)


def test_a_peer_cannot_overwrite_or_forge_an_entry(clones: tuple[Path, Path, Path]) -> None:
    bare, a, b = clones
    ref = keep(a, "t1", "a's work")
    ok(a, "sync")
    other = git(b, "commit-tree", git(b, "rev-parse", "HEAD^{tree}"), "-m", "b's")
    # b points a's entry at another commit: the server refuses, with or without force.
    git(b, "push", "--force", "origin", f"{other}:{ref}", check=False)
    assert git(bare, "rev-parse", ref + "^{commit}") == ref.rsplit("/", 1)[1]
    # b pushes a forged entry (its name says one commit, it leads to another): refused too.
    forged = f"refs/liza-attic/t1/{git(b, 'rev-parse', 'HEAD')}"
    git(b, "push", "origin", f"{other}:{forged}", check=False)
    assert forged not in names(bare)
    # b deletes a's young entry: refused (kept attic_keep days).
    git(b, "push", "origin", f":{ref}", check=False)
    assert ref in names(bare)
    # A remote without the hook (written there by hand): a forged entry is never adopted.
    git(b, "push", "-q", "origin", f"{other}:refs/heads/scratch")
    git(bare, "update-ref", forged, other)
    notices = ok(a, "sync")["notices"]
    assert forged not in names(a)
    assert any("1 refused (not what its name says)" in n for n in notices), notices
    assert git(a, "rev-parse", ref + "^{commit}") == ref.rsplit("/", 1)[1]


def test_entries_past_attic_keep_go_here_and_on_the_remote_and_younger_ones_stay(
        clones: tuple[Path, Path, Path]) -> None:
    bare, a, b = clones
    ok(a, "config", "attic_keep", "7")
    old = keep(a, "t1", "old", age_days=8)
    young = keep(a, "t1", "young", age_days=6.9)
    # doctor reports the expired one and --fix drops it, never the younger one.
    out = run(a, "doctor")
    assert out.returncode != 0 and "attic-expired" in out.stdout + out.stderr
    assert "1 attic entry" in out.stdout + out.stderr
    assert run(a, "doctor", "--fix").returncode == 0
    assert names(a) == {young}
    # On the remote: an entry older than the key, pushed there before (by a clone whose clock
    # said it was young), is dropped by the next sync of any clone; the young one is shared.
    stale = keep(b, "t2", "stale", age_days=8)
    git(b, "push", "-q", "origin", f"{stale}:{stale}")
    ok(a, "sync")
    assert names(bare) == {young}
    ok(b, "sync")
    assert names(b) == {young}  # b's own expired entry is dropped at its sync too
