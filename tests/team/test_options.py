"""`git liza team`'s options record (gitliza/team/options.py): every flag parsed once, into one
typed, frozen record that `Team` takes and each member's command line is rendered from; the
sandbox mode travels as one `SandboxMode` from `--sandbox` to the supervisor's box. Bad input is
one line, exit 1, with nothing started and the board unchanged."""
from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from gitliza.agentcli.base import Permissions
from gitliza.errors import ValidationError
from gitliza.sandbox.box import Sandbox
from gitliza.sandbox.policy import SandboxMode
from gitliza.team.launch import Team, TeamOptions, supervisor_argv
from tests.team.procs import env_for


def test_the_flags_become_one_frozen_record() -> None:
    opts = TeamOptions.parse(planners=0, coders=1, reviewers=1, prefix="m1-", max_coders=3,
                             cli="codex", command=(), mcp=True, permissions=" Bypass ",
                             sandbox="OFFLINE", labels="gpu, arm,gpu", takeover=True)
    assert [m.agent for m in opts.crew] == ["m1-coder-1", "m1-reviewer-1"]
    assert opts.pool == (("coder", 3),) and opts.pool_sizes() == {"coder": 3}
    assert opts.permissions is Permissions.BYPASS and opts.sandbox is SandboxMode.OFFLINE
    assert opts.labels == ("arm", "gpu")
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.sandbox = SandboxMode.OFF  # type: ignore[misc]
    # The board's models are followed only without --cli and without a command.
    assert opts.following("coder=gemini").models is None
    assert TeamOptions.parse().following("coder=gemini").models == "coder=gemini"
    # Each member's command line is rendered from the record: the parsed values, as flags.
    argv = supervisor_argv(opts.crew[0], opts)
    agent = argv.index("agent")
    assert argv[agent:agent + 3] == ["agent", "coder", "--takeover"]
    for flag, value in (("--cli", "codex"), ("--permissions", "bypass"),
                        ("--sandbox", "offline"), ("--labels", "arm,gpu")):
        assert argv[argv.index(flag) + 1] == value, (flag, argv)
    # The defaults are left out (each supervisor's own default is the same).
    plain = supervisor_argv(opts.crew[0], TeamOptions(command=("agent.sh",)))
    assert not {"--sandbox", "--permissions", "--labels", "--takeover"} & set(plain)


@pytest.mark.parametrize("flags, words", [
    ({"sandbox": "bubble"}, "--sandbox must be one of on, model, offline, off"),
    ({"permissions": "yolo"}, "--permissions must be one of"),
    ({"coders": 0, "planners": 0, "reviewers": 0}, "a team needs at least one member"),
    ({"max_coders": 1, "coders": 2}, "--max-coders 1 is below --coders 2"),
    ({"labels": "no spaces"}, "label"),
    ({"prefix": "../"}, "agent id"),
])
def test_bad_flags_are_refused_by_the_parse(flags: dict[str, object], words: str) -> None:
    with pytest.raises(ValidationError, match=words.replace("-", "\\-")) as e:
        TeamOptions.parse(**flags)  # type: ignore[arg-type]
    assert "\n" not in str(e.value)


def test_team_takes_the_record(tmp_path: Path) -> None:
    opts = TeamOptions.parse(coders=1, reviewers=0, planners=0, command=("agent.sh",),
                             sandbox="off", max_coders=2, prefix="x-")
    team = Team(tmp_path, opts, lambda _line: None)
    assert team.opts is opts and [m.agent for m in team.team] == ["x-coder-1"]
    assert team.pool == {"coder": 2} and team.prefix == "x-"
    # The sandbox policy gets the parsed mode, not the text.
    assert Sandbox(opts.sandbox).mode is SandboxMode.OFF and not Sandbox(opts.sandbox).on


def test_a_bad_sandbox_mode_is_one_line_and_starts_nobody(repo: Path) -> None:
    from tests.cli.test_board import liza, ok, tip
    ok(liza(repo, "init", "g", agent=None))
    before = tip(repo)
    for argv in (["team", "--sandbox", "bubble", "--", "true"],
                 ["agent", "coder", "--sandbox", "bubble", "--", "true"]):
        r = subprocess.run([sys.executable, "-m", "gitliza", *argv], cwd=repo,
                           env={**env_for(), "LIZA_AGENT_ID": "coder-1"}, capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 1, r.stderr
        assert r.stderr.count("\n") == 1 and "--sandbox must be one of" in r.stderr, r.stderr
        assert "started" not in r.stdout
    assert tip(repo) == before
