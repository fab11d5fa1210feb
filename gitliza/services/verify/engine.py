"""Replay verification: the one engine behind `git liza verify` and every enforcing hook.

A state commit is trusted only if it is exactly what gitliza would have written: replaying the op
its trailers record on its parent's board must be a legal transition (the core's `apply`, which
checks the transition table, the actor's role, leases, self-review...), must leave every entity it
touched within the invariants, and must reproduce the commit byte for byte: the same tree, the same
message, author and committer (DESIGN.md section 2: a commit is a pure function of its op and its
parent). The first commit that fails stops the replay with a VerifyFailure naming the commit, the
op and the reason (seed `event-log-invariants.md`: errors include the position, the event type and
the reason), exit code 4.

Speed: consecutive commits share almost every blob, and the store's GitSource caches decoded
entities by blob oid, so each entity version is decoded about once; the tree is recomputed only
along the changed paths, in memory (gitliza/git/objects/trees.py, the write path's builder without its
writes), and the tree computed for one commit is the parsed base of the next.
"""
from __future__ import annotations

import gc
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import pygit2

from gitliza.core.encoding import versions, layout, record

from gitliza.core.keyring import signers as keys
from gitliza.core.board import Board
from gitliza.core.invariants import problems_of_change
from gitliza.core.ops.engine import apply
from gitliza.core.ops.review import Verdict
from gitliza.errors import InconsistentState, LizaError
from gitliza.git import treecheck, treepath
from gitliza.git.remotes import shallow
from gitliza.git.objects import trees
from gitliza.git.commits import signature
from gitliza.git.evidence import evidence_gaps
from gitliza.git.source import GitSource, check_format, decode_blob, format_of
from gitliza.git.store import Store
from gitliza.services.verify.importcommit import replay_import
from gitliza.services.verify.legacy import legacy_tree

ZERO = "0" * 40
NOT_FETCHED = ("the history before it is not in this clone (it joined at a seal, "
               "docs/multi-machine.md): `git liza verify --full` fetches and replays it")


class VerifyFailure(InconsistentState):
    """A state commit that does not replay. `commit` is the full oid, `op` the recorded op name (None
    when the message could not be parsed), `reason` one line."""

    def __init__(self, commit: str, op: str | None, reason: str) -> None:
        self.commit = commit
        self.op = op
        self.reason = " ".join(reason.split())
        # No op name: the commit is refused for what it is (a rewind, not a commit), not for
        # its message; a message that does not parse says so itself (bad record).
        label = f" ({op})" if op else ""
        super().__init__(f"state commit {commit[:12]}{label}: {self.reason}")


@dataclass
class Report:
    """What a successful replay covered."""

    commits: int = 0
    ops: Counter[str] = field(default_factory=Counter)
    base: str | None = None  # the trusted commit the replay started from (None: the root)
    tip: str | None = None
    seconds: float = 0.0
    # Commits accepted in a legacy encoding (legacy.py), oldest first: named, not hidden.
    legacy: list[str] = field(default_factory=list)
    op_of: dict[str, str] = field(default_factory=dict)  # a legacy commit -> its op
    # Signature problems accepted under `signatures = warn`: (commit, op, actor, reason).
    unsigned: list[tuple[str, str, str, str]] = field(default_factory=list)
    signed: int = 0  # commits whose signature was checked and found right
    seal: str | None = None  # the seal the replay started from (services/verify/seals.py)
    # Verdicts whose reviewed commit is not in this clone: their evidence paths went unchecked.
    evidence_unread: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.commits / self.seconds if self.seconds > 0 else 0.0


Progress = Callable[[int, int], None]  # called with (commits checked so far, commits in range)


def chain(repo: pygit2.Repository, new: pygit2.Oid, old: pygit2.Oid | None) -> list[pygit2.Commit]:
    """The commits after `old` up to `new`, oldest first. The state ref is linear: a commit with two
    parents, or a walk that reaches the root without meeting `old` (not a fast-forward), fails."""
    out: list[pygit2.Commit] = []
    oid: pygit2.Oid | None = new
    while oid is not None and oid != old:
        try:
            commit = repo[oid]
        except KeyError:
            raise VerifyFailure(str(oid), None, "commit object is missing") from None
        if not isinstance(commit, pygit2.Commit):
            raise VerifyFailure(str(oid), None, f"is a {commit.type_str}, not a commit")
        parents = commit.parent_ids
        if len(parents) > 1:
            raise VerifyFailure(str(oid), None, f"has {len(parents)} parents: the state history "
                                "is a linear chain, merges are never legal")
        out.append(commit)
        oid = parents[0] if parents else None
    if out and oid is None and not out[-1].parent_ids and \
            shallow.is_boundary(repo, out[-1].id):
        # libgit2 reads a shallow boundary as a root: say what it is, not "not an init".
        raise VerifyFailure(str(out[-1].id), None, NOT_FETCHED)
    if old is not None and oid != old:
        raise VerifyFailure(str(new), None, f"not a fast-forward of {str(old)[:12]}: "
                            "it does not descend from it (history rewritten)")
    out.reverse()
    return out


def replay(store: Store, new: pygit2.Oid | str, old: pygit2.Oid | str | None = None, *,
           progress: Progress | None = None) -> Report:
    """Verify every state commit in old..new (the whole history when `old` is None).

    `old` is trusted (it is what the ref held, or what verify was told to start from); everything
    after it must replay. Raises VerifyFailure at the first commit that does not."""
    started = time.perf_counter()
    repo = store.repo
    new_oid = _oid(new)
    old_oid = _oid(old) if old is not None and str(old) != ZERO else None
    tip = repo.get(new_oid)
    newest = format_of(tip.tree) if isinstance(tip, pygit2.Commit) else None
    if newest is not None and newest > versions.FORMAT_VERSION:
        # A board in a newer format than ours: refused in one line before anything is replayed
        # (its upgrade commit would be refused too, less plainly).
        versions.check_readable(newest, b"", str(new_oid))
    commits = chain(repo, new_oid, old_oid)
    report = Report(base=None if old_oid is None else str(old_oid), tip=str(new_oid))
    parent: pygit2.Commit | None = None
    if old_oid is not None:
        start = repo.get(old_oid)
        if not isinstance(start, pygit2.Commit):
            raise VerifyFailure(str(old_oid), None, "the starting point is not a commit")
        parent = start
        try:
            check_format(parent.tree, str(old_oid))
        except LizaError as e:
            raise VerifyFailure(str(old_oid), None, str(e)) from None
    cache: Decoded = {}
    # Replay allocates many small acyclic objects; the cycle collector only slows it down.
    collecting = gc.isenabled()
    gc.disable()
    try:
        for i, commit in enumerate(commits):
            known = len(report.legacy)
            name = verify_commit(store, parent, commit, cache, legacy=report.legacy,
                                 report=report)
            for oid in report.legacy[known:]:
                report.op_of[oid] = name
            report.ops[name] += 1
            parent = commit
            if progress is not None and (i & 63 == 63 or i == len(commits) - 1):
                progress(i + 1, len(commits))
    finally:
        if collecting:
            gc.enable()
    report.commits = len(commits)
    report.seconds = time.perf_counter() - started
    return report


def verify_commit(store: Store, parent: pygit2.Commit | None, commit: pygit2.Commit,
                  cache: Decoded | None = None, *, legacy: list[str] | None = None,
                  report: Report | None = None) -> str:
    """Check that `commit` is the legal transition its message records, applied to `parent` (None:
    the root, which must be `init` on the empty board), signed as the board's signatures policy
    asks. Returns the op name. A commit accepted only in a legacy encoding is appended to `legacy`
    (its full oid), a signature problem accepted under `warn` to `report.unsigned`."""
    oid = str(commit.id)
    try:
        rec = record.parse(commit.message)
    except LizaError as e:
        raise VerifyFailure(oid, _op_word(commit.message) or "unparsable op",
                            f"bad record: {e}") from None
    op = rec.op
    if parent is None and op.NAME not in ("init", "import"):
        raise VerifyFailure(oid, op.NAME, "the root state commit must be `init` on the empty "
                            "board or an `import`")
    board = Board() if parent is None else Board(ReplaySource(store.repo, parent.tree, cache))
    try:
        if parent is None and op.NAME == "import":
            # The other genesis: its board is in its tree, checked against the digest it records
            # (and below, like every op, the tree against the entities).
            outcome = replay_import(store.repo, commit.tree, op)  # type: ignore[arg-type]
        else:
            outcome = apply(board, op)
    except LizaError as e:  # illegal transition, wrong role, lost lease, bad args...
        raise VerifyFailure(oid, op.NAME, f"replay refused: {e}") from None
    try:
        record.check_consistent(rec, outcome.event)
    except LizaError as e:
        raise VerifyFailure(oid, op.NAME, f"forged trailers: {e}") from None
    # An import records a board written elsewhere as it was (`git liza import` warned of what
    # it breaks); every op after it is held to the invariants.
    bad = [] if op.NAME == "import" else problems_of_change(outcome.board, outcome.changes)
    if bad:
        raise VerifyFailure(oid, op.NAME, f"breaks an invariant: {bad[0]}")
    if isinstance(op, Verdict) and op.evidence:
        # Acceptance evidence: every path it names is in the reviewed commit.
        gaps = evidence_gaps(store.repo, op.commit, op.evidence)
        if gaps:
            raise VerifyFailure(oid, op.NAME, f"evidence {gaps[0]}")
        if gaps is None and report is not None:
            report.evidence_unread.append(oid)
    forbidden = treecheck.op_liza_entry(store.repo, op)  # no `.liza` in a task tree
    if forbidden is not None:
        raise VerifyFailure(oid, op.NAME, forbidden)
    changes = outcome.changes
    if parent is None:
        # A board starts in the format of the gitliza that made it (any this one reads: a
        # format-1 root, then an `upgrade` commit, then format 2), not necessarily ours.
        changes = {versions.FORMAT_KEY: _root_format(commit), **changes}
    # The exact tree: any blob edited by hand, added or removed shows up as a different tree id.
    try:
        built = trees.build(store.repo, parent.tree_id if parent is not None else None,
                            changes, write=False)
    except (LizaError, pygit2.GitError, OSError, KeyError) as e:
        raise VerifyFailure(oid, op.NAME, f"cannot rebuild the tree: {e}") from None
    if built.tree != commit.tree_id:
        older = legacy_tree(store.repo, parent, commit, board, op, changes)
        if older is not None:
            changes, built = older
            if legacy is not None:
                legacy.append(oid)
    if built.tree != commit.tree_id:
        raise VerifyFailure(oid, op.NAME, f"tree {str(commit.tree_id)[:12]} is not what the op "
                            f"produces ({str(built.tree)[:12]}): {_tree_diff(parent, commit, built)}")
    # The rest of the commit: a reworded subject or an author other than the actor misleads anyone
    # reading `git log`, so it is refused like a forged tree.
    if commit.message != record.message(op, outcome.event):
        # Before subjects were escaped, one with a control character was written raw:
        # the one other message accepted, reported as legacy.
        if commit.message != record.message(op, outcome.event, legacy_subject=True):
            raise VerifyFailure(oid, op.NAME, "commit message differs from the one the op produces")
        if legacy is not None:
            legacy.append(oid)
    sig = signature(op)
    for who, s in (("author", commit.author), ("committer", commit.committer)):
        if (s.name, s.email, s.time, s.offset) != (sig.name, sig.email, sig.time, sig.offset):
            raise VerifyFailure(oid, op.NAME, f"{who} {s.name} <{s.email}> at {s.time} is not the "
                                f"op's actor {sig.name} <{sig.email}> at {sig.time}")
    _check_signature(commit, None if parent is None else board, outcome.board, op, report)
    if cache is not None:
        # The next commit reads these entities: they are exactly the ones just written (the tree
        # matched), so hand them over instead of decoding the blobs again.
        for (coll, key), entity in changes.items():
            blob = built.blobs[(coll, key)]
            if blob is not None:
                cache[(coll, key, blob)] = entity
    return op.NAME


def _root_format(commit: pygit2.Commit) -> int:
    """The storage format a board's first commit names, if this gitliza reads it (else the
    one-line refusal: a newer format, or no format at all)."""
    try:
        return check_format(commit.tree, str(commit.id))
    except LizaError as e:
        raise VerifyFailure(str(commit.id), None, str(e)) from None


def _check_signature(commit: pygit2.Commit, before: Board | None, after: Board, op: Any,
                     report: Report | None) -> None:
    """The signatures policy (core/keyring/signers.py): under `required` a commit not signed by its
    actor's current key is refused; under `warn` it is reported and accepted; under `off` the
    signature is not even read (an old unsigned board costs nothing more to verify)."""
    policy = keys.policy(before, after)
    if policy == keys.OFF:
        return
    signer, bad = read_signer(commit)
    problem = keys.judge(before, after, op, signer, bad)
    oid = str(commit.id)
    if problem is None:
        if report is not None:
            report.signed += 1
        return
    if policy == keys.REQUIRED:
        raise VerifyFailure(oid, op.NAME, f"actor {op.actor}: {problem} (signatures = required)")
    if report is not None:
        report.unsigned.append((oid, op.NAME, op.actor, problem))


def read_signer(commit: pygit2.Commit) -> tuple[str | None, str | None]:
    """(the key line that signed `commit`, None) when its signature checks; (None, why) when it
    does not; (None, None) when it is unsigned."""
    from gitliza.core.keyring import sshsig  # cryptography: loaded only for a board that signs
    return sshsig.commit_signer(commit.read_raw())


Decoded = dict[tuple[str, str, pygit2.Oid], Any]


class ReplaySource:
    """A board source over one state tree whose decoded entities live in a cache shared by the
    whole replay, keyed by (collection, key, blob oid): consecutive commits share almost every blob."""

    def __init__(self, repo: pygit2.Repository, tree: pygit2.Tree, cache: Decoded | None) -> None:
        self._tree = tree
        self._cache: Decoded = {} if cache is None else cache
        self._keys = GitSource(repo, tree)

    def get(self, coll: str, key: str) -> Any | None:
        if (coll, key) == versions.FORMAT_KEY:
            return format_of(self._tree)
        path = trees.path_of(coll, key)
        try:
            oid = treepath.entry(self._tree, path).id
        except KeyError:
            return None
        # The key is part of the cache key: the same bytes under another name must be decoded (and
        # refused by decode_blob, which checks that a blob holds the entity its path names).
        found = self._cache.get((coll, key, oid))
        if found is None:
            found = decode_blob(coll, key, treepath.entry(self._tree, path).data, path)  # type: ignore[attr-defined]
            self._cache[(coll, key, oid)] = found
        return found

    def keys(self, coll: str) -> Iterable[str]:
        return self._keys.keys(coll)

    def has(self, coll: str, key: str = "") -> bool:
        return treepath.has(self._tree, trees.path_of(coll, key))


def _tree_diff(parent: pygit2.Commit | None, commit: pygit2.Commit, built: trees.Built) -> str:
    """Where the recorded tree departs from the replayed one (the replayed tree is never written,
    so compare path by path): first the entities the op wrote, then any other path touched."""
    for (coll, key), want in built.blobs.items():
        path = layout.path_of(coll, key)
        try:
            have = treepath.entry(commit.tree, path).id
        except KeyError:
            have = None
        if want != have:
            return f"{path} is not what the op writes"
    written = {layout.path_of(c, k) for c, k in built.blobs}
    if parent is not None:
        try:
            for delta in parent.tree.diff_to_tree(commit.tree).deltas:
                path = delta.new_file.path or delta.old_file.path
                if path not in written:
                    return f"{path} changed, but the op does not touch it"
        except (pygit2.GitError, ValueError):
            pass
    return "the tree's structure differs (modes, empty trees or extra entries)"


def _op_word(message: str) -> str | None:
    for line in message.splitlines():
        if line.startswith("Liza-Op: "):
            return line[len("Liza-Op: "):].strip()[:40] or None
    return None


def _oid(value: pygit2.Oid | str) -> pygit2.Oid:
    if isinstance(value, pygit2.Oid):
        return value
    try:
        return pygit2.Oid(hex=value)
    except (ValueError, TypeError):
        raise VerifyFailure(str(value), None, "not a full object id") from None


def verify(store: Store, at: str | None = None, since: str | None = None, *,
           progress: bool | None = None) -> Report:
    """`git liza verify`: replay refs/liza/state (or `at`) from the root (or from `since`, trusted).
    A rich progress bar is drawn only when stderr is a terminal."""
    tip = store.resolve(at)
    if tip is None:
        raise InconsistentState(f"{store.ref} does not exist: nothing to verify",
                                hint="run `git liza init GOAL` first")
    base = store.resolve(since) if since is not None else None
    if base is not None and base.id != tip.id and not store.repo.descendant_of(tip.id, base.id):
        raise InconsistentState(f"--since {since} is not an ancestor of {at or store.ref}")
    show = sys.stderr.isatty() if progress is None else progress
    if not show:
        return replay(store, tip.id, None if base is None else base.id)
    return with_bar(store, tip.id, None if base is None else base.id)


def with_bar(store: Store, tip: pygit2.Oid, base: pygit2.Oid | None, *,
              label: str = "verifying refs/liza/state") -> Report:
    from rich.progress import Progress as Bar  # only on a terminal: rich is slow to import

    from rich.console import Console

    with Bar(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=None)
        return replay(store, tip, base,
                      progress=lambda n, total: bar.update(task, completed=n, total=total))
