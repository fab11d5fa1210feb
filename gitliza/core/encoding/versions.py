"""The storage format's versions and the migrations between them, as data.

Every state commit's tree holds a `format` blob, `gitliza-state <version>\n`. A gitliza reads
every version up to its own `FORMAT_VERSION` and writes only its own; a board in a newer format
is refused before anything is read or written (a reader that guessed would misjudge it: format 2
renews leases on refs/liza/live/<agent>, which a format-1 reader does not look at, so it would
see every lease expire).

An older board is upgraded in place by one `upgrade` op (gitliza/core/ops/upgrade.py): one commit
on the chain, whose changes are the migrations below applied in order, so `verify` replays it
like any other transition and the history before it stays as it was written. The next format
change is one more entry in `MIGRATIONS` (and `FORMAT_VERSION` + 1): the op, the command, the
first-write upgrade, sync, the hook and verify follow from the table.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from gitliza.core.board import FORMAT_KEY as FORMAT_KEY, Board, Changes
from gitliza.core.model import FORMAT_VERSION as FORMAT_VERSION  # re-exported: formats is its home
from gitliza.errors import InconsistentState, ValidationError

FIRST_VERSION = 1  # the oldest format any gitliza wrote
FORMAT_FILE = FORMAT_KEY[0]  # the blob's path at the root of every state tree
_PREFIX = b"gitliza-state "


def blob(version: int) -> bytes:
    """The `format` blob of `version`."""
    return _PREFIX + str(version).encode() + b"\n"


def parse(data: bytes) -> int | None:
    """The version a `format` blob names, or None when it is not one (exactly `blob(v)`)."""
    if not data.startswith(_PREFIX) or not data.endswith(b"\n"):
        return None
    digits = data[len(_PREFIX):-1]
    if not digits.isdigit() or not digits.isascii() or digits.startswith(b"0"):
        return None
    version = int(digits)
    return version if blob(version) == data else None


def check_readable(version: int | None, data: bytes, where: str) -> int:
    """`version` when this gitliza reads it; else the one-line refusal (exit 4: the board is not
    in a state this program may touch; nothing is read or written)."""
    if version is None:
        shown = data[:40].decode(errors="replace").strip()
        raise InconsistentState(f"state commit {where[:12]} has a `format` blob this gitliza "
                                f"does not recognise ({shown!r})")
    if version > FORMAT_VERSION:
        raise InconsistentState(f"the board is in storage format {version}; this gitliza "
                                f"reads formats up to {FORMAT_VERSION}",
                                hint="install a newer gitliza: docs/upgrading.md")
    if version < FIRST_VERSION:
        raise InconsistentState(f"state commit {where[:12]} names storage format {version}, "
                                "which no gitliza wrote")
    return version


@dataclass(frozen=True)
class Migration:
    """What moving a board from `source` to `source + 1` changes. `change` returns the entity
    changes beyond the `format` blob (pure: the board before, nothing else), so that a migration
    that must rewrite entities (a new layout, a field moved) is still one replayable op."""

    source: int
    what: str  # one line: what the new format adds (shown by `git liza upgrade`, docs/upgrading.md)
    change: Callable[[Board], Changes]

    @property
    def target(self) -> int:
        return self.source + 1


def _nothing(board: Board) -> Changes:
    return {}


# From version -> what changes. 1 -> 2: leases and supervisor tokens may be renewed on
# refs/liza/live/<agent>, read together with the board's own records. The tree
# keeps every entity as it is: a format-1 board is a format-2 board with no live refs yet, so the
# only change is the `format` blob, which is what stops a format-1 gitliza (it would not see a
# live renewal and judge the lease expired). The seam: a later need of `live` (an entity to
# rewrite) goes in this entry's `change`, replayed by verify like every op.
MIGRATIONS: dict[int, Migration] = {
    1: Migration(1, "heartbeats and supervisor renewals may live on refs/liza/live/<agent> "
                    "(liveness off the audit chain)", _nothing),
}


def path(source: int, target: int = FORMAT_VERSION) -> list[Migration]:
    """The migrations that take a board from `source` to `target`, in order."""
    if source >= target:
        raise ValidationError(f"the board is in storage format {source} already; nothing to "
                              f"upgrade to {target}")
    if target > FORMAT_VERSION:
        raise ValidationError(f"this gitliza writes storage formats up to {FORMAT_VERSION}, "
                              f"not {target}")
    steps = []
    for v in range(source, target):
        m = MIGRATIONS.get(v)
        if m is None:
            raise ValidationError(f"no migration from storage format {v} to {v + 1}")
        steps.append(m)
    return steps


def migrate(board: Board, source: int, target: int = FORMAT_VERSION) -> Changes:
    """The changes that upgrade `board` (in format `source`) to `target`: every migration's, in
    order (a later one sees the earlier ones' result), and the new `format` blob."""
    changes: Changes = {}
    for m in path(source, target):
        changes.update(m.change(board.with_changes(changes)))
    changes[FORMAT_KEY] = target
    return changes
