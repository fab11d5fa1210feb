"""What a launch shows again from under the hidden home (gitliza/sandbox/reexpose.py), on real
directories: exactly a command's installation, never the home or a directory straight in it that
is not one tool's own tree. The rogue rows (test_home_hidden.py) try the same from inside."""
from __future__ import annotations

import os
from pathlib import Path

from gitliza.sandbox import reexpose


def _exe(p: Path) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("#!/bin/sh\n")
    p.chmod(0o755)
    return p


def test_home_bins_are_shown_as_themselves_and_installations_whole(tmp_path: Path) -> None:
    home = tmp_path / "home"
    cli = home / ".cache/clis/claude-1/node_modules/.bin/claude"
    venv = home / "proj/.venv"
    pyenv = home / ".pyenv/shims/python3"
    for p in (home / "bin/a", home / ".local/bin/b", home / ".cargo/bin/c", cli,
              venv / "bin/python", pyenv, home / ".local/share/x/versions/2/vibe"):
        _exe(p)
    (venv / "pyvenv.cfg").write_text(f"home = {home}/.pyenv/versions/3.12/bin\n")
    (home / ".pyenv/versions/3.12/bin").mkdir(parents=True)
    (home / ".local/bin/vibe").symlink_to(home / ".local/share/x/versions/2/vibe")
    path = os.pathsep.join(str(home / d) for d in (
        "bin", ".local/bin", ".cargo/bin", ".cache/clis/claude-1/node_modules/.bin",
        "proj/.venv/bin", ".pyenv/shims"))
    for argv, installation in ((["claude"], home / ".cache/clis/claude-1"),
                               (["vibe"], home / ".local/share/x/versions/2"),
                               ([str(home / "agent.sh")], home / "agent.sh")):
        if argv[0].endswith(".sh"):
            _exe(Path(argv[0]))
        shown, dropped = reexpose.needed(argv, {"PATH": path}, [home / "prompt.txt"], [home])
        assert installation in shown, shown
        assert dropped == []
        under = {p for p in shown if home in p.parents}
        assert home not in shown
        assert {home / "bin", home / ".local/bin", home / ".cargo/bin", venv,
                home / ".pyenv", home / ".pyenv/versions/3.12"} <= under, under
        assert not under & {home / ".local", home / ".cargo", home / ".local/share"}, under


def test_the_home_itself_on_path_is_dropped_and_named(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _exe(home / "agent.sh")
    shown, dropped = reexpose.needed(["agent.sh"], {"PATH": f"{home}:/usr/bin:/"}, [], [home])
    assert dropped == [str(home)]
    assert home not in shown and home / "agent.sh" in shown  # the command itself, no more
    assert "PATH entry" in reexpose.dropped_warning(dropped)


def test_a_path_entry_that_links_into_the_home_shows_nothing_of_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _exe(home / ".ssh/id_ed25519")
    _exe(home / ".local/bin/tool")
    (home / "bin").symlink_to(home)
    (home / "keys").symlink_to(home / ".ssh")
    path = f"{home}/bin:{home}/keys:{home}/.local/bin"
    shown, dropped = reexpose.needed(["tool"], {"PATH": path}, [], [home])
    assert dropped == [f"{home}/bin", f"{home}/keys"]
    assert not {home, home / "bin", home / "keys", home / ".ssh"} & set(shown), shown
    assert home / ".local/bin" in shown


def test_a_script_the_command_names_is_shown_with_its_directory(tmp_path: Path) -> None:
    """`python3 /tmp/clone/examples/agents/planner.py` under a hidden /tmp: the script and the
    modules beside it are shown (the example's agents died at once without), nothing wider; a
    script straight in the home is shown alone, and a directory named is not shown at all."""
    tmp, home = tmp_path / "tmp", tmp_path / "home"
    script = _exe(tmp / "clone/examples/agents/planner.py")
    _exe(home / "agent.py")
    _exe(home / ".ssh/id_ed25519")
    shown, _ = reexpose.needed(["python3", str(script), "--flag", "rel/x.py"], {"PATH": ""}, [],
                               [tmp, home])
    assert script.parent in shown, shown
    assert not {tmp, tmp / "clone", tmp / "clone/examples"} & set(shown), shown
    shown, _ = reexpose.needed(["python3", str(home / "agent.py"), str(home / ".ssh")],
                               {"PATH": ""}, [], [tmp, home])
    under = {p for p in shown if home == p or home in p.parents}
    assert under == {home / "agent.py"}, shown
