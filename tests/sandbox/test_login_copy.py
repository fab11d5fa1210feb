"""The CLI's login copied into an agent's persistent home at each launch never follows a link the
agent planted there last time (issue 35): judged from outside, the files the links pointed at are
untouched and the copies are plain files in the home."""
from __future__ import annotations

from pathlib import Path

from gitliza.sandbox.box import _copy_login


def test_planted_links_in_the_home_are_not_followed(tmp_path: Path) -> None:
    user, home, outside = tmp_path / "user", tmp_path / "home", tmp_path / "outside"
    for d in (user / ".claude", home, outside):
        d.mkdir(parents=True)
    (user / ".claude.json").write_text("LOGIN")
    (user / ".claude" / ".credentials.json").write_text("CREDS")
    victim = outside / "victim"
    victim.write_text("precious")
    (home / ".claude.json").symlink_to(victim)  # a file link
    (home / ".claude").symlink_to(outside, target_is_directory=True)  # a directory link
    _copy_login("claude", user, home)
    assert victim.read_text() == "precious"
    assert sorted(p.name for p in outside.iterdir()) == ["victim"]
    for rel, text in ((".claude.json", "LOGIN"), (".claude/.credentials.json", "CREDS")):
        p = home / rel
        assert not p.is_symlink() and p.read_text() == text and p.stat().st_mode & 0o777 == 0o600
    assert not (home / ".claude").is_symlink()
