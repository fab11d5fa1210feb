"""Seals: where a clone's trust in a long board may start (docs/multi-machine.md, "Joining a long
board"; docs/enforcement.md, "Trust model").

A seal is the human's `seal` op (gitliza/core/ops/keys.py): a state commit whose tree is its
parent's. Signed, it binds the whole chain below it, since every commit names its parent by hash.
`verify` (without `--full`) and a clone that has no board yet replay from the newest seal
instead of the root; everything after the seal is replayed as always, and `verify --full`, the
server hook and every incremental sync replay the seal itself as an ordinary op (only the
human may write one, and its tree must be its parent's).

What a seal must be to start a replay (`check`), else the board is refused, never read from an
older seal:
- its record parses as `seal` by `human`, and its tree is a board in this gitliza's format;
- where the board at the seal has `signatures = required`: signed by the human's current key on
  that board (under `warn` a missing or wrong signature is reported, under `off` it is not read);
- where the clone pins the human's key (`git config liza.humanKey` = the public key line or its
  `SHA256:` fingerprint): signed by that key, whatever the board says. That is the one anchor a
  clone holds that no remote can forge. Without it the human's key is trusted on first use, as
  the root's `init` was before seals: the remote could equally have served a whole new chain.
"""
from __future__ import annotations

import pygit2

from gitliza.core.encoding import record

from gitliza.core.keyring import signers
from gitliza.core.board import Board
from gitliza.errors import InconsistentState, LizaError, ValidationError
from gitliza.git.source import GitSource, check_format
from gitliza.git.store import Store
from gitliza.services.verify.engine import Report, VerifyFailure, read_signer
from gitliza.git.remotes import shallow
from gitliza.git.remotes.remote import resolve
from gitliza.services.verify import engine
from gitliza.git.repository import repo_path

PIN_KEY = "liza.humanKey"


def is_seal(commit: pygit2.Commit) -> bool:
    """Whether the commit's record names the `seal` op (cheap: no parse)."""
    return record.is_seal_message(commit.message)


def _first_seal(repo: pygit2.Repository, tip: pygit2.Oid, stop: pygit2.Oid | None,
                limit: int | None) -> tuple[int, pygit2.Commit] | None:
    """(commits above it, the newest seal) on the first-parent walk down from `tip`, above `stop`
    and within `limit` commits; None when the walk meets neither a seal nor a commit it holds."""
    oid: pygit2.Oid | None = tip
    n = 0
    while oid is not None and oid != stop and (limit is None or n < limit):
        commit = repo.get(oid)
        if not isinstance(commit, pygit2.Commit):
            return None
        if is_seal(commit):
            return n, commit
        oid = commit.parent_ids[0] if commit.parent_ids else None
        n += 1
    return None


def newest(repo: pygit2.Repository, tip: pygit2.Oid,
           stop: pygit2.Oid | None = None) -> pygit2.Commit | None:
    """The newest seal at or below `tip`, above `stop` (exclusive); None when there is none in
    the commits this clone holds."""
    found = _first_seal(repo, tip, stop, None)
    return found[1] if found is not None else None


def since_newest(repo: pygit2.Repository, tip: pygit2.Oid, limit: int) -> int | None:
    """How many commits lie above the newest seal at or below `tip` (0: `tip` is one), looking
    `limit` commits down at most; None when there is none that near (or at all)."""
    found = _first_seal(repo, tip, None, limit)
    return found[0] if found is not None else None


def pinned(repo: pygit2.Repository) -> str | None:
    """The human's key this clone pins (`git config liza.humanKey`), or None."""
    try:
        value = str(repo.config[PIN_KEY]).strip()
    except (KeyError, pygit2.GitError):
        return None
    return value or None


def check(store: Store, commit: pygit2.Commit, report: Report | None = None) -> None:
    """Raise VerifyFailure unless `commit` is a seal this clone may start a replay from (the module
    docstring). A signature problem accepted under `warn` goes to `report.unsigned`."""
    oid = str(commit.id)
    try:
        rec = record.parse(commit.message)
        check_format(commit.tree, oid)
    except LizaError as e:
        raise VerifyFailure(oid, "seal", f"not a seal this clone can start from: {e}") from None
    op = rec.op
    if op.NAME != "seal" or op.actor != "human":
        raise VerifyFailure(oid, op.NAME, "not a seal by the human: no replay starts here")
    board = Board(GitSource(store.repo, commit.tree))
    pin = pinned(store.repo)
    policy = signers.policy(board, board)
    if policy == signers.OFF and pin is None:
        return  # nothing to check: the clone trusts its remote for the board at the seal
    signer, bad = read_signer(commit)
    if pin is not None:
        problem = _against_pin(pin, signer, bad)
        if problem is not None:
            raise VerifyFailure(oid, "seal", f"{problem} ({PIN_KEY} pins the human's key)")
    if policy == signers.OFF:
        return
    problem = signers.judge(board, board, op, signer, bad)
    if problem is None:
        if report is not None:
            report.signed += 1
        return
    if policy == signers.REQUIRED:
        raise VerifyFailure(oid, "seal", f"actor human: {problem} (signatures = required): a "
                            "seal not signed by the human's key is no place to start")
    if report is not None:
        report.unsigned.append((oid, "seal", "human", problem))


def _against_pin(pin: str, signer: str | None, bad: str | None) -> str | None:
    from gitliza.core.keyring.sshsig import parse_public
    if bad is not None:
        return f"bad signature on the seal: {bad}"
    if signer is None:
        return "the seal is unsigned"
    try:
        want = pin if pin.startswith("SHA256:") else parse_public(pin).fingerprint
    except LizaError as e:
        raise ValidationError(f"git config {PIN_KEY}: {e}") from None
    have = parse_public(signer).fingerprint
    return None if have == want else f"the seal is signed by {have}, not the pinned {want}"


def start(store: Store, tip: pygit2.Oid, stop: pygit2.Oid | None = None,
          report: Report | None = None) -> pygit2.Commit | None:
    """The newest seal at or below `tip` (above `stop`), checked: where a replay of `tip` may
    start. None: no seal (replay from `stop`, or the root). A newest seal that fails the check
    refuses the board (VerifyFailure): falling back to an older one would replay the forged seal
    as an op and refuse it there anyway, only later."""
    seal = newest(store.repo, tip, stop)
    if seal is not None:
        check(store, seal, report)
    return seal


def verify(store: Store, at: str | None = None, since: str | None = None, *, full: bool = False,
           remote: str | None = None, timeout: float = 600.0) -> Report:
    """`git liza verify`: from the newest seal (checked) to the tip, else from the root; with
    `since`, from there (trusted); with `full`, the whole chain from the root, fetching first what
    a shallow join left on `remote` (None: liza.remote, else origin)."""
    tip = store.resolve(at)
    if tip is None:
        raise InconsistentState(f"{store.ref} does not exist: nothing to verify",
                                hint="run `git liza init GOAL` first")
    if full and shallow.boundary_below(store.repo, tip.id) is not None:
        # Only where the board's own chain is cut (a project checkout may be shallow too).
        path = repo_path(store.repo)
        shallow.unshallow(path, resolve(path, remote), timeout)
        store.reopen()
    if full or since is not None:
        return engine.verify(store, at=at, since=since)
    report = Report()
    seal = start(store, tip.id, report=report)
    if seal is None:
        return engine.verify(store, at=at)
    out = engine.verify(store, at=at, since=str(seal.id))
    out.seal = str(seal.id)
    out.signed += report.signed
    out.unsigned[:0] = report.unsigned
    return out
