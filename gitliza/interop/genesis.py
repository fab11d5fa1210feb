"""The import commit: a board read from the seed schema written as the first commit of a chain, and
the check `verify` makes of such a commit.

Writing: every entity is a change on the empty board (one tree, built by the write path's builder),
the commit has no parent, its message records `Liza-Op: import` with the board's digest, and the
ref is created (or, with --force, moved after the old chain is kept under refs/liza-attic/state/).

Verifying (gitliza/services/verify/importcommit.py `replay_import`): the entities are decoded from the recorded
tree (every path must be a layout path) and handed to the core's `genesis`, which checks them against the recorded digest; verify then
recomputes the tree from them and compares it, message and signature, as for any other op.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import pygit2

from gitliza.core.board import Board, Key
from gitliza.core.invariants import problems_of_change
from gitliza.core.ops.governance import Import, board_digest, genesis
from gitliza.errors import ConcurrencyConflict, GitFailure, ValidationError
from gitliza.git import refdelete
from gitliza.git.store import Store

ATTIC = "refs/liza-attic/state"
IMPORT_LOG_REF = "refs/liza/import-log"  # the imported log.yaml, as a blob


@dataclass(frozen=True)
class Imported:
    commit: str
    tasks: int
    replaced: str | None   # the old tip, kept under ATTIC (--force)
    attic: str | None


def sha256(data: bytes) -> str:
    """The digest the import commit records of a source file (state.yaml, log.yaml)."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def make_op(entities: dict[Key, Any], actor: str, time: str, source: str | None,
            log: str | None, log_entries: int) -> Import:
    n = sum(1 for c, _k in entities if c in ("tasks", "archive"))
    return Import(actor=actor, time=time, digest=board_digest(entities), tasks=n,
                  source_sha256=source, log_sha256=log, log_entries=log_entries)


def write_import(store: Store, entities: dict[Key, Any], op: Import, *, force: bool,
                 log_text: bytes | None = None, lenient: bool = False) -> Imported:
    """Write the import commit and point refs/liza/state at it. Refuses (nothing written to the
    ref) an existing board unless `force`. `lenient`: the caller reported the entities' broken
    invariants as warnings (a board written elsewhere comes in as it is; `verify` accepts an
    import commit's entities as recorded, and the ops that follow must mend what they touch)."""
    repo = store.repo
    old = store.tip()
    if old is not None and not force:
        raise ValidationError(f"{store.ref} already holds a board",
                              hint="`git liza import --force` replaces it, keeping the old chain "
                                   f"under {ATTIC}/")
    outcome = genesis(op, entities)
    bad = [] if lenient else problems_of_change(outcome.board, outcome.changes)
    if bad:
        raise ValidationError(f"the imported board breaks an invariant: {bad[0]}")
    store.check_signable(Board(), outcome, op)  # a board that requires signatures starts signed
    commit = store.write_commit(None, outcome, op)
    attic = None if old is None else f"{ATTIC}/{old}"
    try:
        kept = attic is not None and attic in repo.references
        if attic is not None and old is not None:  # first: the old chain stays reachable
            repo.create_reference(attic, old, force=True, message="import --force: old board")
        if not store.swap(old, commit, "import" if old is None else "import --force",
                          outcome.board):
            if attic is not None and not kept:
                refdelete.delete(repo, attic)  # nothing was changed: no attic either
            if old is None:
                raise ConcurrencyConflict(f"{store.ref} was created during the import; nothing "
                                          "was changed", hint="retry with --force to replace it")
            raise ConcurrencyConflict(f"{store.ref} moved during the import; nothing was "
                                      "changed", hint="retry")
        if log_text is not None:
            repo.create_reference(IMPORT_LOG_REF, repo.create_blob(log_text), force=True,
                                  message="import: log.yaml")
        elif old is not None and IMPORT_LOG_REF in repo.references:
            refdelete.delete(repo, IMPORT_LOG_REF)  # the log of the board just replaced
    except pygit2.GitError as e:
        raise GitFailure(f"cannot update {store.ref}: {e}") from None
    return Imported(str(commit), op.tasks, None if old is None else str(old), attic)


def imported_log(repo: pygit2.Repository) -> bytes | None:
    """The log.yaml imported with the board, if any."""
    try:
        obj = repo.lookup_reference(IMPORT_LOG_REF).peel(pygit2.Blob)
    except (KeyError, pygit2.GitError, ValueError):
        return None
    data: bytes = obj.data
    return data
