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
    _copy_login("claude", user, home, {})
    assert victim.read_text() == "precious"
    assert sorted(p.name for p in outside.iterdir()) == ["victim"]
    for rel, text in ((".claude.json", "LOGIN"), (".claude/.credentials.json", "CREDS")):
        p = home / rel
        assert not p.is_symlink() and p.read_text() == text and p.stat().st_mode & 0o777 == 0o600
    assert not (home / ".claude").is_symlink()


def test_a_state_dir_moved_by_the_clis_variable_is_copied_from_there(tmp_path: Path) -> None:
    """Issue 35: CODEX_HOME (CLAUDE_CONFIG_DIR, VIBE_HOME) set outside the home: the login comes
    from there into the agent's home, where the variable points inside (box.Box.env); the files
    at the home's default place are not the ones taken."""
    user, home, moved = tmp_path / "user", tmp_path / "home", tmp_path / "elsewhere"
    for d in (user / ".codex", home, moved, tmp_path / "claude-dir"):
        d.mkdir(parents=True)
    (user / ".codex" / "auth.json").write_text("STALE")
    (moved / "auth.json").write_text("AUTH")
    (moved / "config.toml").write_text("model = 'x'\n")
    _copy_login("codex", user, home, {"CODEX_HOME": str(moved)})
    assert (home / ".codex" / "auth.json").read_text() == "AUTH"
    assert (home / ".codex" / "config.toml").read_text() == "model = 'x'\n"
    # Claude Code keeps .claude.json inside CLAUDE_CONFIG_DIR when that is set.
    (tmp_path / "claude-dir" / ".claude.json").write_text("LOGIN")
    (tmp_path / "claude-dir" / ".credentials.json").write_text("CREDS")
    _copy_login("claude", user, home, {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude-dir")})
    assert (home / ".claude" / ".claude.json").read_text() == "LOGIN"
    assert (home / ".claude" / ".credentials.json").read_text() == "CREDS"
