"""Round 3 (issue 46), the home stays hidden: a user's home with `~/bin`, `~/.local/bin` and
`~/.cargo/bin` on PATH (Debian's stock ~/.profile adds ~/bin) and the agent started as
`-- ~/agent.sh`. A scripted rogue agent under a real supervisor, and a merged tree's integration
test, try to read the keys, credentials and history planted in that home; every read fails,
while the tools of those PATH directories still run (gitliza/sandbox/reexpose.py).

The home is a fake one (HOME points to it), outside /tmp, which the sandbox replaces whole: it is
hidden as the user's home is."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Iterator

import pygit2
import pytest

from gitliza.git.merge import merge_commit_into
from gitliza.sandbox import treerun
from tests.conftest import git
from tests.git.test_merge import SCRIPT, SIG, commit_files
from tests.sandbox.test_rogue import PRELUDE, _agent_log, _attempts, needs_bwrap
from tests.team.procs import Sup, add_task, make_board

pytestmark = [needs_bwrap, pytest.mark.slow]
SECRET = "HOME-SECRET-0461"
PLANTED = (".ssh/id_ed25519", ".aws/credentials", ".cargo/credentials.toml", ".bash_history",
           ".zsh_history", ".local/share/keyrings/login.keyring")
BINS = ("bin", ".local/bin", ".cargo/bin")


@pytest.fixture
def home() -> Iterator[Path]:
    try:
        d = Path(tempfile.mkdtemp(prefix="gitliza-home-", dir="/var/tmp"))
    except OSError as e:
        pytest.skip(f"/var/tmp is not writable here: {e.strerror}")
    try:
        for rel in PLANTED:
            (d / rel).parent.mkdir(parents=True, exist_ok=True)
            (d / rel).write_text(f"{SECRET} {rel}\n")
        for b in BINS:  # a tool in each, which the agent may still run
            (d / b).mkdir(parents=True, exist_ok=True)
            tool = d / b / f"tool-{b.strip('.').replace('/', '-')}"
            tool.write_text(f"#!/bin/sh\necho TOOL-OK {b}\n")
            tool.chmod(0o755)
        yield d
    finally:
        shutil.rmtree(d)


def _path(home: Path) -> str:
    import os
    from tests.team.procs import BIN
    return os.pathsep.join([*(str(home / b) for b in BINS), str(BIN), os.environ["PATH"]])


def _tries(home: Path) -> str:
    # The pattern does not match the script itself (it is shown to the agent: its own command).
    pat = SECRET[:-2] + f"[{SECRET[-2]}]" + SECRET[-1]
    lines = [f"try read-{rel.replace('/', '_')} sh -c 'cat {home}/{rel} | grep -q {pat}'"
             for rel in PLANTED]
    lines += [f"try list-home sh -c 'ls -a {home} | grep -q -e .ssh -e .aws'",
              f"try list-cargo sh -c 'ls -a {home}/.cargo | grep -q credentials'",
              f"try list-local sh -c 'ls {home}/.local | grep -q share'",
              f"try find-secret sh -c 'grep -rqs {pat} {home}'"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("mode", ["on", "model"])
def test_an_agent_under_the_home_with_home_bins_on_path_reads_nothing_of_it(
        repo: Path, home: Path, mode: str) -> None:
    make_board(repo)
    add_task(repo, "t1")
    agent = home / "agent.sh"  # `-- ~/agent.sh`
    agent.write_text("#!/bin/sh\n" + PRELUDE.format() + _tries(home)
                     + "".join(f"tool-{b.strip('.').replace('/', '-')}\n" for b in BINS)
                     + "git liza status >/dev/null && echo BOARD-OK\n")
    agent.chmod(0o755)
    env = {"HOME": str(home), "PATH": _path(home)}
    if mode == "model":
        env["LIZA_SANDBOX_ALLOW"] = "example.invalid:443"
    sup = Sup(repo, "coder", "coder-1", "--once", "--sandbox", mode, "--", str(agent), env=env)
    sup.wait(120)
    log = _agent_log(repo, "coder-1")
    tried = _attempts(log)
    assert len(tried) == len(PLANTED) + 4 and all(rc != 0 for rc in tried.values()), log
    assert SECRET not in log
    for b in BINS:  # a PATH directory of the home is shown as itself
        assert f"TOOL-OK {b}" in log, log
    assert "BOARD-OK" in log, sup.output()


def test_the_home_on_path_is_dropped_with_one_line(repo: Path, home: Path) -> None:
    make_board(repo)
    add_task(repo, "t1")
    agent = home / ".local" / "bin" / "agent"
    agent.write_text("#!/bin/sh\n" + PRELUDE.format() + _tries(home))
    agent.chmod(0o755)
    env = {"HOME": str(home), "PATH": f"{home}:{_path(home)}"}
    sup = Sup(repo, "coder", "coder-1", "--once", "--sandbox", "on", "--", "agent", env=env)
    sup.wait(120)
    log = _agent_log(repo, "coder-1")
    tried = _attempts(log)
    assert len(tried) == len(PLANTED) + 4 and all(rc != 0 for rc in tried.values()), log
    assert SECRET not in log
    warned = [line for line in sup.lines if f"PATH entry {home} not shown" in line]
    assert len(warned) == 1, sup.output()


def test_the_integration_test_reads_nothing_of_the_home(
        repo: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    git(repo, "branch", "integration", "main")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", _path(home))
    script = ("#!/bin/sh\n" + PRELUDE.format() + _tries(home)
              + "".join(f"tool-{b.strip('.').replace('/', '-')}\n" for b in BINS) + "exit 0\n")
    task = commit_files(repo, "liza/t", {str(SCRIPT): script}, executable=True)
    report: list[str] = []
    run = treerun.runner("on")
    assert run is not None

    def keep(argv: list[str], cwd: Path, timeout: float | None) -> tuple[int | None, str]:
        code, out = run(argv, cwd, timeout)
        report.append(out)
        return code, out
    merge_commit_into(pygit2.Repository(str(repo)), "integration", task, message="m",
                      signature=SIG, integration_test=SCRIPT, runner=keep)
    out = report[0]
    tried = _attempts(out)
    assert len(tried) == len(PLANTED) + 4 and all(rc != 0 for rc in tried.values()), out
    assert SECRET not in out
    for b in BINS:
        assert f"TOOL-OK {b}" in out, out
