"""Upgrading a board in place (issue 28 item 5; core/encoding/versions.py, core/ops/upgrade.py):
the first write of this gitliza on a format-1 board, or `git liza upgrade`, adds one `upgrade`
commit and keeps the history, signatures and `verify`; a board in a newer format is refused in one
line (exit 4) with the board untouched; the server hook and sync carry the upgrade across clones
that upgrade at different times.

The format-1 boards here are tests/fixtures/board-v1.bundle (written by the format-1 release) and,
where a test needs more format-1 writes (an old clone's unsynced ops, a signed format-1 board),
ops written the way a format-1 gitliza writes them: on the tip, the tree keeping its `format`
blob, no upgrade first (`write_old`). tests/services/test_upgrade_release.py does the same with
the real format-1 release installed in a throw-away venv.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from gitliza.core.encoding import versions, record
from gitliza.core.board import FORMAT_KEY
from gitliza.core.ops import Add, Claim, ConfigSet, Init, Note, Register, apply
from gitliza.core.ops.base import Op
from gitliza.core.ops.keys import Rekey
from gitliza.git import signing
from gitliza.git.repository import common_dir
from gitliza.git.store import Store
from gitliza.hooks.install import install
from gitliza.services.api import Liza
from gitliza.services.verify.engine import VerifyFailure, replay
from tests.conftest import git

PY = sys.executable
BIN = str(Path(PY).parent)
STATE = "refs/liza/state"
BUNDLE = Path(__file__).parent.parent / "fixtures" / "board-v1.bundle"
T = "2026-03-01T00:00:00Z"


def run(cwd: Path, *args: str, agent: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    env.pop("LIZA_AGENT_ID", None)
    if agent:
        env["LIZA_AGENT_ID"] = agent
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, env=env,
                          check=False, timeout=120)


def liza(cwd: Path, *args: str, agent: str | None = None) -> subprocess.CompletedProcess[str]:
    return run(cwd, PY, "-m", "gitliza", *args, agent=agent)


def ok(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 0, r.stderr
    return r.stdout


def tip(path: Path) -> str:
    return git(path, "rev-parse", "-q", "--verify", STATE, check=False)


def fmt(path: Path, rev: str = STATE) -> str:
    return git(path, "cat-file", "blob", f"{rev}:format")


def trailers(path: Path, rev: str) -> dict[str, str]:
    out = git(path, "log", "-1", "--format=%(trailers:only,unfold)", rev)
    return dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)


def restore(tmp: Path, name: str = "old") -> Path:
    """The format-1 release's board (35 commits), with its branches, in a fresh repository."""
    path = tmp / name
    git(tmp, "init", "-q", "-b", "main", str(path))
    git(path, "fetch", "-q", "--update-head-ok", str(BUNDLE), "+refs/*:refs/*")
    git(path, "reset", "-q", "--hard", "main")
    assert fmt(path) == "gitliza-state 1"
    return path


def write_old(path: Path, op: Op, store: Store | None = None) -> str:
    """`op` committed on the tip as a format-1 gitliza writes it (no upgrade first: the tree keeps
    its `format` blob), signed by what the store's signer holds; the ref moved by CAS."""
    store = store or Store.discover(path)
    parent = store.resolve(None)
    board = store.board_at(parent)
    outcome = apply(board, op)
    store.check_signable(board, outcome, op)
    oid = store.write_commit(parent, outcome, op)
    assert store.swap(None if parent is None else parent.id, oid, op.NAME)
    return str(oid)


def forge(path: Path, parent_rev: str, op: Op, extra: dict[tuple[str, str], object]) -> str:
    """A commit recording `op` on `parent_rev` whose tree also carries `extra` (a format blob the
    op does not write, say): what a hand-edited or hostile board would hold. Moves the ref."""
    store = Store.discover(path)
    parent = store.resolve(parent_rev)
    assert parent is not None
    outcome = apply(store.board_at(parent), op)
    from dataclasses import replace
    oid = store.write_commit(parent, replace(outcome, changes={**outcome.changes, **extra}), op)
    store.repo.references.create(STATE, oid, force=True)
    return str(oid)


def test_the_first_write_upgrades_in_the_same_cas_and_keeps_the_history(tmp_path: Path) -> None:
    path = restore(tmp_path)
    git(path, "config", "core.logAllRefUpdates", "always")  # a reflog for refs/liza/state
    before = tip(path)
    r = liza(path, "note", "first words of the new release", "--no-sync")
    assert r.returncode == 0, r.stderr
    assert "upgraded to storage format 2 (from 1)" in r.stderr
    # Two commits: the upgrade (an op with its trailers, by the writer), then the note on it.
    up, note = git(path, "rev-list", "--reverse", f"{before}..{STATE}").split()
    assert git(path, "rev-parse", f"{up}^") == before  # history kept: nothing rewritten
    assert trailers(path, up)["Liza-Op"] == "upgrade"
    assert trailers(path, up)["Liza-Actor"] == "human"
    assert json.loads(trailers(path, up)["Liza-Args"]) == {"source": 1, "target": 2}
    assert trailers(path, note)["Liza-Op"] == "note"
    assert fmt(path, before) == "gitliza-state 1" and fmt(path, up) == "gitliza-state 2"
    # Only the format blob changed in the upgrade commit.
    assert git(path, "diff", "--name-only", before, up) == "format"
    # One reflog entry for the two commits: one CAS, never a moment with only the upgrade.
    assert git(path, "reflog", "--format=%H", STATE).split() == [note]
    v = liza(path, "verify")
    assert v.returncode == 0, v.stderr
    assert "verified 37 state commit(s)" in v.stdout and "upgrade 1" in v.stdout
    # Later writes do not upgrade again.
    ok(liza(path, "note", "second", "--no-sync"))
    assert git(path, "rev-parse", f"{STATE}^") == note


def test_a_refused_op_on_an_old_board_writes_nothing_not_even_the_upgrade(tmp_path: Path) -> None:
    path = restore(tmp_path)
    before = tip(path)
    r = liza(path, "claim", "no-such-task", "--no-sync", agent="coder-1")
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1
    assert tip(path) == before and fmt(path) == "gitliza-state 1"


def test_git_liza_upgrade_upgrades_once_then_says_so(tmp_path: Path) -> None:
    path = restore(tmp_path)
    before = tip(path)
    out = ok(liza(path, "upgrade", "--no-sync", "--json"))
    data = json.loads(out)
    assert data["upgraded"] is True and data["format"] == 2
    assert data["migrations"] and data["migrations"][0].startswith("1 -> 2: ")
    assert git(path, "rev-parse", f"{STATE}^") == before
    assert trailers(path, STATE)["Liza-Op"] == "upgrade"
    after = tip(path)
    r = liza(path, "upgrade", "--no-sync")
    assert r.returncode == 0 and "storage format 2 already" in r.stdout
    assert tip(path) == after
    assert "upgrade 1" in ok(liza(path, "verify"))


def test_a_new_board_starts_in_the_current_format(repo: Path) -> None:
    ok(liza(repo, "init", "g"))
    assert fmt(repo) == f"gitliza-state {versions.FORMAT_VERSION}"
    r = liza(repo, "upgrade", "--no-sync")
    assert r.returncode == 0 and "already" in r.stdout
    assert liza(repo, "upgrade", "--no-sync").returncode == 0
    assert git(repo, "rev-list", "--count", STATE) == "1"


def test_verify_refuses_a_format_the_ops_do_not_write(tmp_path: Path) -> None:
    path = restore(tmp_path)
    base = tip(path)
    note = Note(actor="human", time=T, message="n")
    # A plain op whose tree flips the format blob (an "upgrade" without the op).
    bad = forge(path, base, note, {FORMAT_KEY: 2})
    r = liza(path, "verify")
    assert r.returncode == 4 and bad[:12] in r.stderr and "(note)" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    # An upgrade that also rewrites an entity.
    from gitliza.core.ops.upgrade import Upgrade
    up = Upgrade(actor="human", time=T, source=1, target=2)
    store = Store.discover(path)
    goal = store.board(base)[0].goal
    from dataclasses import replace
    bad = forge(path, base, up, {("goal", ""): replace(goal, description="hijacked")})
    r = liza(path, "verify")
    assert r.returncode == 4 and bad[:12] in r.stderr and "(upgrade)" in r.stderr
    # A second upgrade on the upgraded board (a commit that records it, on the same tree).
    good = forge(path, base, up, {})
    assert liza(path, "verify").returncode == 0
    store = Store.discover(path)
    from gitliza.git.commits import signature
    msg = record.message(up, apply(store.board(base)[0], up).event)
    again = store.repo.create_commit(None, signature(up), signature(up), msg,
                                     store.repo[pygit2.Oid(hex=good)].tree_id,
                                     [pygit2.Oid(hex=good)])
    store.repo.references.create(STATE, again, force=True)
    r = liza(path, "verify")
    assert r.returncode == 4 and str(again)[:12] in r.stderr and "(upgrade)" in r.stderr


def test_a_board_in_a_newer_format_is_refused_in_one_line_and_left_alone(
        tmp_path: Path, repo: Path) -> None:
    ok(liza(repo, "init", "g"))
    ok(liza(repo, "add", "t1", "--desc", "d", "--spec-ref", "README.md", "--done-when", "w",
            "--scope", "x", "--ready", "--no-sync"))
    store = Store.discover(repo)
    parent = store.resolve(None)
    assert parent is not None
    tb = store.repo.TreeBuilder(parent.tree)
    tb.insert("format", store.repo.create_blob(versions.blob(versions.FORMAT_VERSION + 1)),
              pygit2.GIT_FILEMODE_BLOB)
    sig = pygit2.Signature("future", "f@liza.invalid", 0, 0)
    c = store.repo.create_commit(None, sig, sig, "from the future", tb.write(), [parent.id])
    store.repo.references.create(STATE, c, force=True)
    before = tip(repo)
    for args in (["status"], ["show", "t1"], ["note", "x", "--no-sync"], ["upgrade", "--no-sync"],
                 ["claim", "t1", "--no-sync"], ["verify"], ["materialize"], ["log"], ["events"]):
        r = liza(repo, *args, agent="coder-1" if args[0] == "claim" else None)
        assert r.returncode == 4, (args, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, (args, r.stderr)
        assert f"storage format {versions.FORMAT_VERSION + 1}" in lines[0], (args, lines)
        assert f"up to {versions.FORMAT_VERSION}" in lines[0], (args, lines)
        assert tip(repo) == before


@pytest.mark.skipif(shutil.which("ssh-keygen") is None,
                    reason="ssh-keygen (openssh-client) is not installed: it makes the human's key")
def test_a_signed_old_board_upgrades_signed_and_verifies(tmp_path: Path, repo: Path) -> None:
    # A format-1 board under `signatures = required`: its root in format 1 (as the format-1
    # release wrote it), every later commit signed by its actor.
    key = tmp_path / "human_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "human", "-f", str(key)],
                   check=True)
    git(repo, "config", "gpg.format", "ssh")
    git(repo, "config", "user.signingkey", f"{key}.pub")
    Liza.open(repo, "human").do(Init, goal="ship it")
    store = Store.discover(repo)
    root = store.resolve(None)
    assert root is not None
    tb = store.repo.TreeBuilder(root.tree)
    tb.insert("format", store.repo.create_blob(versions.blob(1)), pygit2.GIT_FILEMODE_BLOB)
    old_root = store.repo.create_commit(None, root.author, root.committer, root.message,
                                        tb.write(), [])
    store.repo.references.create(STATE, old_root, force=True)
    store = Store.discover(repo)
    write_old(repo, Rekey(actor="human", time=T, agent="human",
                          key=Path(f"{key}.pub").read_text()), store)
    made = signing.new_key()
    signing.save(common_dir(store.repo), "coder-1", made)
    write_old(repo, Register(actor="human", time=T, agent="coder-1", role="coder",
                             key=made.public.line), store)
    write_old(repo, ConfigSet(actor="human", time=T, key="signatures", value="required"), store)
    write_old(repo, Add(actor="human", time=T, task="t1", description="d", spec_ref="README.md",
                        done_when="w", scope="x", ready=True), store)
    before = tip(repo)
    assert fmt(repo) == "gitliza-state 1"
    assert replay(Store.discover(repo), before).signed == 2  # from `signatures = required` on
    # The first write is the coder's claim: the upgrade is the coder's, signed by its key.
    base = git(repo, "rev-parse", "main")
    Liza.open(repo, "coder-1").do(Claim, task="t1", worktree=".worktrees/t1", base_commit=base)
    up = git(repo, "rev-parse", f"{STATE}^")
    assert git(repo, "rev-parse", f"{up}^") == before
    assert trailers(repo, up)["Liza-Op"] == "upgrade" and trailers(repo, up)["Liza-Actor"] == "coder-1"
    report = replay(Store.discover(repo), tip(repo))
    assert report.signed == 4 and not report.unsigned and report.ops["upgrade"] == 1
    # The same upgrade unsigned is refused under `required`.
    store = Store.discover(repo)
    c = store.repo[pygit2.Oid(hex=up)]
    bare = store.repo.create_commit(None, c.author, c.committer, c.message, c.tree_id,
                                    [pygit2.Oid(hex=before)])
    with pytest.raises(VerifyFailure, match="upgrade.*signatures = required"):
        replay(store, bare)


@pytest.fixture
def remote(tmp_path: Path, bare: Path) -> Path:
    """The bare remote with the enforcing server hook, holding the format-1 board."""
    install(bare, server=True, python=PY)
    seed = restore(tmp_path, "seed")
    git(seed, "remote", "add", "origin", str(bare))
    r = run(seed, "git", "push", "-q", "origin", "main", "integration", f"{STATE}:{STATE}")
    assert r.returncode == 0, r.stderr
    return bare


def clone(tmp: Path, bare: Path, name: str) -> Path:
    path = tmp / name
    git(tmp, "clone", "-q", str(bare), str(path))
    git(path, "config", "liza.remote", "origin")  # writes sync by themselves
    ok(liza(path, "pull"))
    assert fmt(path) == "gitliza-state 1"
    return path


def test_the_server_hook_accepts_an_upgrade_and_checks_it(tmp_path: Path, remote: Path) -> None:
    a = clone(tmp_path, remote, "a")
    before = git(remote, "rev-parse", STATE)
    # A format flip without the op is refused by the hook, the remote unmoved.
    forge(a, STATE, Note(actor="human", time=T, message="n"), {FORMAT_KEY: 2})
    r = run(a, "git", "push", "origin", f"+{STATE}:{STATE}")
    assert r.returncode != 0 and "gitliza: refused refs/liza/state" in r.stderr
    assert git(remote, "rev-parse", STATE) == before
    git(a, "update-ref", STATE, before)
    # The upgrade itself is accepted (replayed by the hook like any op).
    ok(liza(a, "upgrade", "--no-sync"))
    r = run(a, "git", "push", "origin", f"{STATE}:{STATE}")
    assert r.returncode == 0, r.stderr
    assert git(remote, "rev-parse", STATE) == tip(a)
    assert git(remote, "cat-file", "blob", f"{STATE}:format") == "gitliza-state 2"


def test_a_bound_pusher_may_push_only_its_own_agents_upgrade(tmp_path: Path, remote: Path) -> None:
    # The first write upgrades as the writer, so an agent's pusher, bound to that agent by the
    # server (docs/enforcement.md), can push it; the human's upgrade it cannot.
    git(remote, "config", "liza-pusher.alice.agents", "coder-1")
    a = clone(tmp_path, remote, "a")
    before = git(remote, "rev-parse", STATE)
    ok(liza(a, "upgrade", "--no-sync"))
    r = subprocess.run(["git", "push", "origin", f"{STATE}:{STATE}"], cwd=a, capture_output=True,
                       text=True, env={**os.environ, "LIZA_PUSHER": "alice"})
    assert r.returncode != 0 and "pusher alice may act only as coder-1" in r.stderr, r.stderr
    assert git(remote, "rev-parse", STATE) == before
    git(a, "update-ref", STATE, before)
    ok(liza(a, "note", "from coder-1", "--no-sync", agent="coder-1"))
    assert trailers(a, f"{STATE}^")["Liza-Actor"] == "coder-1"
    r = subprocess.run(["git", "push", "origin", f"{STATE}:{STATE}"], cwd=a, capture_output=True,
                       text=True, env={**os.environ, "LIZA_PUSHER": "alice"})
    assert r.returncode == 0, r.stderr
    assert git(remote, "cat-file", "blob", f"{STATE}:format") == "gitliza-state 2"


def test_clones_that_upgrade_at_different_times(tmp_path: Path, remote: Path) -> None:
    a, b, c = (clone(tmp_path, remote, n) for n in "abc")
    # B has format-1 ops of its own, not synced yet (written by its old gitliza).
    write_old(b, Note(actor="human", time="2026-03-01T00:00:01Z", message="from b, old"))
    # C upgrades on its own too, and writes on its upgraded board, not synced yet.
    ok(liza(c, "note", "from c, upgraded", "--no-sync"))
    assert trailers(c, f"{STATE}^")["Liza-Op"] == "upgrade"
    # A upgrades first and syncs.
    ok(liza(a, "upgrade"))
    assert git(remote, "cat-file", "blob", f"{STATE}:format") == "gitliza-state 2"
    # B, now with this gitliza, syncs: its format-1 op is replayed onto the format-2 board.
    r = liza(b, "sync", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["dropped"] == [] and [x["op"] for x in report["replayed"]] == ["note"], report
    # C syncs: its own upgrade is moot (A's is there), its note replayed; nothing dropped.
    r = liza(c, "sync", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["dropped"] == [] and [x["op"] for x in report["replayed"]] == ["note"], report
    ops = git(remote, "log", "--format=%(trailers:key=Liza-Op,valueonly)", STATE).split()
    assert ops.count("upgrade") == 1 and ops[:3] == ["note", "note", "upgrade"]
    notes = git(remote, "log", "-2", "--format=%(trailers:key=Liza-Args,valueonly)", STATE)
    assert "from b, old" in notes and "from c, upgraded" in notes
    for path in (a, b, c):
        ok(liza(path, "pull"))
        assert tip(path) == git(remote, "rev-parse", STATE)
    v = liza(a, "verify", "--remote", "origin")
    assert v.returncode == 0, v.stderr


def test_writers_racing_on_an_old_board_upgrade_it_once(tmp_path: Path) -> None:
    # Four processes write their first op at once: each reads format 1 and stages an upgrade, one
    # wins the CAS, the others re-read the upgraded board and write their op alone.
    path = restore(tmp_path)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    procs = [subprocess.Popen([PY, "-m", "gitliza", "note", f"racer {i}", "--no-sync"], cwd=path,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(4)]
    results = [(p.wait(120), p.stderr.read() if p.stderr else "") for p in procs]
    assert all(code == 0 for code, _ in results), results
    upgraded = [err for _, err in results if "upgraded to storage format 2" in err]
    assert len(upgraded) == 1, results
    ops = git(path, "log", "--format=%(trailers:key=Liza-Op,valueonly)", STATE).split()
    assert ops[:4] == ["note"] * 4 and ops[4] == "upgrade" and ops.count("upgrade") == 1, ops
    assert "upgrade 1" in ok(liza(path, "verify"))


def test_a_renewal_off_the_chain_upgrades_a_format_1_board_first(tmp_path: Path) -> None:
    """A heartbeat writes no board commit (refs/liza/live/<agent>), which a format-1 reader would
    never see: so on a format-1 board it upgrades first, and that reader refuses the board."""
    path = restore(tmp_path)
    before = tip(path)
    ok(liza(path, "heartbeat", "--no-sync", agent="coder-1"))
    assert fmt(path) == "gitliza-state 2"
    assert git(path, "rev-parse", f"{STATE}^") == before
    assert trailers(path, tip(path))["Liza-Op"] == "upgrade"
    assert git(path, "rev-parse", "-q", "--verify", "refs/liza/live/coder-1", check=False)
    ok(liza(path, "heartbeat", "--no-sync", agent="coder-1"))
    assert git(path, "rev-parse", f"{STATE}^") == before  # one upgrade, renewals off the chain
