"""Signed board commits (core/keyring/sshsig.py, core/keyring/signers.py, git/signing.py): every forgery of who
made a transition is refused by `git liza verify`, by the server hook and by sync, with the board
unmoved; stock git (`verify-commit`, `log --show-signature`) checks the same signatures.

Real repositories, a real bare remote with the real server hook, real `ssh-keygen` keys for the
human, real `git verify-commit`. Forgeries are written the way an attacker would: through the
store's write path with the local checks bypassed and another key (or none) in the signer.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from gitliza.services.api import Liza
from gitliza.core import clock
from gitliza.core.keyring import sshsig
from gitliza.core.ops import Add, Claim, ClaimReview, ConfigSet, Register, Submit, Verdict, apply
from gitliza.core.ops.keys import Rekey
from gitliza.git import signing
from gitliza.git.repository import common_dir
from gitliza.git.store import Store
from gitliza.hooks.install import install
from gitliza.services.verify.engine import VerifyFailure, replay
from tests.conftest import git

PY = sys.executable
BIN = str(Path(PY).parent)
pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None,
                                reason="ssh-keygen (openssh-client) is not installed: it makes "
                                       "the human's key and checks signatures as git does")


def run(cwd: Path, *args: str, agent: str | None = None,
        **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", **env}
    if agent:
        full["LIZA_AGENT_ID"] = agent
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, env=full,
                          check=False)


def tip(path: Path) -> str | None:
    return git(path, "for-each-ref", "--format=%(objectname)", "refs/liza/state") or None


def human_key(where: Path) -> Path:
    """A real OpenSSH ed25519 key pair made by ssh-keygen; the private key's path."""
    key = where / "human_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "human", "-f", str(key)],
                   check=True)
    return key


@pytest.fixture
def team(tmp_path: Path, bare: Path) -> tuple[Path, Path]:
    """(bare remote with the server hook, a clone holding every key): human key on the board,
    coder-1, coder-2, rev-1 registered with generated keys, task t1 ready, signatures required,
    all pushed and accepted."""
    install(bare, server=True, python=PY)
    return bare, make_team(tmp_path, bare)


def make_team(tmp_path: Path, bare: Path) -> Path:
    seed = tmp_path / "seed"
    git(tmp_path, "clone", "-q", str(bare), str(seed))
    (seed / "s").write_text("the spec\n")
    git(seed, "add", "s")
    git(seed, "commit", "-q", "-m", "initial")
    git(seed, "branch", "integration")
    key = human_key(tmp_path)
    git(seed, "config", "gpg.format", "ssh")
    git(seed, "config", "user.signingkey", f"{key}.pub")  # git's own convention: the .pub
    h = Liza.open(seed, "human")
    from gitliza.core.ops import Init
    h.do(Init, goal="ship it")
    h.do(Rekey, agent="human", key=Path(f"{key}.pub").read_text())
    common = common_dir(h.repo)
    for agent, role in (("coder-1", "coder"), ("coder-2", "coder"), ("rev-1", "code_reviewer")):
        made = signing.new_key()
        signing.save(common, agent, made)
        h.do(Register, agent=agent, role=role, key=made.public.line)
    h.do(ConfigSet, key="signatures", value="required")
    h.do(Add, task="t1", description="do it", spec_ref="s", done_when="w", scope="x", ready=True)
    r = run(seed, "git", "push", "-q", "origin", "main", "integration",
            "refs/liza/state:refs/liza/state")
    assert r.returncode == 0, r.stderr
    return seed


def to_review(c: Path) -> None:
    base = git(c, "rev-parse", "main")
    Liza.open(c, "coder-1").do(Claim, task="t1", worktree=".worktrees/t1", base_commit=base)
    Liza.open(c, "coder-1").do(Submit, task="t1", commit=base)
    Liza.open(c, "rev-1").do(ClaimReview, task="t1")


def forge(c: Path, op: object, key: signing.Key | None, *, raw: bytes | None = None) -> str:
    """Write `op`'s commit on the tip (a legal transition) signed by `key` (None: unsigned), or
    the object `raw` as given, bypassing the write path's checks; move refs/liza/state to it."""
    store = Store.discover(c)
    if raw is None:
        signer = signing.Signer(c / "no-keys-here", None)  # only the key given, if any
        if key is not None:
            signer.add(op.actor, key)  # type: ignore[attr-defined]
        store._signer = signer
        parent = store.resolve(None)
        outcome = apply(store.board_at(parent), op)  # type: ignore[arg-type]
        oid = store.write_commit(parent, outcome, op)  # type: ignore[arg-type]
    else:
        oid = store.repo.odb.write(pygit2.enums.ObjectType.COMMIT, raw)
    store.repo.references.create(store.ref, oid, force=True)
    return str(oid)


def agent_key(c: Path, agent: str) -> signing.Key:
    return signing.load(c / ".git" / "liza" / "keys" / agent)


def _now() -> str:
    from gitliza.services.api import now_utc
    return now_utc()


# The four forgeries of the issue, each a function of the seeded clone returning (commit, what the
# refusal must say).
def coder_signs_a_verdict_as_reviewer(c: Path) -> tuple[str, str]:
    to_review(c)
    op = Verdict(actor="rev-1", time=_now(), task="t1", verdict="approve",
                 commit=git(c, "rev-parse", "main"))
    bad = forge(c, op, agent_key(c, "coder-1"))
    return bad, "actor rev-1: signed by coder-1's key"


def revoked_key(c: Path) -> tuple[str, str]:
    old = agent_key(c, "coder-1")
    made = signing.new_key()
    Liza.open(c, "human").do(Rekey, agent="coder-1", key=made.public.line)
    op = Claim(actor="coder-1", time=_now(), task="t1", worktree=".worktrees/t1",
               base_commit=git(c, "rev-parse", "main"))
    bad = forge(c, op, old)
    return bad, "actor coder-1: signed by coder-1's revoked key"


def unsigned(c: Path) -> tuple[str, str]:
    op = Add(actor="human", time=_now(), task="t2", description="d", spec_ref="s",
             done_when="w", scope="x", ready=True)
    bad = forge(c, op, None)
    return bad, "actor human: unsigned: human (key SHA256:"


def edited_after_signing(c: Path) -> tuple[str, str]:
    """coder-1's signed claim, rewritten (one second later: still a legal transition) and
    re-signed by coder-2, who wants it on coder-1's name."""
    base = git(c, "rev-parse", "main")
    done = Liza.open(c, "coder-1").do(Claim, task="t1", worktree=".worktrees/t1",
                                      base_commit=base)
    git(c, "update-ref", "refs/liza/state", "refs/liza/state~1")
    op = dataclasses.replace(done.op, time=clock.plus(done.op.time, 1))
    bad = forge(c, op, agent_key(c, "coder-2"))
    return bad, "actor coder-1: signed by coder-2's key"


def edited_keeping_the_signature(c: Path) -> tuple[str, str]:
    """coder-1's signed claim, its time edited, its original signature kept."""
    base = git(c, "rev-parse", "main")
    done = Liza.open(c, "coder-1").do(Claim, task="t1", worktree=".worktrees/t1",
                                      base_commit=base)
    repo = Store.discover(c).repo
    armored, _payload = sshsig.split_commit(repo[pygit2.Oid(hex=done.commit)].read_raw())
    git(c, "update-ref", "refs/liza/state", "refs/liza/state~1")
    op = dataclasses.replace(done.op, time=clock.plus(done.op.time, 1))
    unsigned_copy = forge(c, op, None)
    body = repo[pygit2.Oid(hex=unsigned_copy)].read_raw()
    assert armored is not None
    bad = forge(c, op, None, raw=sshsig.add_to_commit(body, armored.decode()))
    return bad, "actor coder-1: bad signature on coder-1's commit: the signature by SHA256:"


FORGERIES = [coder_signs_a_verdict_as_reviewer, revoked_key, unsigned, edited_after_signing,
             edited_keeping_the_signature]


@pytest.mark.parametrize("forgery", FORGERIES, ids=lambda f: f.__name__)
def test_forgery_refused_by_verify_and_the_server_hook(team: tuple[Path, Path],
                                                       forgery: object) -> None:
    bare, seed = team
    before = tip(bare)
    bad, says = forgery(seed)  # type: ignore[operator]
    # verify: exit 4, naming the commit, its op and its actor
    r = run(seed, "git", "liza", "verify")
    assert r.returncode == 4, r.stderr
    assert f"state commit {bad[:12]}" in r.stderr and says in r.stderr, r.stderr
    assert "signatures = required" in r.stderr
    # the server hook: the push is refused with the same reason, the remote board unmoved
    r = run(seed, "git", "push", "--porcelain", "origin", "refs/liza/state:refs/liza/state")
    assert r.returncode != 0
    line = next(ln for ln in r.stderr.splitlines() if "gitliza: refused refs/liza/state:" in ln)
    assert bad[:12] in line and says in line, line
    assert tip(bare) == before


def test_sync_of_a_forged_board_is_refused_and_the_remote_kept(team: tuple[Path, Path]) -> None:
    """`git liza sync` from the forger's clone: the server refuses, nothing moves remotely."""
    bare, seed = team
    before = tip(bare)
    bad, says = coder_signs_a_verdict_as_reviewer(seed)
    r = run(seed, "git", "liza", "sync", "origin")
    assert r.returncode != 0
    assert bad[:12] in r.stderr and says in r.stderr, r.stderr
    assert tip(bare) == before


@pytest.mark.skipif(importlib.util.find_spec("gitliza.services.adopt") is None,
                    reason="sync does not check fetched commits yet (issue 17, gitliza/services/adopt.py)")
@pytest.mark.parametrize("forgery", [coder_signs_a_verdict_as_reviewer, unsigned],
                         ids=lambda f: f.__name__)
def test_sync_refuses_a_forgery_fetched_from_a_remote_without_hooks(
        tmp_path: Path, bare: Path, forgery: object) -> None:
    """A hosted remote runs no hook: the forger's plain push lands, and every other clone's sync
    refuses what it fetches (exit 4, naming the commit and the actor), its own board unmoved."""
    seed = make_team(tmp_path, bare)
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(bare), str(other))
    r = run(other, "git", "liza", "pull", "origin")
    assert r.returncode == 0, r.stderr
    mine = tip(other)
    bad, says = forgery(seed)  # type: ignore[operator]
    r = run(seed, "git", "push", "-q", "--no-verify", "origin", "refs/liza/state:refs/liza/state")
    assert r.returncode == 0 and tip(bare) == bad, r.stderr
    r = run(other, "git", "liza", "sync", "origin")
    assert r.returncode == 4, r.stdout + r.stderr
    assert bad[:12] in r.stderr and says in r.stderr, r.stderr
    assert tip(other) == mine


def test_stock_git_verifies_every_state_commit_and_rejects_a_tampered_one(
        team: tuple[Path, Path], tmp_path: Path) -> None:
    _bare, seed = team
    to_review(seed)
    Liza.open(seed, "rev-1").do(Verdict, task="t1", verdict="approve",
                                commit=git(seed, "rev-parse", "main"))
    allowed = tmp_path / "allowed_signers"
    r = run(seed, "git", "liza", "allowed-signers", "--output", str(allowed))
    assert r.returncode == 0, r.stderr
    text = allowed.read_text()
    assert text.count("ssh-ed25519") == 4 and "rev-1 namespaces=\"git\" ssh-ed25519" in text
    cfg = f"gpg.ssh.allowedSignersFile={allowed}"
    r = run(seed, "git", "-c", cfg, "verify-commit", "refs/liza/state")
    assert r.returncode == 0 and 'Good "git" signature for rev-1' in r.stderr, r.stderr
    log = git(seed, "-c", cfg, "log", "--format=%G? %GS %s", "refs/liza/state")
    # every commit is signed, and good ("G"): init included (user.signingkey was already set)
    assert all(ln.startswith("G ") for ln in log.splitlines()), log
    assert "G human init goal-1" in log
    assert "G rev-1 verdict t1" in log and "G coder-1 claim t1" in log
    # a tampered copy of the tip: same signature, another subject
    raw = Store.discover(seed).repo.revparse_single("refs/liza/state").read_raw()
    tampered = raw.replace(b"verdict t1", b"verdict t9", 1)
    oid = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=seed,
                         input=tampered, capture_output=True, check=True).stdout.decode().strip()
    r = run(seed, "git", "-c", cfg, "verify-commit", oid)
    assert r.returncode != 0 and "Good" not in r.stderr, r.stderr


def test_sshsig_interoperates_with_ssh_keygen(tmp_path: Path) -> None:
    """Ours verified by `ssh-keygen -Y verify`, ssh-keygen's verified by ours."""
    key = human_key(tmp_path)
    mine = signing.load(key)
    data = b"tree 0\nauthor x\n\nmessage\n"
    (tmp_path / "data").write_bytes(data)
    (tmp_path / "data.sig").write_text(sshsig.sign(mine.private, mine.public, data))
    (tmp_path / "allowed").write_text(f"me {mine.public.line}\n")
    r = subprocess.run(["ssh-keygen", "-Y", "verify", "-f", str(tmp_path / "allowed"), "-I", "me",
                        "-n", "git", "-s", str(tmp_path / "data.sig")], input=data,
                       capture_output=True, check=False)
    assert r.returncode == 0, r.stderr
    subprocess.run(["ssh-keygen", "-q", "-Y", "sign", "-f", str(key), "-n", "git",
                    str(tmp_path / "data")], check=True, capture_output=True)
    theirs = (tmp_path / "data.sig").read_bytes()
    assert sshsig.verify(theirs, data) == mine.public
    with pytest.raises(sshsig.BadSignature, match="does not match"):
        sshsig.verify(theirs, data + b"x")


def test_the_write_path_refuses_what_it_cannot_sign(team: tuple[Path, Path]) -> None:
    """Under `required`, an actor this clone holds no key for (or a stale key) is refused before
    anything is written: exit 1, the board unmoved."""
    _bare, seed = team
    before = tip(seed)
    moved = seed / ".git" / "liza" / "keys" / "coder-1"
    moved.rename(moved.with_name("elsewhere"))
    r = run(seed, "git", "liza", "claim", "t1", agent="coder-1")
    assert r.returncode == 1 and "cannot sign as coder-1: no private key at" in r.stderr, r.stderr
    assert tip(seed) == before
    signing.save(common_dir(pygit2.Repository(str(seed))), "coder-1", signing.new_key())
    r = run(seed, "git", "liza", "claim", "t1", agent="coder-1")
    assert r.returncode == 1 and "is not its key on the board" in r.stderr, r.stderr
    assert tip(seed) == before


def test_cli_keys_rotation_and_revocation_keep_old_commits_valid(team: tuple[Path, Path],
                                                                 tmp_path: Path) -> None:
    _bare, seed = team
    r = run(seed, "git", "liza", "register", "coder-3", "--role", "coder", "--json")
    assert r.returncode == 0, r.stderr  # signatures are on: a key is generated
    keyfile = seed / ".git" / "liza" / "keys" / "coder-3"
    assert keyfile.exists() and (keyfile.stat().st_mode & 0o777) == 0o600
    assert git(seed, "ls-tree", "-r", "--name-only", "refs/liza/state").find("keys/") < 0
    r = run(seed, "git", "liza", "claim", "t1", agent="coder-3")
    assert r.returncode == 0, r.stderr
    r = run(seed, "git", "liza", "rekey", "coder-3", "--generate-key")
    assert r.returncode == 0, r.stderr
    r = run(seed, "git", "liza", "heartbeat", agent="coder-3")
    assert r.returncode == 0, r.stderr
    r = run(seed, "git", "liza", "rekey", "coder-3", "--revoke")
    assert r.returncode == 0, r.stderr
    assert list(keyfile.parent.glob("coder-3.retired-*"))
    r = run(seed, "git", "liza", "heartbeat", agent="coder-3")
    assert r.returncode == 1 and "coder-3 has no key on the board" in r.stderr
    # only the human rekeys
    r = run(seed, "git", "liza", "rekey", "coder-1", "--generate-key", agent="rev-1")
    assert r.returncode == 1 and "rekey is not allowed for rev-1" in r.stderr
    r = run(seed, "git", "liza", "register", "planner-1", "--role", "planner")
    assert r.returncode == 0, r.stderr
    r = run(seed, "git", "liza", "config", "signatures", "off", agent="planner-1")
    assert r.returncode == 1 and "the human's to set, not planner-1's" in r.stderr
    # every commit, made under keys since retired, still verifies
    r = run(seed, "git", "liza", "verify", "--json")
    assert r.returncode == 0 and '"signature_warnings": []' in r.stdout, r.stderr
    allowed = tmp_path / "allowed"
    allowed.write_text(run(seed, "git", "liza", "allowed-signers").stdout)
    assert allowed.read_text().count("valid-before=") == 2  # coder-3's two retired keys
    cfg = f"gpg.ssh.allowedSignersFile={allowed}"
    log = git(seed, "-c", cfg, "log", "--format=%G? %GS %s", "refs/liza/state~6..refs/liza/state")
    assert all(ln.startswith("G ") for ln in log.splitlines()), log


def test_unsigned_board_verifies_under_off_and_warn_and_required_applies_from_its_commit(
        repo: Path) -> None:
    from gitliza.core.ops import Init
    h = Liza.open(repo, "human")
    h.do(Init, goal="old board")
    h.do(Register, agent="coder-1", role="coder")
    store = Store.discover(repo)
    assert replay(store, store.tip()).unsigned == []  # off: signatures not even read
    h.do(ConfigSet, key="signatures", value="warn")
    h.do(Register, agent="coder-2", role="coder")
    r = run(repo, "git", "liza", "verify")
    assert r.returncode == 0, r.stderr
    assert "(register): actor human: unsigned" in r.stderr and "signatures = warn" in r.stderr
    # required needs the human's key first
    r = run(repo, "git", "liza", "config", "signatures", "required")
    assert r.returncode == 1 and "needs the human's key" in r.stderr
    key = human_key(repo.parent)
    git(repo, "config", "gpg.format", "ssh")
    git(repo, "config", "user.signingkey", str(key))
    for args in (("rekey", "human", "--key", f"{key}.pub"), ("config", "signatures", "required"),
                 ("register", "coder-3", "--role", "coder")):
        r = run(repo, "git", "liza", *args)
        assert r.returncode == 0, r.stderr
    report = replay(store, store.tip())
    assert report.signed == 3 and len(report.unsigned) == 2  # the warn-era commits, reported
    # the human's key leaves: their next op cannot be signed, and a forged unsigned one is refused
    git(repo, "config", "--unset", "user.signingkey")
    r = run(repo, "git", "liza", "add", "t9", "--desc", "d")
    assert r.returncode == 1 and "cannot sign as human" in r.stderr
    op = Add(actor="human", time=_now(), task="t9", description="d")
    bad = forge(repo, op, None)
    with pytest.raises(VerifyFailure, match="unsigned"):
        replay(store, store.tip())
    assert bad


def test_pushers_bound_to_agents_on_the_server(team: tuple[Path, Path]) -> None:
    bare, seed = team
    git(bare, "config", "--add", "liza-pusher.alice.agents", "coder-1")
    git(bare, "config", "--add", "liza-pusher.lead.agents", "*")
    before = tip(bare)
    base = git(seed, "rev-parse", "main")
    done = Liza.open(seed, "coder-1").do(Claim, task="t1", worktree=".worktrees/t1",
                                         base_commit=base)
    Liza.open(seed, "human").do(Add, task="t2", description="d")
    push = ("git", "push", "--porcelain", "origin", "refs/liza/state:refs/liza/state")
    r = run(seed, *push, GL_USERNAME="alice")
    line = next(ln for ln in r.stderr.splitlines() if "gitliza: refused" in ln)
    assert "(actor human): pusher alice may act only as coder-1" in line
    assert tip(bare) == before
    r = run(seed, *push, GITEA_PUSHER_NAME="mallory")
    assert "pusher mallory (GITEA_PUSHER_NAME) is not bound to any agent" in r.stderr
    r = run(seed, *push)
    assert "the host did not say who is pushing" in r.stderr
    assert tip(bare) == before
    r = run(seed, *push, REMOTE_USER="lead")
    assert r.returncode == 0, r.stderr
    assert tip(bare) == tip(seed) and done.commit


def test_an_exported_required_board_imports_signed_by_the_key_it_carries(
        team: tuple[Path, Path], tmp_path: Path) -> None:
    _bare, seed = team
    r = run(seed, "git", "liza", "export", "--out", str(tmp_path / "exp"), "--no-log")
    assert r.returncode == 0, r.stderr
    new = tmp_path / "new"
    git(tmp_path, "init", "-q", str(new))
    state = str(tmp_path / "exp" / "state.yaml")
    r = run(new, "git", "liza", "import", state)
    assert r.returncode == 1 and "cannot sign as human" in r.stderr, r.stderr
    assert tip(new) is None
    for k in ("gpg.format", "user.signingkey"):
        git(new, "config", k, git(seed, "config", k))
    r = run(new, "git", "liza", "import", state)
    assert r.returncode == 0, r.stderr
    r = run(new, "git", "liza", "verify", "--json")
    assert r.returncode == 0 and '"signed": 1' in r.stdout, r.stdout + r.stderr


def test_warn_reports_and_accepts_in_verify_and_the_server_hook(team: tuple[Path, Path]) -> None:
    bare, seed = team
    Liza.open(seed, "human").do(ConfigSet, key="signatures", value="warn")
    bad, _says = unsigned(seed)
    r = run(seed, "git", "liza", "verify")
    assert r.returncode == 0, r.stderr
    assert f"state commit {bad[:12]} (add): actor human: unsigned" in r.stderr
    assert "(accepted: signatures = warn)" in r.stderr
    r = run(seed, "git", "push", "--porcelain", "origin", "refs/liza/state:refs/liza/state")
    assert r.returncode == 0, r.stderr
    assert f"gitliza: warning: state commit {bad[:12]} (add): actor human: unsigned" in r.stderr
    assert tip(bare) == bad


def test_a_renewal_is_signed_and_the_server_refuses_an_unsigned_or_misattributed_one(
        team: tuple[Path, Path]) -> None:
    """Liveness off the audit chain (refs/liza/live/<agent>) is signed like the board: the
    clone's renewal carries coder-1's signature and is accepted; one unsigned, or signed by
    another agent's key, is refused by the server under `required`, and stock git sees whose."""
    from gitliza.core import clock
    from gitliza.core.keyring import sshsig
    from gitliza.core.presence.renewals import Renewal
    from gitliza.git import liveref
    bare, c = team
    base = git(c, "rev-parse", "main")
    Liza.open(c, "coder-1").do(Claim, task="t1", worktree=".worktrees/t1", base_commit=base)
    assert run(c, "git", "push", "-q", "origin", "refs/liza/state:refs/liza/state").returncode == 0
    r = run(c, "git", "liza", "heartbeat", "--task", "t1", agent="coder-1")
    assert r.returncode == 0, r.stderr
    live = git(c, "rev-parse", "refs/liza/live/coder-1")
    signer, bad = sshsig.commit_signer(Store.discover(c).repo[live].read_raw())
    assert bad is None and signer == agent_key(c, "coder-1").public.line
    assert run(c, "git", "push", "-q", "origin",
               "refs/liza/live/coder-1:refs/liza/live/coder-1").returncode == 0
    now = clock.plus(_now(), 5)
    repo = Store.discover(c).repo
    rec = Renewal(agent="coder-1", heartbeat=now, task="t1", lease_expires=clock.plus(now, 200))
    for sign, why in ((lambda body, _a: body, "unsigned"),
                      (lambda body, _a: sshsig.add_to_commit(body, sshsig.sign(
                          agent_key(c, "coder-2").private, agent_key(c, "coder-2").public,
                          body)), "not signed by its current key")):
        forged = liveref.write(repo, "coder-1", lambda _cur: rec, sign)
        p = run(c, "git", "push", "--porcelain", "origin",
                f"+{forged.commit}:refs/liza/live/coder-1")
        assert p.returncode != 0 and why in p.stderr and "signatures = required" in p.stderr, \
            p.stderr
        assert git(bare, "rev-parse", "refs/liza/live/coder-1") == live
