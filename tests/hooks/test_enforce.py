"""Enforcement through real hooks: a bare repository with the server pre-receive hook, clones pushing
with plain `git push`, client hooks run by real `git commit`, `git merge`, `git update-ref`.

Forgeries are made the way an attacker would: commits written with pygit2 (plumbing) or through
the store's write path with the core's checks bypassed. Each must be refused with its reason and
leave the remote unchanged; the legitimate lifecycle must be accepted.
"""
from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from gitliza.services.api import Liza
from gitliza.core.encoding import layout
from gitliza.core.ops import Add, Claim, Verdict
from gitliza.core.ops.base import Event, Op, Outcome
from gitliza.core.states import TaskState
from gitliza.git.store import Store
from gitliza.hooks.install import install
from tests.conftest import git

PY = sys.executable
BIN = str(Path(PY).parent)
T0 = "2030-01-01T00:00:00Z"  # far future: leases taken "now" by the CLI stay live during the test


def run(cwd: Path, *args: str, agent: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", **env}
    if agent:
        full["LIZA_AGENT_ID"] = agent
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, env=full, check=False)


def liza(cwd: Path, *args: str, agent: str | None = None) -> str:
    r = run(cwd, "git", "liza", *args, agent=agent)
    assert r.returncode == 0, f"git liza {' '.join(args)}: {r.stderr}"
    return r.stdout


def push(cwd: Path, *refspecs: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run(cwd, "git", "push", "--porcelain", "origin", *refspecs, **env)


def remote_ref(bare: Path, ref: str) -> str | None:
    out = git(bare, "for-each-ref", "--format=%(objectname)", ref)
    return out or None


def refused(r: subprocess.CompletedProcess[str], ref: str) -> str:
    assert r.returncode != 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if f"gitliza: refused {ref}:" in ln]
    assert lines, r.stderr
    return lines[0]


@pytest.fixture
def team(tmp_path: Path, bare: Path) -> tuple[Path, Path]:
    """(bare remote with the server hook, a clone whose board has coders, a reviewer and task t1),
    everything pushed and accepted."""
    install(bare, server=True, python=PY)
    seed = tmp_path / "seed"
    git(tmp_path, "clone", "-q", str(bare), str(seed))
    (seed / "README.md").write_text("project\n")
    (seed / "s").write_text("the spec\n")
    git(seed, "add", "README.md", "s")
    git(seed, "commit", "-q", "-m", "initial")
    liza(seed, "init", "the goal")
    for agent, role in (("coder-1", "coder"), ("coder-2", "coder"), ("rev-1", "code_reviewer")):
        liza(seed, "register", agent, "--role", role)
    liza(seed, "add", "t1", "--desc", "do it", "--spec-ref", "s", "--done-when", "w",
         "--scope", "x", "--ready")
    r = push(seed, "main", "integration", "refs/liza/state:refs/liza/state")
    assert r.returncode == 0, r.stderr
    return bare, seed


def state_push_refused(c: Path, bare: Path, before: str | None) -> str:
    """Push the clone's state ref: the server must refuse it and keep its own."""
    line = refused(push(c, "refs/liza/state:refs/liza/state"), "refs/liza/state")
    assert remote_ref(bare, "refs/liza/state") == before
    return line


def forged_verdict(c: Path, actor: str, source: TaskState, commit: str) -> None:
    """An approval of t1 by `actor`, written with the core's checks bypassed."""
    t = Store.discover(c).board()[0].task("t1")
    assert t is not None
    op = Verdict(actor=actor, time=T0, task="t1", verdict="approve", commit=commit)
    approved = dataclasses.replace(t, status=TaskState.APPROVED, approved_by=actor,
                                   reviewing_by=None, review_lease_expires=None)
    forge(c, op, {("tasks", "t1"): approved},
          Event("verdict", actor, T0, "t1", source, TaskState.APPROVED,
                summary=f"verdict t1 ({source} -> APPROVED) by {actor}"))


def clone(tmp_path: Path, bare: Path, name: str) -> Path:
    path = tmp_path / name
    git(tmp_path, "clone", "-q", str(bare), str(path))
    git(path, "fetch", "-q", "origin", "refs/liza/state:refs/liza/state")
    git(path, "branch", "-q", "integration", "origin/integration")
    return path


def commit_on_integration(c: Path, name: str, text: str, msg: str) -> str:
    """A plain commit on the local integration branch (no review), checked out; its id."""
    git(c, "checkout", "-q", "integration")
    (c / name).write_text(text)
    git(c, "add", name)
    git(c, "commit", "-q", "-m", msg)
    return git(c, "rev-parse", "HEAD")


def forge(path: Path, op: Op, changes: dict[tuple[str, str], object], event: Event) -> str:
    """Write a state commit for `op` with the given changes, bypassing the core's checks, and move
    refs/liza/state onto it (libgit2: no hooks run)."""
    store = Store.discover(path)
    parent = store.resolve(None)
    board = store.board_at(parent)
    outcome = Outcome(changes=changes, event=event, board=board.with_changes(changes))
    oid = store.write_commit(parent, outcome, op)
    store.repo.references.create(store.ref, oid, force=True)
    return str(oid)


def rewrite_tip(path: Path, message: str | None = None,
                edit: tuple[str, bytes] | None = None) -> str:
    """Replace the state tip by a copy with another message and/or one blob edited (pygit2)."""
    repo = pygit2.Repository(str(path / ".git"))
    tip = repo.references["refs/liza/state"].peel(pygit2.Commit)
    tree = tip.tree_id
    if edit is not None:
        tree = _replace_blob(repo, tip.tree, edit[0].split("/"), edit[1])
    oid = repo.create_commit(None, tip.author, tip.committer, message or tip.message, tree,
                             tip.parent_ids)
    repo.references.create("refs/liza/state", oid, force=True)
    return str(oid)


def _replace_blob(repo: pygit2.Repository, tree: pygit2.Tree, parts: list[str], data: bytes) -> pygit2.Oid:
    tb = repo.TreeBuilder(tree)
    if len(parts) == 1:
        tb.insert(parts[0], repo.create_blob(data), pygit2.GIT_FILEMODE_BLOB)
    else:
        sub = tree[parts[0]]
        assert isinstance(sub, pygit2.Tree)
        tb.insert(parts[0], _replace_blob(repo, sub, parts[1:], data), pygit2.GIT_FILEMODE_TREE)
    return tb.write()


# -- the legitimate lifecycle --------------------------------------------------------------------
@pytest.mark.slow
def test_legit_lifecycle_is_accepted_with_client_and_server_hooks(tmp_path: Path, team: tuple[Path, Path]) -> None:
    bare, seed = team
    work = clone(tmp_path, bare, "work")
    install(work, python=PY)
    liza(work, "claim", "t1", agent="coder-1")
    wt = work / ".worktrees" / "t1"
    (wt / "feature.txt").write_text("feature\n")
    git(wt, "add", "feature.txt")
    r = run(wt, "git", "commit", "-q", "-m", "feature", agent="coder-1")  # the claim holder
    assert r.returncode == 0, r.stderr
    liza(work, "submit", "t1", agent="coder-1")
    r = push(work, "liza/t1", "refs/liza/state:refs/liza/state")
    assert r.returncode == 0, r.stderr
    liza(work, "claim-review", "t1", agent="rev-1")
    liza(work, "verdict", "t1", "approve", agent="rev-1")
    liza(work, "merge", "t1", agent="rev-1")
    # One push moves the state (APPROVED -> MERGED) and the integration branch together.
    r = push(work, "integration", "refs/liza/state:refs/liza/state")
    assert r.returncode == 0, r.stderr
    assert remote_ref(bare, "refs/liza/state") == git(work, "rev-parse", "refs/liza/state")
    assert remote_ref(bare, "refs/heads/integration") == git(work, "rev-parse", "integration")
    assert "verified" in liza(work, "verify")


def test_hooks_install_status_uninstall_commands(tmp_path: Path, bare: Path, repo: Path) -> None:
    out = liza(bare, "hooks", "install", "--server")
    assert "pre-receive" in out
    assert PY in (bare / "hooks" / "pre-receive").read_text()  # the venv python is recorded
    out = liza(repo, "hooks", "install")
    assert "advisory" in run(repo, "git", "liza", "hooks", "install").stderr
    status = liza(repo, "hooks", "status", "--json")
    assert '"kind": "gitliza"' in status
    assert "removed" in liza(repo, "hooks", "uninstall")


# -- forged pushes, each refused by the server with its reason ------------------------------------
def test_edited_toml_in_a_state_commit_is_refused(tmp_path: Path, team: tuple[Path, Path]) -> None:
    bare, _seed = team
    before = remote_ref(bare, "refs/liza/state")
    c = clone(tmp_path, bare, "c")
    Liza.open(c, agent="human").do(Add, task="t2", description="honest", spec_ref="s",
                                     done_when="w", scope="x", ready=True)
    path = layout.path_of("tasks", "t2")
    blob = git(c, "cat-file", "blob", f"refs/liza/state:{path}").replace("honest", "forged")
    bad = rewrite_tip(c, edit=(path, (blob + "\n").encode()))
    line = state_push_refused(c, bare, before)
    assert bad[:12] in line and "(add)" in line and f"{path} is not what the op writes" in line


def test_forged_trailer_is_refused(tmp_path: Path, team: tuple[Path, Path]) -> None:
    bare, _seed = team
    before = remote_ref(bare, "refs/liza/state")
    c = clone(tmp_path, bare, "c")
    Liza.open(c, agent="human").do(Add, task="t2", description="d", spec_ref="s",
                                     done_when="w", scope="x", ready=True)
    msg = git(c, "log", "-1", "--format=%B", "refs/liza/state") + "\n"
    rewrite_tip(c, message=msg.replace("Liza-To: UNCLAIMED", "Liza-To: MERGED"))
    line = state_push_refused(c, bare, before)
    assert "forged trailers: trailer Liza-To says 'MERGED'" in line


def test_force_push_over_the_state_ref_is_refused(tmp_path: Path, team: tuple[Path, Path]) -> None:
    bare, _seed = team
    before = remote_ref(bare, "refs/liza/state")
    c = clone(tmp_path, bare, "c")
    git(c, "update-ref", "refs/liza/state", "refs/liza/state~1")  # rewrite history locally
    Liza.open(c, agent="human").do(Add, task="t9", description="d")
    line = refused(push(c, "+refs/liza/state:refs/liza/state"), "refs/liza/state")
    assert "not a fast-forward" in line
    assert remote_ref(bare, "refs/liza/state") == before


def test_deleting_the_state_ref_is_refused(tmp_path: Path, team: tuple[Path, Path]) -> None:
    bare, _seed = team
    before = remote_ref(bare, "refs/liza/state")
    c = clone(tmp_path, bare, "c")
    line = refused(push(c, ":refs/liza/state"), "refs/liza/state")
    assert "deleting refs/liza/state is never allowed" in line
    assert remote_ref(bare, "refs/liza/state") == before


def _to_review(c: Path) -> str:
    """t1 claimed by coder-1 and submitted, through the API (no worktree needed for the board)."""
    from gitliza.core.ops import ClaimReview, Submit
    base = git(c, "rev-parse", "main")
    Liza.open(c, agent="coder-1", now=lambda: T0).do(Claim, task="t1", worktree=".worktrees/t1",
                                                      base_commit=base)
    Liza.open(c, agent="coder-1", now=lambda: T0).do(Submit, task="t1", commit=base)
    Liza.open(c, agent="rev-1", now=lambda: T0).do(ClaimReview, task="t1")
    return base


def test_a_coders_approval_is_refused(tmp_path: Path, team: tuple[Path, Path]) -> None:
    bare, _seed = team
    before = remote_ref(bare, "refs/liza/state")
    c = clone(tmp_path, bare, "c")
    forged_verdict(c, "coder-2", TaskState.READY_FOR_REVIEW, _to_review(c))
    line = state_push_refused(c, bare, before)
    assert "(verdict): replay refused" in line and "not allowed for coder-2 (role coder)" in line


def test_self_approval_is_refused(tmp_path: Path, team: tuple[Path, Path]) -> None:
    bare, _seed = team
    before = remote_ref(bare, "refs/liza/state")
    c = clone(tmp_path, bare, "c")
    base = git(c, "rev-parse", "main")
    Liza.open(c, agent="coder-1", now=lambda: T0).do(Claim, task="t1", worktree=".worktrees/t1",
                                                      base_commit=base)
    forged_verdict(c, "coder-1", TaskState.CLAIMED, base)
    line = state_push_refused(c, bare, before)
    assert "replay refused" in line and "self-approval" in line


def test_merge_recorded_without_approval_is_refused(tmp_path: Path, team: tuple[Path, Path]) -> None:
    from gitliza.core.ops import Merge
    bare, _seed = team
    before = remote_ref(bare, "refs/liza/state")
    c = clone(tmp_path, bare, "c")
    review = _to_review(c)
    t = Store.discover(c).board()[0].task("t1")
    assert t is not None
    op = Merge(actor="rev-1", time=T0, task="t1", result="merged", merge_commit=review)
    merged = dataclasses.replace(t, status=TaskState.MERGED, merge_commit=review, worktree=None)
    forge(c, op, {("tasks", "t1"): None, ("archive", "t1"): merged},
          Event("merge", "rev-1", T0, "t1", TaskState.READY_FOR_REVIEW, TaskState.MERGED,
                summary="merge t1 (READY_FOR_REVIEW -> MERGED) by rev-1"))
    line = state_push_refused(c, bare, before)
    assert "(merge): replay refused" in line and "READY_FOR_REVIEW" in line


def test_unapproved_work_pushed_to_the_integration_branch_is_refused(
        tmp_path: Path, team: tuple[Path, Path]) -> None:
    bare, _seed = team
    before = remote_ref(bare, "refs/heads/integration")
    c = clone(tmp_path, bare, "c")
    commit_on_integration(c, "sneaky.txt", "unreviewed\n", "sneak in")
    line = refused(push(c, "integration"), "refs/heads/integration")
    assert "1 commit(s) never approved" in line and "sneak in" in line
    # A task under review (not approved yet) cannot be merged by hand either.
    git(c, "reset", "-q", "--hard", "origin/integration")
    _to_review(c)
    git(c, "checkout", "-q", "-b", "liza/t1")
    (c / "t1.txt").write_text("t1\n")
    git(c, "add", "t1.txt")
    git(c, "commit", "-q", "-m", "t1 work")
    git(c, "checkout", "-q", "integration")
    git(c, "merge", "-q", "--no-ff", "-m", "merge t1", "liza/t1")
    r = push(c, "integration", "refs/liza/state:refs/liza/state")
    assert "never approved" in refused(r, "refs/heads/integration")
    assert remote_ref(bare, "refs/heads/integration") == before


# -- client hooks ---------------------------------------------------------------------------------
def test_client_commit_rule_in_a_task_worktree(tmp_path: Path, team: tuple[Path, Path]) -> None:
    """pre-commit's rule, checked by reference-transaction (git exits 128: "ref updates aborted by
    hook"), which also covers what pre-commit never saw: `--no-verify`, a reset of the branch."""
    bare, _seed = team
    c = clone(tmp_path, bare, "c")
    install(c, python=PY)
    liza(c, "claim", "t1", agent="coder-1")
    wt = c / ".worktrees" / "t1"
    (wt / "a.txt").write_text("a\n")
    git(wt, "add", "a.txt")
    base = git(wt, "rev-parse", "HEAD")
    r = run(wt, "git", "commit", "-q", "-m", "a", agent="coder-2")
    assert r.returncode != 0 and "t1 is claimed by coder-1, not coder-2" in r.stderr
    r = run(wt, "git", "commit", "-q", "-m", "a", agent="coder-1", LIZA_NOW="2999-01-01T00:00:00Z")
    assert r.returncode != 0 and "lease on t1 expired" in r.stderr
    r = run(wt, "git", "commit", "--no-verify", "-q", "-m", "a", agent="coder-2")
    assert r.returncode != 0 and "t1 is claimed by coder-1, not coder-2" in r.stderr
    assert git(wt, "rev-parse", "HEAD") == base
    assert run(wt, "git", "commit", "-q", "-m", "a", agent="coder-1").returncode == 0
    liza(c, "submit", "t1", agent="coder-1")
    (wt / "b.txt").write_text("b\n")
    git(wt, "add", "b.txt")
    r = run(wt, "git", "commit", "-q", "-m", "b", agent="coder-1")
    assert r.returncode != 0 and "t1 is READY_FOR_REVIEW" in r.stderr
    r = run(wt, "git", "reset", "-q", "--soft", "HEAD~1", agent="coder-1")  # the review commit is frozen
    assert r.returncode != 0 and "t1 is READY_FOR_REVIEW" in r.stderr
    # Advisory: switching the hooks off gets past them (the server is where enforcement is real).
    r = run(wt, "git", "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "b", agent="coder-1")
    assert r.returncode == 0, r.stderr
    # Other branches are not ours to police, and creating a branch is not committing on it.
    r = run(wt, "git", "checkout", "-q", "-b", "scratch", agent="coder-2")
    assert r.returncode == 0, r.stderr
    r = run(wt, "git", "commit", "-q", "--allow-empty", "-m", "c", agent="coder-2")
    assert r.returncode == 0, r.stderr


def test_client_reference_transaction_guards_the_state_ref(tmp_path: Path, team: tuple[Path, Path]) -> None:
    bare, _seed = team
    c = clone(tmp_path, bare, "c")
    install(c, python=PY)
    r = run(c, "git", "update-ref", "-d", "refs/liza/state")
    assert r.returncode != 0 and "deleting refs/liza/state is never allowed" in r.stderr
    r = run(c, "git", "update-ref", "refs/liza/state", "refs/liza/state~2")
    assert r.returncode != 0 and "not a fast-forward" in r.stderr
    tip = git(c, "rev-parse", "refs/liza/state")
    Liza.open(c, agent="human").do(Add, task="t2", description="d")  # libgit2: no hook runs
    good = git(c, "rev-parse", "refs/liza/state")
    msg = git(c, "log", "-1", "--format=%B", "refs/liza/state")
    forged = rewrite_tip(c, message=msg.replace("Liza-Task: t2", "Liza-Task: t3") + "\n")
    repo = pygit2.Repository(str(c / ".git"))
    repo.references.create("refs/liza/state", pygit2.Oid(hex=tip), force=True)
    r = run(c, "git", "update-ref", "refs/liza/state", forged)
    assert r.returncode != 0 and f"state commit {forged[:12]} (add)" in r.stderr
    assert git(c, "rev-parse", "refs/liza/state") == tip
    assert run(c, "git", "update-ref", "refs/liza/state", good).returncode == 0  # legal: accepted
    assert git(c, "rev-parse", "refs/liza/state") == good


def test_client_merge_and_push_of_the_integration_branch(tmp_path: Path, team: tuple[Path, Path]) -> None:
    bare, _seed = team
    c = clone(tmp_path, bare, "c")
    install(c, python=PY)
    git(c, "checkout", "-q", "-b", "feature")
    (c / "f.txt").write_text("f\n")
    git(c, "add", "f.txt")
    git(c, "commit", "-q", "-m", "feature")
    git(c, "checkout", "-q", "integration")
    r = run(c, "git", "merge", "--no-ff", "-m", "merge feature", "feature")
    assert r.returncode != 0 and "is not the approved review_commit of any task" in r.stderr
    git(c, "merge", "--abort")
    r = run(c, "git", "merge", "--ff-only", "feature")  # reference-transaction refuses the ff
    assert r.returncode != 0 and "never approved" in r.stderr
    r = run(c, "git", "-c", "core.hooksPath=/dev/null", "merge", "-q", "--ff-only", "feature")
    assert r.returncode == 0
    r = push(c, "integration")  # pre-push stops it before anything is sent
    assert r.returncode != 0 and "gitliza: pre-push: refused: refs/heads/integration" in r.stderr
    r = push(c, "integration", "--no-verify")  # and without the client hook, the server does
    assert "never approved" in refused(r, "refs/heads/integration")


def test_ops_dated_in_the_future_are_refused_by_the_server(tmp_path: Path,
                                                           team: tuple[Path, Path]) -> None:
    """An op dated further ahead of the server's clock than liza.maxClockSkew (default 900 s) is
    a clock fault: refused, naming the skew in one line (leases no longer hang on op dates)."""
    import time as _time

    from gitliza.core import clock
    bare, _seed = team
    before = remote_ref(bare, "refs/liza/state")
    c = clone(tmp_path, bare, "c")
    ahead = clock.from_epoch(_time.time() + 3600)
    Liza.open(c, agent="human", now=lambda: ahead).do(Add, task="t2", description="d")
    line = state_push_refused(c, bare, before)
    assert re.search(r"this machine's clock is 3(59\d|60\d) s ahead of origin's", line), line
    assert "liza.maxClockSkew" in line
    git(bare, "config", "liza.maxClockSkew", "7200")  # a server that tolerates more skew
    assert push(c, "refs/liza/state:refs/liza/state").returncode == 0


def test_a_takeover_of_a_live_lease_is_refused_by_the_servers_clock(
        tmp_path: Path, team: tuple[Path, Path]) -> None:
    """coder-1 holds t1 (a live 300 s lease); coder-2 dates its claim within the allowed skew but
    past coder-1's lease. The op is legal by its own time, not by the server's; LIZA_NOW in the
    pusher's environment (which reaches pre-receive on a local push) must not move that clock."""
    import time as _time

    from gitliza.core import clock
    bare, seed = team
    now = clock.from_epoch(_time.time())
    Liza.open(seed, agent="coder-1", now=lambda: clock.plus(now, -290)).do(
        Claim, task="t1", worktree=".worktrees/t1", base_commit="a" * 40)
    assert push(seed, "refs/liza/state:refs/liza/state").returncode == 0
    before = remote_ref(bare, "refs/liza/state")
    c = clone(tmp_path, bare, "c")
    late = clock.plus(now, 30)  # within the skew; coder-1's lease ends at now + 10 s
    Liza.open(c, agent="coder-2", now=lambda: late).do(
        Claim, task="t1", worktree=".worktrees/t1", base_commit="a" * 40)
    line = refused(push(c, "refs/liza/state:refs/liza/state", LIZA_NOW=clock.plus(now, 3600)),
                   "refs/liza/state")
    assert "takes over a lease that runs until" in line
    assert remote_ref(bare, "refs/liza/state") == before


def _approved_on(c: Path, base: str, files: dict[str, str], msg: str) -> str:
    """t1 claimed from `base`, a review commit with `files` on top of it, submitted, approved
    (all through the core, at the real time); returns the review commit."""
    from gitliza.core.ops import ClaimReview, Submit
    repo = pygit2.Repository(str(c))
    tb = repo.TreeBuilder(repo[pygit2.Oid(hex=base)].peel(pygit2.Commit).tree)
    for name, text in files.items():
        tb.insert(name, repo.create_blob(text.encode()), pygit2.GIT_FILEMODE_BLOB)
    sig = pygit2.Signature("coder-1", "c@x")
    review = str(repo.create_commit(None, sig, sig, msg, tb.write(), [pygit2.Oid(hex=base)]))
    Liza.open(c, agent="coder-1").do(Claim, task="t1", worktree=".worktrees/t1", base_commit=base)
    Liza.open(c, agent="coder-1").do(Submit, task="t1", commit=review)
    Liza.open(c, agent="rev-1").do(ClaimReview, task="t1")
    Liza.open(c, agent="rev-1").do(Verdict, task="t1", verdict="approve", commit=review)
    return review


def test_unreviewed_commits_under_a_claims_base_are_refused(tmp_path: Path,
                                                            team: tuple[Path, Path]) -> None:
    """A review covers base_commit..review_commit: a coder who branches from a local unreviewed
    commit cannot carry it in under a small approved change."""
    from gitliza.core.ops import Merge
    bare, _seed = team
    before = remote_ref(bare, "refs/heads/integration")
    c = clone(tmp_path, bare, "c")
    evil = commit_on_integration(c, "backdoor.sh", "evil\n", "smuggled base")
    git(c, "checkout", "-q", "main")
    review = _approved_on(c, evil, {"t1.txt": "small change\n"}, "t1: reviewed change")
    Liza.open(c, agent="rev-1").do(Merge, task="t1", result="merged", merge_commit=review)
    git(c, "update-ref", "refs/heads/integration", review)
    line = refused(push(c, "integration", "refs/liza/state:refs/liza/state"),
                   "refs/heads/integration")
    assert "never approved" in line and "smuggled base" in line
    assert remote_ref(bare, "refs/heads/integration") == before


def test_a_recorded_merge_commit_with_a_forged_tree_is_refused(tmp_path: Path,
                                                               team: tuple[Path, Path]) -> None:
    """The merge commit recorded on a MERGED task must be the clean merge of its first parent and
    the review commit: the same two parents with a tree that adds a file are refused, the true
    merge is accepted (the only difference between the two pushes is the tree)."""
    from gitliza.core.ops import Merge
    bare, _seed = team
    c = clone(tmp_path, bare, "c")
    tip = git(c, "rev-parse", "integration")
    review = _approved_on(c, tip, {"t1.txt": "t1\n"}, "t1 work")
    repo = pygit2.Repository(str(c))
    parents = [pygit2.Oid(hex=tip), pygit2.Oid(hex=review)]
    true_tree = repo.merge_commits(*parents).write_tree(repo)
    tb = repo.TreeBuilder(repo[true_tree].peel(pygit2.Tree))
    tb.insert("backdoor.sh", repo.create_blob(b"evil\n"), pygit2.GIT_FILEMODE_BLOB)
    sig = pygit2.Signature("rev-1", "r@x", 1700000000, 0)
    forged = repo.create_commit(None, sig, sig, "merge t1", tb.write(), parents)
    true = repo.create_commit(None, sig, sig, "merge t1", true_tree, parents)
    approved_state = git(c, "rev-parse", "refs/liza/state")
    before = remote_ref(bare, "refs/heads/integration")

    Liza.open(c, agent="rev-1").do(Merge, task="t1", result="merged", merge_commit=str(forged))
    git(c, "update-ref", "refs/heads/integration", str(forged))
    line = refused(push(c, "integration", "refs/liza/state:refs/liza/state"),
                   "refs/heads/integration")
    assert "1 commit(s) never approved" in line and str(forged)[:12] in line
    assert remote_ref(bare, "refs/heads/integration") == before

    git(c, "update-ref", "refs/liza/state", approved_state)
    Liza.open(c, agent="rev-1").do(Merge, task="t1", result="merged", merge_commit=str(true))
    git(c, "update-ref", "refs/heads/integration", str(true))
    r = push(c, "integration", "refs/liza/state:refs/liza/state")
    assert r.returncode == 0, r.stderr
    assert remote_ref(bare, "refs/heads/integration") == str(true)
