"""The storage format's versions and migrations (core/encoding/versions.py), and the `upgrade` op
on in-memory boards: pure, no git."""
from __future__ import annotations

import pytest

from gitliza.core.encoding import versions as formats
from gitliza.core.board import FORMAT_KEY, Board, MemorySource
from gitliza.core.model import FORMAT_VERSION
from gitliza.core.ops import Init, apply, op_from_record
from gitliza.core.ops.upgrade import Upgrade
from gitliza.errors import InconsistentState, PermissionDenied, ValidationError

T = "2026-01-02T03:04:05Z"


def test_blob_round_trip_and_strict_parse() -> None:
    assert formats.blob(1) == b"gitliza-state 1\n"
    assert formats.parse(b"gitliza-state 2\n") == 2
    for bad in (b"gitliza-state 2", b"gitliza-state 02\n", b"gitliza-state -1\n",
                b"gitliza-state two\n", b"gitliza-state 2\n\n", b"", b"gitliza-state \n",
                "gitliza-state \u0663\n".encode()):
        assert formats.parse(bad) is None, bad


def test_a_newer_format_is_refused_in_one_line_with_both_versions() -> None:
    with pytest.raises(InconsistentState) as e:
        formats.check_readable(FORMAT_VERSION + 1, b"", "0" * 40)
    text = str(e.value)
    assert e.value.exit_code == 4 and "\n" not in text
    assert f"storage format {FORMAT_VERSION + 1}" in text and f"up to {FORMAT_VERSION}" in text
    with pytest.raises(InconsistentState, match="does not recognise"):
        formats.check_readable(None, b"\x00garbage", "0" * 40)
    assert formats.check_readable(1, b"", "x") == 1


def test_every_version_up_to_ours_has_a_migration_to_the_next() -> None:
    # The registry is the only thing a format change edits: FORMAT_VERSION + 1 without an entry
    # (or an entry that skips a version) fails here, not on a user's board.
    assert sorted(formats.MIGRATIONS) == list(range(formats.FIRST_VERSION, FORMAT_VERSION))
    for v, m in formats.MIGRATIONS.items():
        assert m.source == v and m.target == v + 1 and m.what and "\n" not in m.what
    assert [m.source for m in formats.path(1)] == list(range(1, FORMAT_VERSION))
    for src, dst in ((FORMAT_VERSION, FORMAT_VERSION), (2, 1), (1, FORMAT_VERSION + 1)):
        with pytest.raises(ValidationError):
            formats.path(src, dst)


def _v1_board() -> Board:
    init = Init(actor="human", time=T, goal="g")
    board = apply(Board(), init).board
    return board.with_changes({FORMAT_KEY: 1})


def test_the_upgrade_op_changes_only_the_format() -> None:
    board = _v1_board()
    assert board.format_version == 1
    up = Upgrade(actor="human", time=T, source=1, target=FORMAT_VERSION)
    out = apply(board, up)
    assert out.changes == {FORMAT_KEY: FORMAT_VERSION}
    assert out.board.format_version == FORMAT_VERSION
    assert out.event.op == "upgrade" and out.event.task is None
    assert f"1 -> {FORMAT_VERSION}" in out.event.summary
    # It records as any op: the trailers carry source and target, and parse back to the same op.
    assert up.args() == {"source": 1, "target": FORMAT_VERSION}
    assert op_from_record("upgrade", "human", T, up.args()) == up


def test_an_upgrade_that_does_not_match_the_board_is_refused() -> None:
    board = _v1_board()
    for source, target in ((2, 3), (0, 2), (1, 1), (1, FORMAT_VERSION + 1)):
        with pytest.raises(ValidationError):
            apply(board, Upgrade(actor="human", time=T, source=source, target=target))
    upgraded = apply(board, Upgrade(actor="human", time=T, source=1, target=2)).board
    with pytest.raises(ValidationError, match="board is in format 2"):
        apply(upgraded, Upgrade(actor="human", time=T, source=1, target=2))
    with pytest.raises(PermissionDenied):  # somebody the board does not know
        apply(board, Upgrade(actor="stranger-1", time=T, source=1, target=2))


def test_a_migration_sees_the_earlier_ones_and_may_rewrite_entities(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The seam the next format change uses: a migration returning entity changes. A made-up 2 -> 3
    # that renames the goal shows they are applied in order and land in the op's changes.
    board = _v1_board()
    seen: list[int | None] = []

    def rename(b: Board) -> dict[tuple[str, str], object]:
        from dataclasses import replace
        seen.append(b.format_version)
        return {("goal", ""): replace(b.goal, description=b.goal.description + " (v3)")}

    monkeypatch.setattr(formats, "FORMAT_VERSION", 3)
    monkeypatch.setitem(formats.MIGRATIONS, 2, formats.Migration(2, "made up", rename))
    changes = formats.migrate(board, 1, 3)
    assert changes[FORMAT_KEY] == 3 and changes[("goal", "")].description.endswith("(v3)")
    assert seen == [1]  # the earlier migrations' changes are overlaid (format set at the end)


def test_a_board_not_read_from_a_tree_has_no_format() -> None:
    assert Board(MemorySource()).format_version is None
