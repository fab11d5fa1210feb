"""Disk bounds before any checkout (issue 46, core/treerules.py, git/treecheck.py): a tree whose
checkout would write past `sandbox_checkout_max_mb` / `sandbox_checkout_max_files` is refused
before anything is written (the coder's submit, the merge and its scratch checkout, the main
worktree that follows the branch, a claim's worktree, a reviewer's checkout), in one line, and
recorded as an anomaly naming the task. Small bounds stand for the defaults here: a real 2 MiB
blob against 1 MB, 150 empty files against 100."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pygit2
import pytest

from gitliza.core.ops import ClaimReview, Submit, Verdict
from gitliza.core.states import TaskState
from gitliza.git import treecheck
from gitliza.services.api import Liza
from tests.cli.test_board import liza, ok
from tests.conftest import git
from tests.team.procs import add_task, make_board


def _board(repo: Path, **bounds: str) -> None:
    # A lease of an hour: writing a gigabyte between the claim and the submit outlasted the
    # 5 s test lease under load ("lease on t1 expired"); no test here is about leases.
    make_board(repo, lease_duration="3600", **bounds)
    for agent, role in (("coder-1", "coder"), ("rev-1", "code_reviewer")):
        ok(liza(repo, "register", agent, "--role", role, agent=None))
    add_task(repo, "t1")


def _anomaly_names(repo: Path, task: str) -> list[str]:
    board = Liza.open(repo).board()
    return [str(a.detail().get("question")) for a in board.values("anomalies")
            if a.task == task and a.detail().get("protocol_section") == "checkout refused"]


def _commit_big(wt: Path, *, blob_mb: int = 0, files: int = 0) -> str:
    if blob_mb:
        (wt / "big.bin").write_bytes(os.urandom(blob_mb << 20))
    if files:
        (wt / "many").mkdir()
        for i in range(files):
            (wt / "many" / f"f{i}").touch()
    git(wt, "add", "-A")
    git(wt, "commit", "-q", "-m", "big")
    return git(wt, "rev-parse", "HEAD")


@pytest.mark.parametrize("what", ["bytes", "files"])
def test_submit_refuses_a_tree_past_the_bounds(repo: Path, what: str) -> None:
    _board(repo, sandbox_checkout_max_mb="1", sandbox_checkout_max_files="100")
    ok(liza(repo, "claim", "t1", agent="coder-1"))
    wt = repo / ".worktrees" / "t1"
    head = _commit_big(wt, blob_mb=2) if what == "bytes" else _commit_big(wt, files=150)
    r = liza(wt, "submit", "t1", agent="coder-1")
    assert r.returncode == 1, r.stderr
    key = "sandbox_checkout_max_mb" if what == "bytes" else "sandbox_checkout_max_files"
    assert key in r.stderr and head[:12] in r.stderr, r.stderr
    assert Liza.open(repo).board().task("t1").status == TaskState.CLAIMED  # type: ignore[union-attr]
    assert any(key in q for q in _anomaly_names(repo, "t1"))


def test_a_merge_past_the_bounds_never_checks_it_out(repo: Path, tmp_path: Path) -> None:
    """The approval forged past the commands: the merge is what stands in the way. Its scratch
    checkout is never made (TMPDIR stays empty), the main worktree (on the integration branch)
    never gets the file, the branch does not move, INTEGRATION_FAILED and an anomaly say why."""
    _board(repo, sandbox_checkout_max_mb="1")
    git(repo, "checkout", "-q", "integration")
    tip = git(repo, "rev-parse", "integration")
    ok(liza(repo, "claim", "t1", agent="coder-1"))
    head = _commit_big(repo / ".worktrees" / "t1", blob_mb=2)
    _approved_merge_refused(repo, tmp_path, head)
    assert git(repo, "rev-parse", "integration") == tip
    assert not (repo / "big.bin").exists()
    t = json.loads(ok(liza(repo, "show", "t1", "--json", agent=None)))
    assert t["status"] == "INTEGRATION_FAILED"
    assert any("sandbox_checkout_max_mb" in q for q in _anomaly_names(repo, "t1"))


def _approved_merge_refused(repo: Path, tmp_path: Path, head: str) -> None:
    """`head` submitted and approved with the core's ops written directly (a forger: the
    commands would refuse it), then `git liza merge`: refused on the byte bound, and its
    scratch checkout never made (its TMPDIR stays empty)."""
    Liza.open(repo, "coder-1").do(Submit, task="t1", commit=head)
    Liza.open(repo, "rev-1").do(ClaimReview, task="t1")
    Liza.open(repo, "rev-1").do(Verdict, task="t1", verdict="approve", commit=head, counted=True)
    scratch = tmp_path / "scratch-tmp"
    scratch.mkdir()
    r = liza(repo, "merge", "t1", agent="rev-1", env={"TMPDIR": str(scratch)})
    assert r.returncode == 3 and "sandbox_checkout_max_mb" in r.stderr, r.stderr
    assert list(scratch.iterdir()) == []


def test_a_claim_past_the_bounds_makes_no_worktree(repo: Path) -> None:
    (repo / "many").mkdir()
    for i in range(150):
        (repo / "many" / f"f{i}").touch()
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "many files")
    _board(repo, sandbox_checkout_max_files="100")
    r = liza(repo, "claim", "t1", agent="coder-1")
    assert r.returncode == 1 and "sandbox_checkout_max_files" in r.stderr, r.stderr
    assert not (repo / ".worktrees" / "t1").exists()
    assert Liza.open(repo).board().task("t1").status == TaskState.UNCLAIMED  # type: ignore[union-attr]
    assert _anomaly_names(repo, "t1")


def test_the_size_is_counted_without_reading_blobs_and_stops_at_the_bound(repo: Path) -> None:
    """A subtree that recurs counts at each place; submodules count nothing; the walk stops
    once past a bound (the counts it returns are already past it)."""
    r = pygit2.Repository(str(repo))
    blob = r.create_blob(b"x" * 1000)
    tb = r.TreeBuilder()
    tb.insert("a", blob, pygit2.GIT_FILEMODE_BLOB)
    tb.insert("b", blob, pygit2.GIT_FILEMODE_BLOB_EXECUTABLE)
    sub = tb.write()
    top = r.TreeBuilder()
    for name in ("d1", "d2", "d3"):
        top.insert(name, sub, pygit2.GIT_FILEMODE_TREE)
    top.insert("mod", pygit2.Oid(hex="1" * 40), pygit2.GIT_FILEMODE_COMMIT)  # not in the odb
    tree = top.write()
    assert treecheck.tree_size(r, tree, (10**9, 10**9)) == (6000, 6)
    size, files = treecheck.tree_size(r, tree, (10**9, 3))
    assert files == 4 and size == 4000  # stopped at d2 (counted whole from d1's memo)
    size, files = treecheck.tree_size(r, tree, (1500, 10**9))
    assert size == 2000 and files == 2  # stopped at d1's second file


def _loose_zero_blob(repo: Path, size: int) -> str:
    """A real blob of `size` zero bytes written as a loose object the way git writes one (what a
    committed sparse file of zeros becomes: a few MiB on disk), without a file of that size."""
    import hashlib
    import zlib
    header = f"blob {size}\0".encode()
    sha, z = hashlib.sha1(header), zlib.compressobj(1)
    chunk = bytes(1 << 20)
    parts = [z.compress(header)]
    for _ in range(size >> 20):
        sha.update(chunk)
        parts.append(z.compress(chunk))
    parts.append(z.flush())
    oid = sha.hexdigest()
    d = repo / ".git" / "objects" / oid[:2]
    d.mkdir(parents=True, exist_ok=True)
    (d / oid[2:]).write_bytes(b"".join(parts))
    return oid


@pytest.mark.slow
def test_a_gigabyte_of_zeros_and_20000_files_never_reach_the_disk(repo: Path,
                                                                  tmp_path: Path) -> None:
    """The issue's attack: a 1 GiB file of zeros and 20,000 empty files, a few MiB of objects,
    approved (forged past the commands). Under `sandbox_checkout_max_mb 512` the merge is refused
    before its scratch checkout and before the main worktree (on the integration branch) follows:
    nothing is written, and the count came from the blob's header alone."""
    _board(repo, sandbox_checkout_max_mb="512")
    git(repo, "checkout", "-q", "integration")
    ok(liza(repo, "claim", "t1", agent="coder-1"))
    big = _loose_zero_blob(repo, 1 << 30)
    r = pygit2.Repository(str(repo))
    empty = r.create_blob(b"")
    many = r.TreeBuilder()
    for i in range(20_000):
        many.insert(f"f{i:05}", empty, pygit2.GIT_FILEMODE_BLOB)
    base = r.revparse_single("refs/heads/liza/t1").peel(pygit2.Commit)
    top = r.TreeBuilder(base.tree)
    top.insert("zeros.bin", pygit2.Oid(hex=big), pygit2.GIT_FILEMODE_BLOB)
    top.insert("many", many.write(), pygit2.GIT_FILEMODE_TREE)
    sig = pygit2.Signature("coder-1", "c@example.invalid")
    head = str(r.create_commit("refs/heads/liza/t1", sig, sig, "zeros", top.write(), [base.id]))
    size, files = treecheck.tree_size(r, base.tree_id, (10**12, 10**9))
    assert treecheck.tree_size(r, r[head].peel(pygit2.Commit).tree_id, (10**12, 10**9)) == \
        (size + (1 << 30), files + 20_001)
    _approved_merge_refused(repo, tmp_path, head)
    assert not (repo / "zeros.bin").exists() and not (repo / "many").exists()
