"""gitliza/atomic.py: whole-file writes, and writes inside a directory that a clone or an agent
may have filled with links (issue 26: hostile input)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitliza import atomic
from gitliza.errors import GitFailure, ValidationError


def test_inside_makes_private_dirs_and_tightens_an_old_wide_one(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir(mode=0o755)
    (tmp_path / "a").chmod(0o755)
    path = atomic.inside(tmp_path, "a", "b", mode=atomic.PRIVATE_DIR)
    assert path == tmp_path / "a" / "b"
    assert (tmp_path / "a").stat().st_mode & 0o777 == 0o700
    assert path.stat().st_mode & 0o777 == 0o700
    assert atomic.inside(tmp_path, "c").stat().st_mode & 0o777 == 0o755 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("where", [0, 1])
def test_inside_refuses_a_link_at_any_step(tmp_path: Path, where: int) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    link = root / "a" if where == 0 else root / "a" / "b"
    if where == 0:
        (root / "a").rmdir()
    link.symlink_to(outside)
    with pytest.raises(ValidationError, match="is a symbolic link"):
        atomic.inside(root, "a", "b", "c")
    assert list(outside.iterdir()) == []


def test_inside_refuses_a_file_and_names_that_climb(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(ValidationError, match="not a directory"):
        atomic.inside(tmp_path, "f")
    for bad in ("..", "a/b", "", "."):
        with pytest.raises(ValidationError, match="not a plain directory name"):
            atomic.inside(tmp_path, bad)


def test_open_file_never_writes_through_a_link(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("mine\n")
    (tmp_path / "sym").symlink_to(target)
    os.link(target, tmp_path / "hard")
    for name, append in (("sym", True), ("sym", False), ("hard", True)):
        with pytest.raises(ValidationError):
            atomic.open_file(tmp_path / name, append=append)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(ValidationError, match="symbolic link"):
        atomic.open_file(tmp_path / "dangling", append=False)
    assert target.read_text() == "mine\n" and not (tmp_path / "nowhere").exists()


def test_open_file_is_private_also_for_an_old_wide_file(tmp_path: Path) -> None:
    old = tmp_path / "old.log"
    old.write_text("a\n")
    old.chmod(0o644)
    with atomic.open_file(old, append=True) as f:
        f.write(b"b\n")
    assert old.read_text() == "a\nb\n" and old.stat().st_mode & 0o777 == 0o600
    with atomic.open_file(tmp_path / "new", append=False) as f:
        f.write(b"x")
    assert (tmp_path / "new").stat().st_mode & 0o777 == 0o600
    with pytest.raises(GitFailure, match="cannot open"):
        atomic.open_file(tmp_path / "new", append=False)  # O_EXCL: never overwrites
