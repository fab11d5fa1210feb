"""`git liza import` / `export` on real repositories: the import commit is a genesis verify accepts,
normal ops follow it, bad input leaves the ref alone, --force keeps the old chain in the attic."""
from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from gitliza.services.api import Liza
from gitliza.cli.commands import Env
from gitliza.cli.commands.interop import export_board, import_board
from gitliza.core.ops import Note
from gitliza.errors import InconsistentState, ValidationError
from gitliza.git.store import Store
from gitliza.interop import genesis, seed
from gitliza.services.verify.engine import verify
from tests.conftest import git
from tests.governance.conftest import with_spec
from tests.interop.test_seed import CORPUS, fixed_example
from tests.cli.test_board import liza, tip

LOG = ("- timestamp: 2025-01-17T14:00:00Z\n  agent: planner-1\n  action: goal_created\n"
       "  detail: Implement retry logic\n\n- timestamp: 2025-01-17T14:06:00Z\n  agent: coder-1\n"
       "  action: claimed\n  task: task-1\n  detail: Add retry decorator\n")


@pytest.fixture
def example(tmp_path: Path) -> Path:
    p = tmp_path / "state.yaml"
    p.write_text(fixed_example())
    (tmp_path / "log.yaml").write_text(LOG)
    return p


def test_import_is_a_genesis_verify_accepts_and_ops_follow(repo: Path, example: Path) -> None:
    r = liza(repo, "import", str(example), "--log", str(example.parent / "log.yaml"), agent=None)
    assert r.returncode == 0, r.stderr
    assert "(10 tasks, 2 log entries)" in r.stdout
    msg = git(repo, "log", "-1", "--format=%B", "refs/liza/state")
    assert "Liza-Op: import" in msg and '"digest":"sha256:' in msg
    assert genesis.sha256(example.read_bytes()) in msg  # the source file's digest
    store = Store.discover(repo)
    assert verify(store, progress=False).ops == {"import": 1}
    # Normal ops after the import: a note by the human, a claim by an imported coder.
    lz = Liza.open(repo, sync=False)
    lz.do(Note, message="imported from the old board", for_task="task-2")
    r = liza(repo, "register", "coder-3", "--role", "coder", agent=None)
    assert r.returncode == 0, r.stderr
    report = verify(store, progress=False)
    assert report.commits == 3 and report.ops["import"] == 1
    # The board is the document's.
    board = lz.board()
    assert board.task("task-8").reviewing_by == "code-reviewer-1"
    # export --log: the imported entries, then one per state commit.
    out = repo.parent / "exported"
    assert export_board(Env(path=repo), None, out, True) == 0
    entries = seed.read_log((out / "log.yaml").read_text())
    assert [e["action"] for e in entries] == ["goal_created", "claimed", "import", "human_note",
                                              "agent_registered"]
    again = seed.read_state((out / "state.yaml").read_text()).board()
    board = lz.board()
    for coll in ("tasks", "archive", "agents", "human_notes", "anomalies", "discovered"):
        assert [again.get(coll, k) for k in again.keys(coll)] == \
            [board.get(coll, k) for k in board.keys(coll)]
    assert again.goal == board.goal and again.sprint == board.sprint


def test_round_trip_through_git_gives_the_same_board_digest(repo: Path, example: Path,
                                                            tmp_path: Path) -> None:
    assert import_board(Env(path=repo), example, None, False) == 0
    first = Store.discover(repo).tip()
    out = tmp_path / "out"
    export_board(Env(path=repo), None, out, False)
    assert import_board(Env(path=repo), out / "state.yaml", None, True) == 0
    store = Store.discover(repo)
    a = store.repo[first].message
    b = store.repo[store.tip()].message
    digest = [line for line in a.splitlines() if line.startswith("Liza-Args")][0]
    assert digest.split('"digest":"')[1][:71] == b.split('"digest":"')[1][:71]
    assert store.repo[first].tree_id == store.repo[store.tip()].tree_id


def test_existing_board_needs_force_and_force_keeps_the_old_chain(repo: Path,
                                                                  example: Path) -> None:
    assert liza(repo, "init", "old goal", agent=None).returncode == 0
    old = tip(repo)
    r = liza(repo, "import", str(example), agent=None)
    assert r.returncode == 1 and "already holds a board" in r.stderr
    assert tip(repo) == old
    r = liza(repo, "import", str(example), "--force", agent=None)
    assert r.returncode == 0, r.stderr
    assert tip(repo) != old
    assert git(repo, "rev-parse", f"refs/liza-attic/state/{old}") == old
    assert verify(Store.discover(repo), progress=False).ops == {"import": 1}


@pytest.mark.parametrize("name,text,message", CORPUS[::3], ids=[c[0] for c in CORPUS[::3]])
def test_bad_input_changes_no_ref(repo: Path, tmp_path: Path, name: str, text: str,
                                  message: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    refs = git(repo, "for-each-ref")
    with pytest.raises(ValidationError, match=None) as e:
        import_board(Env(path=repo), bad, None, True)
    assert e.value.exit_code == 1 and message in str(e.value)
    assert git(repo, "for-each-ref") == refs and tip(repo) == ""


def test_bad_input_through_the_cli_exits_1_with_one_line(repo: Path, tmp_path: Path) -> None:
    assert liza(repo, "init", "old goal", agent=None).returncode == 0
    old = tip(repo)
    bad = tmp_path / "bad.yaml"
    bad.write_text(CORPUS[0][1])
    r = liza(repo, "import", str(bad), "--force", agent=None)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "bad.yaml:" in r.stderr
    assert tip(repo) == old
    bad.write_bytes(b"\xff\xfe")
    r = liza(repo, "import", str(bad), agent=None)
    assert r.returncode == 1 and "not UTF-8" in r.stderr


def _forge(store: Store, tree: pygit2.Oid, message: str, parents: list[pygit2.Oid]) -> None:
    sig = pygit2.Signature("human", "human@liza.invalid", 0, 0)
    c = store.repo.create_commit(None, sig, sig, message, tree, parents)
    store.repo.lookup_reference(store.ref).set_target(c)


def test_verify_refuses_a_tampered_import_and_an_import_mid_chain(repo: Path,
                                                                  example: Path) -> None:
    import_board(Env(path=repo), example, None, False)
    store = Store.discover(repo)
    root = store.repo[store.tip()]
    # Change one task's blob under the same message: the digest no longer matches.
    board = store.board()[0]
    t = board.task("task-2")
    from dataclasses import replace
    from gitliza.git.objects import trees
    tree = trees.build(store.repo, root.tree, {("tasks", "task-2"): replace(t, priority=5)},
                       write=True).tree
    commit = store.repo.create_commit(None, root.author, root.committer, root.message, tree, [])
    store.repo.lookup_reference(store.ref).set_target(commit)
    with pytest.raises(InconsistentState, match="replay refused: .*digest"):
        verify(store, progress=False)
    # An import recorded after the genesis is refused by the core.
    store.repo.lookup_reference(store.ref).set_target(root.id)
    _forge(store, root.tree_id, root.message, [root.id])
    with pytest.raises(InconsistentState, match="only legal as the first commit"):
        verify(store, progress=False)


def test_genesis_refuses_entities_that_are_not_the_digest(repo: Path, example: Path) -> None:
    s = seed.read_state(example.read_text())
    op = genesis.make_op(s.entities, "human", "2025-01-18T00:00:00Z", None, None, 0)
    other = dict(s.entities)
    other.pop(("handoff", "task-5"))
    with pytest.raises(ValidationError, match="digest"):
        genesis.write_import(Store.discover(repo), other, op, force=False)
    assert tip(repo) == ""


def test_a_board_exported_from_a_long_run_imports_elsewhere_identically(repo: Path,
                                                                        tmp_path: Path) -> None:
    from gitliza.core import clock
    from gitliza.core.ops import (Add, Claim, ClaimReview, Init, Merge, Register, Submit,
                                  Verdict)
    minute = [0]

    def now() -> str:
        minute[0] += 1
        return clock.plus("2025-01-17T14:00:00Z", minute[0] * 60)

    cache: dict[str, Liza] = {}

    def as_(agent: str) -> Liza:
        return cache.setdefault(agent, Liza.open(repo, agent, now=now, sync=False))

    with_spec(repo)
    as_("human").do(Init, goal="A long run")
    for agent, role in [("planner-1", "planner"), ("coder-1", "coder"), ("reviewer-1",
                                                                         "code_reviewer")]:
        as_("human").do(Register, agent=agent, role=role)
    for i in range(1, 9):
        t = f"task-{i}"
        as_("planner-1").do(Add, task=t, description=f"step {i}", spec_ref="specs/a.md",
                            done_when="done", scope="api", ready=True,
                            depends_on=(f"task-{i - 1}",) if i > 1 and i % 3 else ())
        for decision in ("reject", "approve"):
            as_("coder-1").do(Claim, task=t, worktree=f".worktrees/{t}", base_commit="a" * 40)
            as_("coder-1").do(Submit, task=t, commit="b" * 40)
            as_("reviewer-1").do(ClaimReview, task=t)
            as_("reviewer-1").do(Verdict, task=t, verdict=decision, commit="b" * 40,
                                 reason="needs tests" if decision == "reject" else None)
        if i < 8:
            as_("reviewer-1").do(Merge, task=t, result="merged", merge_commit="c" * 40)
        as_("human").do(Note, message=f"checked {t}", for_task=t)
    for rev in ("refs/liza/state~5", "refs/liza/state"):
        out = tmp_path / rev.replace("/", "_")
        assert export_board(Env(path=repo), rev, out, True) == 0
        other = tmp_path / f"other{len(rev)}"
        git(tmp_path, "init", "-q", "-b", "main", str(other))
        assert import_board(Env(path=other), out / "state.yaml", out / "log.yaml", False) == 0
        a = Store.discover(repo).board(rev)[0]
        b = Liza.open(other, sync=False).board()
        for coll in ("tasks", "archive", "agents", "human_notes", "anomalies"):
            assert b.keys(coll) == a.keys(coll) and \
                [b.get(coll, k) for k in b.keys(coll)] == [a.get(coll, k) for k in a.keys(coll)]
        for single in ("goal", "config", "sprint", "circuit_breaker"):
            assert b.get(single) == a.get(single)
        assert verify(Store.discover(other), progress=False).ops == {"import": 1}
        entries = seed.read_log((out / "log.yaml").read_text())
        assert len(entries) == len(list(Store.discover(repo).history(rev)))


@pytest.mark.slow
def test_the_server_hook_accepts_an_imported_board_and_refuses_a_forged_one(
        tmp_path: Path, bare: Path, example: Path) -> None:
    import sys

    from gitliza.hooks.install import install
    from tests.hooks.test_enforce import push, refused, remote_ref
    install(bare, server=True, python=sys.executable)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(bare), str(clone))
    (clone / "README.md").write_text("project\n")
    git(clone, "add", "README.md")
    git(clone, "commit", "-q", "-m", "initial")
    assert import_board(Env(path=clone), example, None, False) == 0
    r = push(clone, "main", "refs/liza/state:refs/liza/state")
    assert r.returncode == 0, r.stderr
    assert remote_ref(bare, "refs/liza/state") == tip(clone)
    # A forged import (a task edited under the recorded digest) on another remote ref is refused.
    store = Store.discover(clone)
    root = store.repo[store.tip()]
    from dataclasses import replace as _replace

    from gitliza.git.objects import trees
    t = store.board()[0].task("task-2")
    tree = trees.build(store.repo, root.tree, {("tasks", "task-2"): _replace(t, priority=5)},
                       write=True).tree
    forged = store.repo.create_commit(None, root.author, root.committer, root.message, tree, [])
    git(clone, "update-ref", "refs/liza/state", str(forged))
    refused(push(clone, "+refs/liza/state:refs/liza/state"), "refs/liza/state")
    assert remote_ref(bare, "refs/liza/state") == str(root.id)
