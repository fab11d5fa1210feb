"""`verify`: replay of refs/liza/state on real repositories, a long legitimate history and tampered
copies of it (commits rewritten with pygit2, the way a forger would)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Callable, Iterator

import pygit2
import pytest

from gitliza.core.encoding import layout
from gitliza.git.store import Store
from gitliza.services.verify.engine import VerifyFailure, replay, verify

from benchmarks.bench_verify import history

STATE = "refs/liza/state"
LONG = 3000


@pytest.fixture(scope="module")
def long_history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    yield history(tmp_path_factory.mktemp("long") / "repo", LONG)


@pytest.fixture
def small(tmp_path: Path) -> Store:
    return history(tmp_path / "repo", 15)


def commits(store: Store) -> list[pygit2.Commit]:
    return list(reversed(list(store.history())))


def rechain(store: Store, at: int, forge: Callable[[pygit2.Commit], pygit2.Oid]) -> str:
    """Replace commit number `at` (0: root) by `forge(commit)` and re-parent every later commit on
    top (same trees and messages), as a forger rewriting history would; returns the forged oid."""
    repo = store.repo
    chain = commits(store)
    new = forge(chain[at])
    forged = str(new)
    for c in chain[at + 1:]:
        new = repo.create_commit(None, c.author, c.committer, c.message, c.tree_id, [new])
    repo.references.create(f"{STATE}-forged", new, force=True)
    return forged


def copy_commit(store: Store, c: pygit2.Commit, *, message: str | None = None,
                tree: pygit2.Oid | None = None, parents: list[pygit2.Oid] | None = None,
                author: pygit2.Signature | None = None) -> pygit2.Oid:
    return store.repo.create_commit(None, author or c.author, c.committer,
                                    c.message if message is None else message,
                                    tree or c.tree_id, c.parent_ids if parents is None else parents)


def edit_blob(store: Store, tree: pygit2.Tree, path: str, data: bytes) -> pygit2.Oid:
    repo = store.repo
    head, _, rest = path.partition("/")
    tb = repo.TreeBuilder(tree)
    if not rest:
        tb.insert(head, repo.create_blob(data), pygit2.GIT_FILEMODE_BLOB)
    else:
        sub = tree[head]
        assert isinstance(sub, pygit2.Tree)
        tb.insert(head, edit_blob(store, sub, rest, data), pygit2.GIT_FILEMODE_TREE)
    return tb.write()


def failure(store: Store, at: str = f"{STATE}-forged") -> VerifyFailure:
    with pytest.raises(VerifyFailure) as info:
        verify(store, at=at, progress=False)
    return info.value


# -- the long history -----------------------------------------------------------------------------
@pytest.mark.slow
def test_long_history_verifies(long_history: Store) -> None:
    report = verify(long_history, progress=False)
    assert report.commits >= LONG
    assert report.ops["init"] == 1 and report.ops["merge"] == report.ops["add"] >= 499
    assert report.tip == str(long_history.tip())


@pytest.mark.slow
def test_tampered_long_history_names_the_bad_commit(long_history: Store) -> None:
    c = commits(long_history)[1500]
    task = next(ln.split(": ")[1] for ln in c.message.splitlines() if ln.startswith("Liza-Task"))
    path = next(p for coll in ("tasks", "archive") if (p := layout.path_of(coll, task)) in c.tree)
    old = c.tree[path]
    assert isinstance(old, pygit2.Blob)
    blob = old.data.replace(b'description = "d"', b'description = "evil"')
    forged = rechain(long_history, 1500,
                     lambda c: copy_commit(long_history, c,
                                           tree=edit_blob(long_history, c.tree, path, blob)))
    err = failure(long_history)
    assert err.commit == forged and err.exit_code == 4
    assert f"{path} is not what the op writes" in err.reason
    # The CLI says the same as data, exit 4.
    r = subprocess.run([sys.executable, "-m", "gitliza", "verify", "--json", "--at",
                        f"{STATE}-forged"], cwd=long_history.repo.workdir, capture_output=True,
                       text=True)
    assert r.returncode == 4 and json.loads(r.stdout)["commit"] == forged


# -- what replay refuses --------------------------------------------------------------------------
def test_cli_verify_json_and_since(small: Store) -> None:
    r = subprocess.run([sys.executable, "-m", "gitliza", "verify", "--json"],
                       cwd=small.repo.workdir, capture_output=True, text=True)
    data = json.loads(r.stdout)
    assert r.returncode == 0 and data["ok"] and data["commits"] == 15 and data["ops"]["init"] == 1
    report = verify(small, since=f"{STATE}~4", progress=False)
    assert report.commits == 4 and report.base == str(small.repo.revparse_single(f"{STATE}~4").id)


def test_forged_trailer_is_named(small: Store) -> None:
    forged = rechain(small, 5, lambda c: copy_commit(
        small, c, message=c.message.replace("Liza-From: CLAIMED", "Liza-From: UNCLAIMED")))
    err = failure(small)
    assert err.commit == forged and err.op == "submit" and "forged trailers" in err.reason
    # The CLI: exit 4 and one line naming the commit, the op and the reason.
    r = subprocess.run([sys.executable, "-m", "gitliza", "verify", "--at", f"{STATE}-forged"],
                       cwd=small.repo.workdir, capture_output=True, text=True)
    assert r.returncode == 4 and len(r.stderr.splitlines()) == 1
    assert f"state commit {forged[:12]} (submit): forged trailers" in r.stderr


def test_reworded_subject_and_wrong_author_are_refused(small: Store) -> None:
    rechain(small, 5, lambda c: copy_commit(
        small, c, message="approve all\n" + c.message.split("\n", 1)[1]))
    assert "commit message differs" in failure(small).reason
    rechain(small, 5, lambda c: copy_commit(
        small, c, author=pygit2.Signature("rev-1", "rev-1@liza.invalid", c.author.time, 0)))
    assert "is not the op's actor" in failure(small).reason


def test_unknown_op_and_garbage_messages_are_refused(small: Store) -> None:
    rechain(small, 3, lambda c: copy_commit(
        small, c, message=c.message.replace("Liza-Op: add", "Liza-Op: teleport")))
    err = failure(small)
    assert err.op == "teleport" and "unknown op 'teleport'" in err.reason
    rechain(small, 4, lambda c: copy_commit(small, c, message="just a commit\n"))
    assert "no Liza-* trailers" in failure(small).reason


def test_merge_commit_in_the_state_history_is_refused(small: Store) -> None:
    chain = commits(small)
    forged = rechain(small, 6, lambda c: copy_commit(small, c, parents=[chain[5].id, chain[2].id]))
    err = failure(small)
    assert err.commit == forged and "2 parents" in err.reason


def test_root_must_be_init(small: Store) -> None:
    chain = commits(small)
    rechain(small, 1, lambda c: copy_commit(small, c, parents=[]))
    assert "root state commit must be `init`" in failure(small).reason
    assert chain  # the original history is untouched
    assert verify(small, progress=False).commits == 15


def test_op_by_the_wrong_role_is_refused(small: Store) -> None:
    """The approval of task-0 re-attributed to its coder: apply refuses it (role, self-review)."""
    forged = rechain(small, 7, lambda c: copy_commit(
        small, c, message=c.message.replace("Liza-Actor: rev-1", "Liza-Actor: coder-1")))
    err = failure(small)
    assert err.commit == forged and err.op == "verdict"
    assert "replay refused" in err.reason and "coder-1 (role coder)" in err.reason


def test_range_replay_checks_fast_forward(small: Store) -> None:
    chain = commits(small)
    report = replay(small, chain[-1].id, chain[10].id)
    assert report.commits == 4
    with pytest.raises(VerifyFailure, match="not a fast-forward"):
        replay(small, chain[10].id, chain[12].id)
