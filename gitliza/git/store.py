"""The board on `refs/liza/state`: reading any revision (lazily, through source.py), and the one
write path.

Write path (DESIGN.md section 2): read the tip, apply the op with the pure core, write only the
changed blobs and the trees on their paths, commit with the old tip as the only parent, then move
the ref by compare-and-swap. A lost race re-reads and re-applies on the schedule of
`orchestrator-state-machine.md` (immediately, 100 ms, 250 ms, 500 ms, plus jitter) and then fails
with CONCURRENCY_CONFLICT, the ref untouched. There is no lock file of ours: libgit2's own ref lock
(`<ref>.lock`, held for microseconds) is the only mutual exclusion, and a lock that outlives any
real write is reported as a crashed writer.

Not split: the readers and the one write path share this handle's state (the object database
refresh, the table cache, the signer), and the first write on an older format writes its upgrade
commit inside the same compare-and-swap as the op (`_upgrade`, `_write_two`): moving either out
would hand that state across modules for one idea, one transition.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

import pygit2

from gitliza.core.encoding import layout
from gitliza.core.board import Board, Changes
from gitliza.core.model import FORMAT_VERSION
from gitliza.core.states import HUMAN_ACTOR
from gitliza.errors import (ConcurrencyConflict, GitFailure, InconsistentState, LizaError,
                            ValidationError, environmental)
from gitliza.git.objects import ownstore
from gitliza.git.objects.odbfresh import OdbRefresh
from gitliza.git.repository import common_dir, open_repository
from gitliza.git.source import GitSource, Tables, check_format

if TYPE_CHECKING:
    from gitliza.core.model import SigningKey
    from gitliza.core.ops.base import Op, Outcome
    from gitliza.core.ops.upgrade import Upgrade
    from gitliza.git.objects import trees
    from gitliza.git.signing import Signer

# The write path's modules (the op engine, the invariants, the tree and commit writers, the ref
# locks) are imported where a write starts, not here: a read command (`status`, `show`, `log`)
# opens a Store too and never writes, and they are ~15% of its start (docs/performance.md).

STATE_REF = "refs/liza/state"
RETRY_DELAYS = (0.0, 0.1, 0.25, 0.5)  # before attempts 2..5
JITTER = 0.05
HOOKS_CACHE = "gitliza-hooks.cache"  # in the git common dir: see Store.remember_for_hooks


@dataclass(frozen=True)
class Committed:
    """What one successful transition produced."""

    commit: str
    parent: str | None
    op: Op
    outcome: Outcome
    attempts: int


def _older(board: Board) -> bool:
    """Whether `board` is in a storage format older than the one this gitliza writes."""
    v = board.format_version
    return v is not None and v < FORMAT_VERSION and board.initialized


class Store:
    def __init__(self, repo: pygit2.Repository, ref: str = STATE_REF) -> None:
        # gitliza's own object store listed before anything is read through `repo`.
        ownstore.prepare(repo)
        self.repo = repo
        self.ref = ref
        self.tables: Tables | None = None  # set by gitliza/git/tablecache.py for big reads
        self._common: Path | None = None
        self._signer: Signer | None = None
        self._odb: OdbRefresh | None = None

    def refresh(self) -> None:
        """Drop what this handle holds of packs removed since it last looked (odbfresh.py): every
        read of the tip starts here, so a long-lived process holds no deleted pack for long."""
        if self._odb is None:
            self._odb = OdbRefresh(self.repo)
        self._odb.check()

    def reopen(self) -> None:
        """A new handle on the same repository: libgit2 reads the shallow file (the boundary of a
        board fetched shallow, git/remotes/shallow.py) once, when a handle opens, so a handle opened
        before a shallow fetch (or a longer one, or an unshallow) would misread the chain."""
        repo = pygit2.Repository(self.repo.path)
        ownstore.prepare(repo)
        self.repo = repo
        self._odb = None

    @classmethod
    def discover(cls, path: str | os.PathLike[str] = ".") -> Store:
        return cls(open_repository(path))

    # -- reading ---------------------------------------------------------------------------------
    def tip(self) -> pygit2.Oid | None:
        self.refresh()
        try:
            target = self.repo.lookup_reference(self.ref).target
        except KeyError:
            return None
        return target if isinstance(target, pygit2.Oid) else None

    def resolve(self, rev: str | None) -> pygit2.Commit | None:
        """The state commit at `rev` (any revision: refs/liza/state~3, an oid...), or the tip."""
        if rev is None:
            tip = self.tip()
            return None if tip is None else self.commit(tip)
        try:
            obj = self.repo.revparse_single(rev)
            commit = obj.peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            raise ValidationError(f"no state revision {rev!r}") from None
        if layout.FORMAT_FILE not in commit.tree:
            raise ValidationError(f"{rev} is not a state commit (its tree has no `format`)")
        assert isinstance(commit, pygit2.Commit)
        return commit

    def commit(self, oid: pygit2.Oid | str) -> pygit2.Commit:
        try:
            c = self.repo[oid]
        except KeyError:  # deleted under the ref: say so in one line, not a KeyError
            raise InconsistentState(f"state commit {str(oid)[:12]} is missing from the object "
                                    "store", hint="`git liza doctor` says how to recover "
                                                  "(docs/maintenance.md)") from None
        if not isinstance(c, pygit2.Commit):
            raise InconsistentState(f"{oid} is not a commit")
        return c

    def board_at(self, commit: pygit2.Commit | None) -> Board:
        if commit is None:
            return Board()
        check_format(commit.tree, str(commit.id))
        return Board(GitSource(self.repo, commit.tree, self.tables))

    def board(self, at: str | None = None) -> tuple[Board, pygit2.Commit | None]:
        """The board at `at` as recorded; the tip (`at` None) as its readers see it, with the
        effective leases of the renewals on refs/liza/live/* (core/presence/renewals.py)."""
        commit = self.resolve(at)
        board = self.board_at(commit)
        if at is None and commit is not None:
            board = self.live_overlay(board)
        return board, commit

    def live_overlay(self, board: Board) -> Board:
        from gitliza.core.presence.renewals import overlay
        from gitliza.git import liveref
        found = liveref.read_all(self.repo)
        return overlay(board, found) if found else board

    def history(self, at: str | None = None) -> Iterator[pygit2.Commit]:
        """State commits, newest first (first-parent: the state ref is linear). A board in a
        newer format than this gitliza's is refused first, as a read of it is."""
        commit = self.resolve(at)
        if commit is not None:
            check_format(commit.tree, str(commit.id))
        while commit is not None:
            yield commit
            commit = commit.parents[0] if commit.parents else None

    # -- writing ---------------------------------------------------------------------------------
    def build_tree(self, base: pygit2.Tree | None, changes: Changes) -> pygit2.Oid:
        """The tree of `base` with `changes` applied, writing the changed blobs and only the trees
        on their paths (unchanged subtrees keep their oids). `trees.build` is shared with verify,
        which computes the same ids without writing."""
        from gitliza.git.objects import trees
        return trees.build(self.repo, base, changes, write=True).tree

    def write_commit(self, parent: pygit2.Commit | None, outcome: Outcome, op: Op) -> pygit2.Oid:
        """The new blobs, trees and the commit, written together as one pack."""
        from gitliza.git.objects import trees
        batch = trees.Batch(self.repo)
        commit, _tree = self.stage_commit(batch, None if parent is None else parent.id,
                                          None if parent is None else parent.tree_id, outcome, op)
        batch.flush()
        return commit

    def stage_commit(self, batch: trees.Batch, parent: pygit2.Oid | None,
                     parent_tree: pygit2.Oid | None, outcome: Outcome, op: Op
                     ) -> tuple[pygit2.Oid, pygit2.Oid]:
        """The commit of `op` on `parent` (and its tree), its objects added to `batch` for the
        caller to flush: a bulk path (sync's replay) writes one pack for many transitions. The
        parent's tree must be in the repository or built earlier in this process."""
        from gitliza.core.encoding import record
        from gitliza.git.objects import trees
        from gitliza.git.commits import commit_body, signature
        tree = trees.build_into(batch, parent_tree, outcome.changes).tree
        parents = [parent] if parent is not None else []
        message = record.message(op, outcome.event)
        body = commit_body(tree, parents, op, message)
        if body is None:  # an actor libgit2 would rewrite: let it format the commit
            batch.flush()
            sig = signature(op)
            return self.repo.create_commit(None, sig, sig, message, tree, parents), tree
        # Signed before it is written (the signature is part of the object, hence of its id).
        body = self.signer().sign(body, op.actor)
        return pygit2.Oid(raw=batch.store(b"commit", body)), tree

    def signer(self) -> Signer:
        """The keys this process signs board commits with (gitliza/git/signing.py), found once."""
        if self._signer is None:
            # Here, not at the top: only a transition signs, and read-only commands (status)
            # need not import the signer's module at start-up.
            from gitliza.git.signing import signer_for
            if self._common is None:
                self._common = common_dir(self.repo)
            self._signer = signer_for(self._common, self.repo.config)
        return self._signer

    def check_signable(self, before: Board, outcome: Outcome, op: Op) -> None:
        """Under `signatures = required`, refuse before writing anything a commit that verify, sync
        and the server hook would refuse: the actor has no key on the board, this process holds
        no private key for it, or holds another one."""
        from gitliza.core.keyring import signers
        prev = before if before.initialized else None
        if signers.policy(prev, outcome.board) != signers.REQUIRED:
            return
        self._require_key(op.actor, signers.expected(prev, outcome.board, op))

    def check_can_sign(self, board: Board, actor: str) -> None:
        """Under `signatures = required`, refuse what `actor` would write outside the board (a
        renewal on refs/liza/live/*) that its hooks would refuse: the same checks as a commit."""
        from gitliza.core.keyring import signers
        if signers.policy(None, board) != signers.REQUIRED:
            return
        self._require_key(actor, signers.current(signers.keys_of(board, actor)))

    def _require_key(self, actor: str, want: SigningKey | None) -> None:
        signer = self.signer()
        if want is not None and signer.matched == (actor, want.key):
            return  # this actor's key was found and matched on the last transition
        if want is None:
            how = "`git liza rekey human --key YOUR_KEY.pub`" if actor == HUMAN_ACTOR else \
                f"the human gives it one: `git liza rekey {actor} --generate-key` (or --key KEY)"
            raise ValidationError(f"signatures are required and {actor} has no key on the board",
                                  hint=how)
        have = signer.key_for(actor)
        if have is not None and have.public.line != want.key:  # rekeyed since it was loaded?
            signer.forget(actor)
            have = signer.key_for(actor)
        if have is None:
            raise ValidationError(f"signatures are required and this clone cannot sign as "
                                  f"{actor}: {signer.why_not(actor)}")
        if have.public.line != want.key:
            raise ValidationError(f"signatures are required and the key this clone holds for "
                                  f"{actor} ({have.public.fingerprint}) is not its key on the "
                                  "board", hint=f"`git liza rekey {actor}` or install its "
                                                "current private key")
        signer.matched = (actor, want.key)

    def transact(self, make_op: Callable[[Board, str], Op], now: Callable[[], str],
                 *, sleep: Callable[[float], None] = time.sleep) -> Committed:
        """Apply one op by compare-and-swap, retrying lost races. `make_op` is called again on
        every attempt with the fresh board, so choices like "the best claimable task" are remade."""
        from gitliza.core.invariants import problems_of_change
        from gitliza.core.ops.engine import apply
        locked = False
        for attempt in range(1, len(RETRY_DELAYS) + 2):
            tip = self.tip()
            parent = self.commit(tip) if tip is not None else None
            board = self.board_at(parent)
            op = make_op(board, now())
            # The first write of a newer gitliza on an older board upgrades it: an `upgrade`
            # commit, then the op's commit on the upgraded board, moved by this one CAS (the op
            # refused: nothing written, the board still as it was).
            first = self._upgrade(board, op) if _older(board) and op.NAME != "upgrade" else None
            if first is not None:
                board = first[1].board
            outcome = apply(board, op)
            bad = problems_of_change(outcome.board, outcome.changes)
            if bad:  # the core produced a state that breaks an invariant: a bug, never commit it
                raise InconsistentState(f"{op.NAME} would break an invariant: {bad[0]}")
            self.check_signable(board, outcome, op)
            below = tip  # the op commit's parent
            if first is None:
                commit = self.write_commit(parent, outcome, op)
            else:
                commit, below = self._write_two(parent, first, outcome, op)
            try:
                self._cas(tip, commit, outcome.event.summary, outcome.board)
                # This write may have merged packs and removed older ones: let go of them now,
                # not at the next read, which a process that then sleeps (a heartbeat every
                # minute) makes long.
                self.refresh()
                if first is not None:
                    up = first[0]
                    outcome = replace(outcome, notices=(
                        f"the board was upgraded to storage format {up.target} (from "
                        f"{up.source}) by this first write of a newer gitliza", *outcome.notices))
                return Committed(str(commit), None if below is None else str(below), op, outcome,
                                 attempt)
            except _Lost:
                locked = False
            except _Locked:
                locked = True
            if attempt <= len(RETRY_DELAYS):
                import random
                sleep(RETRY_DELAYS[attempt - 1] + random.uniform(0, JITTER))
        if locked:
            raise self._lock_error()
        raise ConcurrencyConflict(
            f"{self.ref} kept moving under us: gave up after {len(RETRY_DELAYS) + 1} attempts; "
            "nothing was changed", hint="retry with backoff")

    def _upgrade(self, board: Board, op: Op) -> tuple[Upgrade, Outcome]:
        """The `upgrade` of `board` (older than this gitliza's format), by the actor of `op` (the
        human when the board does not know that actor yet), at its time; checked, not written."""
        from gitliza.core.ops.engine import apply
        from gitliza.core.ops.upgrade import Upgrade
        known = op.actor == HUMAN_ACTOR or board.agent(op.actor) is not None
        up = Upgrade(actor=op.actor if known else HUMAN_ACTOR, time=op.time,
                     source=board.format_version or FORMAT_VERSION, target=FORMAT_VERSION)
        outcome = apply(board, up)
        self.check_signable(board, outcome, up)
        return up, outcome

    def _write_two(self, parent: pygit2.Commit | None, first: tuple[Upgrade, Outcome],
                   outcome: Outcome, op: Op) -> tuple[pygit2.Oid, pygit2.Oid]:
        """The upgrade's commit and the op's on it, written as one pack: (the op's commit, the
        upgrade's)."""
        from gitliza.git.objects import trees
        batch = trees.Batch(self.repo)
        up, up_outcome = first
        pid, ptree = self.stage_commit(batch, None if parent is None else parent.id,
                                       None if parent is None else parent.tree_id, up_outcome, up)
        commit, _tree = self.stage_commit(batch, pid, ptree, outcome, op)
        batch.flush()
        return commit, pid

    def _cas(self, old: pygit2.Oid | None, new: pygit2.Oid, msg: str,
             board: Board | None = None) -> None:
        """Move the ref from `old` to `new` or raise _Lost/_Locked; `board` is the board at `new`
        when the caller has it."""
        self._move_ref(old, new, msg)
        self.remember_for_hooks(new, board, only_if_kept=True)

    def swap(self, old: pygit2.Oid | None, new: pygit2.Oid, msg: str,
             board: Board | None = None) -> bool:
        """One compare-and-swap of the ref from `old` (None: absent) to `new`, no retry: False if
        it was not at `old`; a lock held too long is an error (bulk writes: import)."""
        try:
            self._cas(old, new, msg, board)
        except _Lost:
            return False
        except _Locked:
            raise self._lock_error() from None
        return True

    def _move_ref(self, old: pygit2.Oid | None, new: pygit2.Oid, msg: str) -> None:
        from gitliza.git import reflocks
        try:
            if old is None:
                self.repo.create_reference(self.ref, new, force=False, message=msg)
            else:
                ref = self.repo.lookup_reference(self.ref)
                if ref.target != old:
                    raise _Lost()
                ref.set_target(new, msg)
        except KeyError:  # the ref vanished between reads
            raise _Lost() from None
        except pygit2.AlreadyExistsError:
            raise _Lost() from None
        except OSError as e:
            if reflocks.locked_path(e) is not None:
                raise _Locked() from None
            raise environmental(e) or GitFailure(f"cannot update {self.ref}: {e}") from None
        except pygit2.GitError as e:
            if "old reference value does not match" in str(e) or "reference" in str(e) and \
                    "changed" in str(e):
                raise _Lost() from None
            if reflocks.locked_path(e) is not None:
                raise _Locked() from None
            raise environmental(e) or GitFailure(f"cannot update {self.ref}: {e}") from None

    def remember_for_hooks(self, tip: pygit2.Oid, board: Board | None = None, *,
                           only_if_kept: bool = False) -> None:
        """Leave "<state commit> <integration branch>" in HOOKS_CACHE, where the client hook shim
        reads it (gitliza/hooks/template.sh): a ref update naming neither a refs/liza/* ref nor
        that branch then needs no Python. The shim trusts it only while refs/liza/state still
        names that commit, so every move of the ref here refreshes it (`only_if_kept`: if the hooks
        keep one in this repository), or the next commit after any transition would start Python.
        """
        if self._common is None:  # once: it resolves the path (a few system calls)
            self._common = common_dir(self.repo)
        path = self._common / HOOKS_CACHE
        if only_if_kept and not path.exists():
            return
        if board is None:
            board = self.board_at(self.commit(tip))
        if not board.initialized:
            return
        tmp = path.with_name(f"{HOOKS_CACHE}.{os.getpid()}")
        try:
            tmp.write_text(f"{tip} {board.config.integration_branch}\n", encoding="utf-8")
            os.replace(tmp, path)
        except OSError:  # a read-only repository: the shim just keeps asking Python
            pass

    def lock_path(self) -> Path:
        return common_dir(self.repo) / (self.ref + ".lock")

    def _lock_error(self) -> LizaError:
        from gitliza.git.reflocks import STALE_LOCK_SECONDS
        path = self.lock_path()
        try:
            age = time.time() - path.stat().st_mtime
        except FileNotFoundError:
            return ConcurrencyConflict(f"{self.ref} was locked by other writers on every attempt; "
                                       "nothing was changed", hint="retry with backoff")
        if age >= STALE_LOCK_SECONDS:
            return ConcurrencyConflict(
                f"{self.ref} is locked by a writer that crashed ({path} is {age:.0f}s old); "
                "nothing was changed", hint=f"run `git liza doctor --fix` or remove {path}")
        return ConcurrencyConflict(f"{self.ref} is locked by another writer ({path}); nothing "
                                   "was changed", hint="retry with backoff")


class _Lost(Exception):
    pass


class _Locked(Exception):
    pass
