"""`git liza repair` (gitliza/services/repair.py): a poisoned remote is rebuilt on its last verifying
commit with every op still legal, and every clone converges on its next sync: one that refused
the forgery, one that had adopted it before clients checked (with client hooks, and its own
unshared op), and the clone that repaired. On a remote guarded by the server hook the rewrite is
refused by push and done on the server (`repair --here`)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pygit2
import pytest

from gitliza.services.sync import engine
from gitliza.core.ops import Note
from gitliza.git.store import STATE_REF, Store
from gitliza.hooks.install import install
from tests.conftest import git, remote_of
from tests.forgery import forge, push_forgery
from tests.services.test_sync import cli, clone, liza, seed, tip

pytestmark = pytest.mark.slow


def notes(path: Path) -> list[str]:
    return sorted(n.message for n in liza(path).board().values("human_notes"))


def adopt_blindly(clone_: Path, remote: str = "origin") -> None:
    """What a clone did before sync checked: take the remote's tip as it is."""
    git(clone_, "fetch", "-q", remote, f"+{STATE_REF}:refs/remotes/{remote}/liza/state")
    repo = pygit2.Repository(str(clone_))
    new = repo.references[f"refs/remotes/{remote}/liza/state"].target
    repo.references.create(STATE_REF, new, force=True)


def poison(bare: Path, b: Path) -> tuple[str, str]:
    """On B (no checks, plain git): a forged APPROVED for task-1, two legal notes on top, a merge of
    the forged approval, and a commit that records no op; pushed. (forged, unparsable)"""
    forged = forge(b, "task-1")
    h = liza(b)
    h.do(Note, message="legal after the forgery 1")
    h.do(Note, message="legal after the forgery 2")
    repo = pygit2.Repository(str(b))
    t = repo.references[STATE_REF].peel(pygit2.Commit)
    junk = repo.create_commit(None, t.author, t.committer, "not an op at all\n", t.tree_id,
                              [t.id])
    repo.references.create(STATE_REF, junk, force=True)
    h.do(Note, message="legal after the junk")
    push_forgery(b, git(b, "rev-parse", STATE_REF))
    assert tip(bare) == git(b, "rev-parse", STATE_REF)
    return forged, str(junk)


def test_repair_rebuilds_and_every_clone_converges(tmp_path: Path) -> None:
    bare, work = seed(tmp_path)
    a, b, c, d = (clone(bare, tmp_path / n) for n in ("a", "b", "c", "d"))
    install(d, python=sys.executable)  # D has the client hooks
    liza(a).do(Note, message="before the forgery")
    engine.sync(Store.discover(a), remote_of(Store.discover(a), "origin"))
    for m in (b, c, d):
        engine.sync(Store.discover(m), remote_of(Store.discover(m), "origin"))
    forged, junk = poison(bare, b)
    adopt_blindly(d)  # D took the forgery (and the rest) before this fix...
    liza(d).do(Note, message="D's own, after adopting the forgery")  # ...and worked on top
    r = cli(c, "sync")
    assert r.returncode == 4 and forged[:12] in r.stderr

    # A repairs origin.
    r = cli(a, "repair", "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["failure"]["commit"] == forged and rep["failure"]["op"] == "note"
    assert rep["before"] != rep["after"] == tip(bare)
    dropped = {d_["original"]: d_["reason"] for d_ in rep["dropped"]}
    assert list(dropped) == [junk] and "bad record" in dropped[junk]
    assert cli(a, "verify", "--remote", "origin").returncode == 0
    # Everyone converges, nothing legal is lost, nothing is applied twice.
    for m in (c, d, b, a, d, c):
        r = cli(m, "sync")
        assert r.returncode == 0, (m, r.stderr)
    want = sorted(["before the forgery", "nothing to see", "legal after the forgery 1",
                   "legal after the forgery 2", "legal after the junk",
                   "D's own, after adopting the forgery"])
    for m in (a, b, c, d):
        assert tip(m) == tip(bare), m
        assert notes(m) == want, m
        assert cli(m, "verify").returncode == 0
    assert liza(a).board().task("task-1").status.value == "UNCLAIMED"  # the forged approval is gone
    # A second repair finds nothing to do and says so.
    r = cli(a, "repair")
    assert r.returncode == 1 and "nothing to repair" in r.stderr, r.stderr
    assert tip(bare) == tip(a)


def test_repair_drops_what_only_the_forgery_made_legal(tmp_path: Path) -> None:
    """A merge recorded on the forged approval is illegal once the approval is gone: dropped,
    with the core's reason."""
    bare, _work = seed(tmp_path)
    a, b = clone(bare, tmp_path / "a"), clone(bare, tmp_path / "b")
    forge(b, "task-2")
    from gitliza.core.ops import Merge
    head = git(b, "rev-parse", "HEAD")
    merge = liza(b).do(Merge, task="task-2", result="merged", merge_commit=head).commit
    push_forgery(b, merge)
    r = cli(a, "repair", "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert [(x["op"], x["original"]) for x in rep["dropped"]] == [("merge", merge)]
    assert rep["dropped"][0]["reason"]
    assert cli(b, "sync").returncode == 0  # B converges: its merge is dropped there too
    assert tip(b) == tip(bare) and liza(b).board().task("task-2").status.value == "UNCLAIMED"


def test_guarded_remote_is_repaired_on_the_server(tmp_path: Path) -> None:
    """With the server hook, no push can rewrite the board, repair's included (exit 3): the
    forgery came in on the server's side, and is repaired there with `repair --here`."""
    bare, _work = seed(tmp_path)
    a, b = clone(bare, tmp_path / "a"), clone(bare, tmp_path / "b")
    install(bare, server=True, python=sys.executable)
    forged = forge(b, "task-3")
    r = cli(b, "push")  # through the hook: refused
    assert r.returncode == 3, r.stderr
    # Written on the server by hand (an administrator, a restored backup...): no hook runs.
    git(b, "push", "-q", "--no-verify", str(bare), f"{forged}:refs/heads/smuggle")
    pygit2.Repository(str(bare)).references.create(STATE_REF, pygit2.Oid(hex=forged), force=True)
    assert cli(a, "sync").returncode == 4
    r = cli(a, "repair")
    assert r.returncode == 3 and "refused" in r.stderr, r.stderr
    assert tip(bare) == forged
    r = cli(bare, "repair", "--here")
    assert r.returncode == 0, r.stderr
    assert "moved" in r.stdout and tip(bare) != forged
    for m in (a, b):
        assert cli(m, "sync").returncode == 0
        assert tip(m) == tip(bare)
    r = cli(bare, "repair", "--here")
    assert r.returncode == 1 and "nothing to repair" in r.stderr
