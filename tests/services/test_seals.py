"""Seals and the shallow join (gitliza/services/verify/seals.py, gitliza/services/sync/join.py,
gitliza/git/remotes/shallow.py): a clone without a board fetches the state ref shallow and verifies from
the newest seal; `verify --full` fetches the rest and replays it all; a forged seal is refused
where it must be; the server hook and every incremental sync replay a seal as an ordinary op.

Real repositories, real bare remotes (and a real `git daemon`), real `git fetch --depth`, the real
CLI, real ssh-keygen keys for the human where signatures are required.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from gitliza.core.encoding import record
from gitliza.core.ops import ConfigSet, Note
from gitliza.core.ops.keys import Seal
from gitliza.git.remotes import shallow
from gitliza.git.commits import signature
from gitliza.git.store import STATE_REF, Store
from gitliza.hooks.install import install
from gitliza.services.adopt import RemoteRefused
from gitliza.services.sync import engine
from gitliza.services.verify import seals
from gitliza.services.verify.engine import VerifyFailure
from tests.conftest import git, remote_of
from tests.gitdaemon import GitDaemon, git_daemon  # noqa: F401  (the fixture)
from tests.services.test_sync import Clock, cli, liza, seed, tip

PY = sys.executable
PAST = "2025-01-01T00:00:00Z"  # a server hook refuses ops dated ahead of its clock


def grow(work: Path, before: int, after: int, *, sealed: bool = True,
         now: Clock | None = None) -> tuple[str | None, int]:
    """`before` notes, a seal (unless not `sealed`), `after` notes on `work`'s board, pushed to
    its origin. (the seal's oid, the chain's length)."""
    h = liza(work, now=now or Clock(offset=100))
    for i in range(before):
        h.do(Note, message=f"before {i}")
    sealed_at = h.do(Seal).commit if sealed else None
    for i in range(after):
        h.do(Note, message=f"after {i}")
    git(work, "push", "-q", "origin", f"{STATE_REF}:{STATE_REF}")
    return sealed_at, len(list(Store.discover(work).history()))


def join(url: str, dest: Path, depth: int | None = 8) -> tuple[Path, engine.SyncReport]:
    """A new clone of the project that joins the board: `git clone`, then the first pull."""
    git(dest.parent, "clone", "-q", url, str(dest))
    if depth is not None:
        git(dest, "config", "liza.joinDepth", str(depth))
    return dest, engine.pull(Store.discover(dest), remote_of(Store.discover(dest), "origin"))


def held(path: Path) -> int:
    return len(list(Store.discover(path).history()))


def test_a_new_clone_joins_at_the_newest_seal_and_full_verify_fetches_the_rest(
        tmp_path: Path) -> None:
    bare, work = seed(tmp_path)
    sealed, total = grow(work, 60, 12)
    fresh, rep = join(str(bare), tmp_path / "fresh")
    assert tip(fresh) == tip(bare)
    # Only the seal's neighbourhood came (8, then 8 more: the seal is 13 below the tip), and
    # only what follows the seal was replayed.
    assert rep.verified == 12
    assert held(fresh) == 16 < total
    assert shallow.points(Store.discover(fresh).repo)
    # The commands that read the tip work; those that walk history say where it stops.
    assert cli(fresh, "status").returncode == 0
    log = cli(fresh, "log", "--all")
    assert log.returncode == 0 and len(log.stdout.splitlines()) == 16
    assert "not in this clone" in log.stderr and "verify --full" in log.stderr
    ev = cli(fresh, "events")
    assert ev.returncode == 0 and "not in this clone" in ev.stderr
    an = cli(fresh, "analyze", "--no-record")
    assert an.returncode == 0 and "analyze: the history before" in an.stderr, an.stderr
    ex = cli(fresh, "export", "--out", str(tmp_path / "exported"))
    assert ex.returncode == 0 and "log.yaml: the history before" in ex.stderr
    v = cli(fresh, "verify", "--json")
    assert v.returncode == 0, v.stderr
    assert '"seal": "' + str(sealed) + '"' in v.stdout and '"commits": 12' in v.stdout
    # --full: the rest is fetched (no ref moves) and every commit replayed, from the root.
    full = cli(fresh, "verify", "--full")
    assert full.returncode == 0, full.stderr
    assert f"verified {total} state commit(s) up to" in full.stdout
    assert not shallow.points(Store.discover(fresh).repo)
    assert held(fresh) == total and tip(fresh) == tip(bare)
    assert "not in this clone" not in cli(fresh, "log").stderr
    # The scheduled check of docs/ci/: the remote's board, whole.
    ci = cli(fresh, "verify", "--remote", "origin", "--full")
    assert ci.returncode == 0 and f"verified {total} state commit(s) up to" in ci.stdout


def test_the_joined_clone_works_on_and_its_ops_reach_a_guarded_remote(tmp_path: Path) -> None:
    """A shallow clone writes, syncs and pushes through the server hook, which replays its ops
    from the server's (complete) chain; another clone adopts them."""
    now = Clock(PAST)
    bare, work = seed(tmp_path, now=now)
    install(bare, server=True, python=PY)
    grow(work, 30, 5, now=now)
    fresh, _ = join(str(bare), tmp_path / "fresh")
    git(fresh, "config", "liza.remote", "origin")
    r = cli(fresh, "note", "from the shallow clone")
    assert r.returncode == 0, r.stderr
    assert tip(bare) == tip(fresh)  # auto-sync pushed it, the hook accepted it
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(bare), str(other))
    engine.pull(Store.discover(other), remote_of(Store.discover(other), "origin"))
    assert tip(other) == tip(bare)


def test_without_a_seal_the_join_fetches_and_replays_the_whole_chain(tmp_path: Path) -> None:
    bare, work = seed(tmp_path)
    _, total = grow(work, 30, 0, sealed=False)
    fresh, rep = join(str(bare), tmp_path / "fresh")
    assert rep.verified == total == held(fresh)
    assert not shallow.points(Store.discover(fresh).repo)
    v = cli(fresh, "verify")
    assert v.returncode == 0 and f"verified {total} state commit(s) up to" in v.stdout


def test_a_shallow_checkout_of_the_project_joins_and_verifies_the_whole_board(
        tmp_path: Path) -> None:
    """A CI checkout (`git clone --depth 1`) is shallow for its own branches: only the board's
    chain counts when the join looks for a seal or decides to fetch the rest, and `verify --full`
    fetches nothing more for a board it holds whole."""
    bare, work = seed(tmp_path)
    for i in range(3):
        (work / f"f{i}").write_text(f"{i}\n")
        git(work, "add", f"f{i}")
        git(work, "commit", "-q", "-m", f"code {i}")
    git(work, "push", "-q", "origin", "main")
    _, total = grow(work, 25, 0, sealed=False)
    dest = tmp_path / "ci"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{bare}", str(dest))
    code_cut = shallow.points(Store.discover(dest).repo)
    assert code_cut  # the checkout is shallow before gitliza does anything
    git(dest, "config", "liza.joinDepth", "8")
    rep = engine.pull(Store.discover(dest), remote_of(Store.discover(dest), "origin"))
    assert rep.verified == total == held(dest) and tip(dest) == tip(bare)
    assert shallow.boundary_below(Store.discover(dest).repo, Store.discover(dest).tip()) is None
    full = cli(dest, "verify", "--full")
    assert full.returncode == 0 and f"verified {total} state commit(s)" in full.stdout
    assert shallow.points(Store.discover(dest).repo) == code_cut  # the code stays as checked out


def test_a_join_through_git_daemon(tmp_path: Path, git_daemon: GitDaemon) -> None:  # noqa: F811
    bare, work = seed(tmp_path)
    grow(work, 40, 3)
    served = git_daemon.base_path / "served.git"
    git(tmp_path, "clone", "-q", "--bare", "--mirror", str(bare), str(served))
    (served / "git-daemon-export-ok").touch()
    fresh, rep = join(git_daemon.url("served.git"), tmp_path / "fresh")
    assert tip(fresh) == tip(served) and rep.verified == 3 and held(fresh) == 8


def test_depth_zero_joins_whole_as_before(tmp_path: Path) -> None:
    bare, work = seed(tmp_path)
    _, total = grow(work, 20, 3)
    fresh, rep = join(str(bare), tmp_path / "fresh", depth=0)
    assert held(fresh) == total and not shallow.points(Store.discover(fresh).repo)
    assert rep.verified == 3  # still from the seal: it is checked, the rest is here to replay


def _forged_seal(work: Path, *, tree_edit: bool = False, actor: str = "human") -> str:
    """A seal commit written with pygit2 on `work`'s tip (no write path, no signature): `actor`
    as the sealer, its tree edited (a task APPROVED) with `tree_edit`. The ref moves to it."""
    store = Store.discover(work)
    parent = store.resolve(None)
    assert parent is not None
    from gitliza.core import clock
    op = Seal(actor=actor, time=clock.from_epoch(parent.author.time + 1))
    from gitliza.core.ops import Event
    event = Event(op="seal", actor=actor, time=op.time, summary=f"seal by {actor}")
    tree = parent.tree_id
    if tree_edit:
        from tests.forgery import _replace
        from gitliza.core.encoding.layout import path_of
        path = path_of("tasks", "task-1")
        blob = parent.tree[path]
        assert isinstance(blob, pygit2.Blob)
        text = blob.data.decode()
        assert 'status = "UNCLAIMED"' in text
        text = text.replace('status = "UNCLAIMED"', 'status = "APPROVED"')
        tree = _replace(store.repo, parent.tree, path.split("/"), store.repo.create_blob(text))
    sig = signature(op)
    oid = store.repo.create_commit(None, sig, sig, record.message(op, event), tree, [parent.id])
    store.repo.references.create(STATE_REF, oid, force=True)
    return str(oid)


@pytest.mark.parametrize("forgery", ["by an agent", "tree edited"])
def test_a_forged_seal_is_refused_by_the_hook_and_by_every_synced_clone(
        tmp_path: Path, forgery: str) -> None:
    now = Clock(PAST)
    bare, work = seed(tmp_path, now=now)
    grow(work, 5, 0, sealed=False, now=now)
    guarded = tmp_path / "guarded.git"
    git(tmp_path, "clone", "-q", "--mirror", str(bare), str(guarded))
    install(guarded, server=True, python=PY)
    a = tmp_path / "a"
    git(tmp_path, "clone", "-q", str(bare), str(a))
    engine.pull(Store.discover(a), remote_of(Store.discover(a), "origin"))
    before = tip(bare)
    forged = _forged_seal(work, actor="a1" if forgery == "by an agent" else "human",
                          tree_edit=forgery == "tree edited")
    # The server hook replays it as an op: refused, the guarded remote unmoved.
    r = subprocess.run(["git", "push", "--no-verify", str(guarded), f"{forged}:{STATE_REF}"],
                       cwd=work, capture_output=True, text=True)
    assert r.returncode != 0 and "refused refs/liza/state" in r.stderr
    assert forged[:12] in r.stderr and "(seal)" in r.stderr, r.stderr
    assert tip(guarded) == before
    # A hookless remote takes it; a clone that has the board replays it and refuses it.
    git(work, "push", "-q", "--no-verify", "origin", f"+{forged}:{STATE_REF}")
    with pytest.raises(RemoteRefused) as err:
        engine.pull(Store.discover(a), remote_of(Store.discover(a), "origin"))
    assert forged[:12] in str(err.value)
    assert tip(a) == before


def test_a_seal_with_its_tree_edited_misleads_no_full_verify(tmp_path: Path) -> None:
    """The seal is the trust anchor of a join (signatures off: the remote is trusted for the board
    at the seal, as it was for the root); `verify --full` replays the seal as an op and names it."""
    bare, work = seed(tmp_path)
    grow(work, 5, 0, sealed=False)
    forged = _forged_seal(work, tree_edit=True)
    git(work, "push", "-q", "--no-verify", "origin", f"+{forged}:{STATE_REF}")
    fresh, rep = join(str(bare), tmp_path / "fresh")
    assert tip(fresh) == forged and rep.verified == 0
    full = cli(fresh, "verify", "--full")
    assert full.returncode == 4 and forged[:12] in full.stderr and "(seal)" in full.stderr


def test_tampering_before_the_seal_is_caught_by_verify_full(tmp_path: Path) -> None:
    """History rewritten below a seal (an early note's tree edited, everything after it written
    anew, a new seal on top) passes the default verify, which starts at the seal, and is caught
    by `verify --full`, in the clone that joined at the seal too."""
    bare, work = seed(tmp_path)
    h = liza(work, now=Clock(offset=100))
    for i in range(6):
        h.do(Note, message=f"early {i}")
    early = _forged_seal(work, tree_edit=True)  # an early commit nobody replayed
    h = liza(work, now=Clock(offset=500))
    for i in range(20):
        h.do(Note, message=f"later {i}")
    h.do(Seal)
    for i in range(4):
        h.do(Note, message=f"last {i}")
    git(work, "push", "-q", "origin", f"+{STATE_REF}:{STATE_REF}")
    assert seals.verify(Store.discover(work)).commits == 4
    with pytest.raises(VerifyFailure) as err:
        seals.verify(Store.discover(work), full=True)
    assert err.value.commit == early
    fresh, rep = join(str(bare), tmp_path / "fresh")
    assert rep.verified == 4
    assert cli(fresh, "verify").returncode == 0
    full = cli(fresh, "verify", "--full")
    assert full.returncode == 4 and early[:12] in full.stderr, full.stderr


def test_only_the_human_seals(tmp_path: Path) -> None:
    bare, work = seed(tmp_path)
    before = tip(work)
    r = cli(work, "seal", agent="a1")
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1
    assert "human" in r.stderr and tip(work) == before
    ok = cli(work, "seal", "--no-sync")
    assert ok.returncode == 0, ok.stderr
    assert record.parse(Store.discover(work).resolve(None).message).op.NAME == "seal"  # type: ignore[union-attr]


def test_seal_every_n_seals_only_when_the_newest_seal_is_that_far(tmp_path: Path) -> None:
    """`git liza seal --every N`, what cron runs: a seal when none is within N commits of the tip,
    else nothing (exit 0 both ways, the ref untouched the second time)."""
    _bare, work = seed(tmp_path)
    first = cli(work, "seal", "--every", "5", "--no-sync")  # no seal yet: seals
    assert first.returncode == 0, first.stderr
    sealed = tip(work)
    h = liza(work, now=Clock(offset=100))
    for i in range(3):
        h.do(Note, message=f"n{i}")
    again = cli(work, "seal", "--every", "5", "--no-sync", "--json")
    assert again.returncode == 0 and '"since_newest_seal": 3' in again.stdout, again.stdout
    assert Store.discover(work).resolve("refs/liza/state~3").id == pygit2.Oid(hex=sealed)  # type: ignore[union-attr]
    for i in range(2):
        h.do(Note, message=f"m{i}")
    before = tip(work)
    assert cli(work, "seal", "--every", "5", "--no-sync").returncode == 0
    assert tip(work) != before and seals.is_seal(Store.discover(work).resolve(None))  # type: ignore[arg-type]
    bad = cli(work, "seal", "--every", "0", "--no-sync")
    assert bad.returncode == 1 and len(bad.stderr.strip().splitlines()) == 1


# ------------------------------------------------------------------------------------------------
# Signatures required: the seal must be the human's, signed


needs_keygen = pytest.mark.skipif(shutil.which("ssh-keygen") is None,
                                  reason="ssh-keygen (openssh-client) is not installed: it makes "
                                         "the human's key")


@needs_keygen
def test_where_signatures_are_required_an_unsigned_seal_is_refused_and_a_signed_one_joins(
        tmp_path: Path, bare: Path) -> None:
    from tests.git.test_signatures import make_team
    seed_ = make_team(tmp_path, bare)  # human key on the board, signatures required, pushed
    h = liza(seed_, now=Clock(offset=100))
    for i in range(20):
        h.do(Note, message=f"n{i}")
    signed = h.do(Seal).commit
    for i in range(3):
        h.do(Note, message=f"m{i}")
    git(seed_, "push", "-q", "origin", f"{STATE_REF}:{STATE_REF}")
    fresh, rep = join(str(bare), tmp_path / "fresh")
    assert tip(fresh) == tip(bare) and rep.verified == 3
    v = cli(fresh, "verify", "--json")
    assert v.returncode == 0 and signed in v.stdout
    # An unsigned seal on top, pushed with plain git to a hookless copy: a new clone refuses it,
    # before any of the board is adopted.
    hookless = tmp_path / "hookless.git"
    git(tmp_path, "clone", "-q", "--mirror", str(bare), str(hookless))
    git(seed_, "remote", "add", "hookless", str(hookless))
    forged = _forged_seal(seed_)
    git(seed_, "push", "-q", "--no-verify", "hookless", f"+{forged}:{STATE_REF}")
    dest = tmp_path / "victim"
    git(tmp_path, "clone", "-q", str(hookless), str(dest))
    git(dest, "config", "liza.joinDepth", "8")
    with pytest.raises(RemoteRefused) as err:
        engine.pull(Store.discover(dest), remote_of(Store.discover(dest), "origin"))
    assert forged[:12] in str(err.value) and "unsigned" in str(err.value)
    assert tip(dest) is None and tip(dest, "refs/remotes/origin/liza/state") is None
    r = cli(dest, "pull")
    assert r.returncode == 4 and len(r.stderr.strip().splitlines()) == 1 and tip(dest) is None


@needs_keygen
def test_a_pinned_human_key_refuses_a_seal_whose_board_turned_signatures_off(
        tmp_path: Path, bare: Path) -> None:
    """Where the forger rewrites the board at the seal (signatures off, no signature), only a
    clone that pins the human's key can tell: `git config liza.humanKey`."""
    from tests.git.test_signatures import make_team
    seed_ = make_team(tmp_path, bare)
    pub = git(seed_, "config", "user.signingkey")
    key_line = Path(pub).read_text().strip()
    # The forger's chain: the same board, signatures off (a legal-looking history from its own
    # clone with no key), then an unsigned seal.
    forger = tmp_path / "forger"
    git(tmp_path, "init", "-q", "-b", "main", str(forger))
    f = liza(forger, now=Clock(offset=100))
    from gitliza.core.ops import Init
    f.do(Init, goal="ship it")
    f.do(ConfigSet, key="signatures", value="off")
    f.do(Seal)
    hookless = tmp_path / "hookless.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(hookless))
    git(forger, "push", "-q", str(hookless), f"{STATE_REF}:{STATE_REF}")
    for pinned, name in ((None, "trusting"), (key_line, "pinning")):
        dest = tmp_path / name
        git(tmp_path, "init", "-q", "-b", "main", str(dest))
        git(dest, "remote", "add", "origin", str(hookless))
        if pinned is not None:
            git(dest, "config", "liza.humanKey", pinned)
            with pytest.raises(RemoteRefused) as err:
                engine.pull(Store.discover(dest), remote_of(Store.discover(dest), "origin"))
            assert "pins the human's key" in str(err.value) and tip(dest) is None
        else:
            engine.pull(Store.discover(dest), remote_of(Store.discover(dest), "origin"))  # trusted on first use, as documented
            assert tip(dest) == tip(hookless)
    # The real board's signed seal passes the same pin, by fingerprint too.
    h = liza(seed_, now=Clock(offset=100))
    h.do(Seal)
    git(seed_, "push", "-q", "origin", f"{STATE_REF}:{STATE_REF}")
    from gitliza.core.keyring.sshsig import parse_public
    dest = tmp_path / "pinned-good"
    git(tmp_path, "init", "-q", "-b", "main", str(dest))
    git(dest, "remote", "add", "origin", str(bare))
    git(dest, "config", "liza.humanKey", parse_public(key_line).fingerprint)
    engine.pull(Store.discover(dest), remote_of(Store.discover(dest), "origin"))
    assert tip(dest) == tip(bare)


def test_repair_in_a_joined_clone_asks_for_the_whole_history_first(tmp_path: Path) -> None:
    """`repair` looks for the last commit whose whole history verifies: a clone that joined at a
    seal says what it lacks and changes nothing, and repairs once `verify --full` fetched it."""
    from tests.forgery import forge, push_forgery
    bare, work = seed(tmp_path)
    grow(work, 30, 4)
    fresh, _ = join(str(bare), tmp_path / "fresh")
    forged = forge(work, "task-1")
    push_forgery(work, forged)
    r = cli(fresh, "repair")
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "joined the board at a seal" in r.stderr and tip(bare) == forged
    assert cli(fresh, "verify", "--full").returncode == 0  # its own board is sound
    r = cli(fresh, "repair")
    assert r.returncode == 0, r.stderr
    assert tip(bare) != forged and tip(bare) == tip(fresh)
