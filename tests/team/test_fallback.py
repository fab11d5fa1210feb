"""A member's ordered fallback of agent CLIs (gitliza/team/fallback.py, docs/agents.md "Route
around it"): the list parsed once, the next CLI chosen while the first waits for its provider,
the first back after its reset, the worktree kept in the attic before another CLI takes it up,
and every fallback waiting an alarm at once."""
from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from gitliza.core import clock

from gitliza.core.agents import faults, teammodels
from gitliza.core.agents.faults import End, Wait
from gitliza.errors import ValidationError
from gitliza.team.launch import Member, TeamOptions, supervisor_argv
from tests.cli.test_board import liza, ok
from tests.team.procs import BIN, WAIT, Sup, add_task, env_for, make_board, script, wait_status
from tests.team.test_supervisor import SUBMIT


def test_the_list_is_parsed_once_in_order_and_checked() -> None:
    text = "coder=claude:opus,codex reviewer=gemini"
    assert teammodels.chain_for_member(text, "coder", "coder-2") == \
        (("claude", "opus"), ("codex", None))
    assert teammodels.for_member(text, "coder", "coder-2") == ("claude", "opus")  # the first
    assert teammodels.canonical("reviewer=gemini coder=claude:opus,codex") == \
        "coder=claude:opus,codex reviewer=gemini"  # the list keeps its order
    assert teammodels.chain("Claude,codex:m") == (("claude", None), ("codex", "m"))
    for bad in ("claude,", ",codex", "claude,claude", "claude,co dex", "claude,$(x)"):
        with pytest.raises(ValidationError):
            teammodels.chain(bad)
    with pytest.raises(ValidationError, match="coder=claude,claude"):
        teammodels.chains("coder=claude,claude")


def test_the_next_free_cli_runs_and_the_first_is_back_after_its_reset() -> None:
    assert teammodels.pick([0, 0]) == 0
    assert teammodels.pick([3600, 0]) == 1  # the first waits: the second runs
    assert teammodels.pick([3600, 0, 0]) == 1  # the next in the list, not any
    assert teammodels.pick([0, 0, 7]) == 0  # the first's reset has passed: back to it
    assert teammodels.pick([3600, 60]) == 1  # all waiting: the earliest reset
    assert teammodels.pick([60, 60]) == 0
    assert teammodels.pick([float("inf"), float("inf")]) == 0  # none logged in: the first


def test_a_team_member_gets_its_list_on_its_command_line() -> None:
    argv = supervisor_argv(Member("coder", "coder-1"),
                           TeamOptions(models="coder=claude:opus,codex:m2"))
    assert argv[argv.index("--cli") + 1] == "claude:opus,codex:m2" and "--model" not in argv


def test_every_fallback_waiting_is_an_alarm_at_once() -> None:
    """A wait younger than alarm_provider_down is no alarm, unless it is the list's last."""
    from gitliza.core.board import Board  # the alarm's text from a recorded wait
    w = Wait("codex", End.RATE_LIMITED, "2026-01-01T14:00:00Z", "2026-01-01T15:00:00Z",
             "all of claude, codex waiting")
    assert faults.parse_wait(w.record()) == w
    one = Wait("codex", End.RATE_LIMITED, "2026-01-01T14:00:00Z", "2026-01-01T15:00:00Z")
    assert isinstance(Board, type)
    for wait, alarmed in ((w, True), (one, False)):
        got = _alarms(wait)
        assert bool(got) == alarmed, got
    text = _alarms(w)[0][1]
    assert "all of claude, codex waiting" in text and "until 2026-01-01T15:00:00Z" in text


def _alarms(w: Wait) -> list[tuple[str, str]]:
    """provider.alarms over a board holding one waiting coder with a live supervisor."""
    from types import SimpleNamespace
    agent = SimpleNamespace(id="coder-1", provider_wait=w.record())
    sup = SimpleNamespace(expires="2026-01-01T16:00:00Z")
    board = SimpleNamespace(agents=lambda: [agent], get=lambda kind, key: sup)
    return faults.alarms(board, 900, "2026-01-01T14:01:00Z")  # type: ignore[arg-type]


def test_an_unknown_cli_in_the_list_is_one_line(repo: Path) -> None:
    make_board(repo)
    r = subprocess.run([str(BIN / "git-liza"), "agent", "coder", "--cli", "claude,nosuch"],
                       cwd=repo, env=env_for("coder-1"), capture_output=True, text=True,
                       timeout=WAIT)
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "nosuch" in r.stderr
    # `team`: its --cli list, and the board's list for a member, each name checked before any
    # program is looked for (none of them is installed here) and before anything starts.
    ok(liza(repo, "config", "models", "coder=codex,nosuch", agent=None))
    for extra in (["--cli", "claude,nosuch"], []):
        r = subprocess.run([str(BIN / "git-liza"), "team", "--planners", "0", "--coders", "1",
                            "--reviewers", "0", *extra], cwd=repo, env=env_for(),
                           capture_output=True, text=True, timeout=WAIT)
        assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "nosuch" in r.stderr and not r.stdout, (r.stdout, r.stderr)


# -- end to end: a real supervisor, two stand-in CLIs on PATH ------------------------------------
def _two_clis(repo: Path, tmp_path: Path, first: str, second: str) -> Sup:
    """Task t1 and a coder supervisor with `--cli claude,codex`, both stand-in scripts on PATH
    (each reads its prompt, then runs its body; `{runs}`: a file counting the first's runs)."""
    make_board(repo)
    add_task(repo, "t1")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name, body in (("claude", first), ("codex", second)):
        script(bindir, name, "cat > /dev/null\n" + body.replace("{runs}", str(tmp_path / "runs")))
    env = {"PATH": f"{bindir}:{env_for()['PATH']}", "ANTHROPIC_API_KEY": "k",
           "OPENAI_API_KEY": "k"}  # both logged in (team/logins.py)
    return Sup(repo, "coder", "coder-1", "--cli", "claude,codex", env=env)


def _until_ready(repo: Path, sup: Sup) -> str:
    """Wait for t1 in review, then ABORT: the supervisor's output."""
    try:
        try:
            wait_status(repo, "t1", "READY_FOR_REVIEW")
        except subprocess.TimeoutExpired:
            sup.kill()
            sup.wait()
            raise AssertionError(sup.output()) from None
        ok(liza(repo, "abort", agent=None))
        assert sup.wait() == 0, sup.output()
    finally:
        sup.kill()
    return sup.output()


# The first refuses (its provider's rate limit, UNTIL) after leaving work in the worktree (its
# first run only, when AGAIN); the second finds that work there and finishes the task.
REFUSES = """n=$(cat {runs} 2>/dev/null || echo 0); echo $((n + 1)) > {runs}
if [ "$n" != 0 ]; then test -f step.txt; AGAIN; fi
echo "work in progress" > wip.txt
echo "gitliza-end: rate_limited until=UNTIL 5-hour limit"
exit 1
"""


@pytest.mark.slow
def test_the_fallback_cli_finishes_the_task_and_the_first_waits_its_reset(
        repo: Path, tmp_path: Path) -> None:
    reset = time.time() + 3600
    until = clock.from_epoch(reset)
    finishes = "test -f wip.txt\ngit add wip.txt\n" + SUBMIT
    out = _until_ready(repo, _two_clis(repo, tmp_path, REFUSES.replace("UNTIL", until)
                                       .replace("AGAIN", "exit 3"), finishes))
    assert re.search(r"\] claude rate limited until \S+Z \(5-hour limit\); next run with codex\n",
                     out), out
    assert out.count("next run with codex") == 1, out
    assert (tmp_path / "runs").read_text().strip() == "1", out  # not relaunched before its reset
    task = json.loads(ok(liza(repo, "show", "t1", "--json", agent=None)))
    assert [r["cli"] for r in task["usage"]] == ["claude", "codex"], task["usage"]
    # The first run's work went to the attic before the second CLI's run started, once.
    assert out.count("work kept in the attic") == 1, out
    assert out.index("work kept in the attic") < out.index("next run with codex"), out
    attic = subprocess.run(["git", "for-each-ref", "--format=%(refname)", "refs/liza-attic/t1/"],
                           cwd=repo, capture_output=True, text=True, check=True).stdout.split()
    assert len(attic) == 1, out
    shown = subprocess.run(["git", "show", "--stat", "--format=", attic[0]], cwd=repo,
                           capture_output=True, text=True, check=True).stdout
    assert "wip.txt" in shown, shown
    # The second's success did not lift the first's shared wait: its provider still refuses.
    wait = json.loads((repo / ".git" / "liza-provider" / "claude.json").read_text())
    # ... until the reset the CLI named (to the second), not a time read now: no clock in it.
    assert wait["end"] == "rate_limited" and wait["until"] >= int(reset) - 1, (wait, reset)


@pytest.mark.slow
def test_the_first_cli_is_back_once_its_reset_has_passed(repo: Path, tmp_path: Path) -> None:
    """The first CLI refuses once with a reset seconds off; the second commits a step of the
    task once that reset has passed, and exits; the next run (same task) is the first's again."""
    until = clock.from_epoch(time.time() + 3)
    shared = repo / ".git" / "liza-provider" / "claude.json"
    # The second works until the first's shared wait is over (a condition, not a sleep's length).
    step = f"""end=$(python3 -c 'import json, sys
print(int(json.load(open(sys.argv[1]))["until"]) + 1)' {shared})
while [ "$(date +%s)" -le "$end" ]; do sleep 0.5; done
echo step > step.txt && git add -A && git commit -q -m "a step of $LIZA_TASK_ID"
"""
    again = SUBMIT.replace("\n", "; ").rstrip("; ") + "; exit 0"
    out = _until_ready(repo, _two_clis(repo, tmp_path, REFUSES.replace("UNTIL", until)
                                       .replace("AGAIN", again), step))
    assert "next run with codex" in out and "next run with claude (its wait is over)" in out, out
    assert (tmp_path / "runs").read_text().strip() == "2", out
    task = json.loads(ok(liza(repo, "show", "t1", "--json", agent=None)))
    assert [r["cli"] for r in task["usage"]] == ["claude", "codex", "claude"], (task, out)


@pytest.mark.slow
def test_every_cli_waiting_is_the_provider_alarm(repo: Path, tmp_path: Path) -> None:
    """Both CLIs refuse with an hour-long limit: each is launched once, then the supervisor
    waits for the earliest reset, saying every CLI of its list waits, and `watch` has the
    PROVIDER alarm at once (not after alarm_provider_down)."""
    until = clock.from_epoch(time.time() + 3600)
    refuses = REFUSES.replace("UNTIL", until).replace("AGAIN", "exit 3")
    sup = _two_clis(repo, tmp_path, refuses, refuses.replace("{runs}", "{runs}-2"))
    try:
        sup.expect("(all of claude, codex waiting)")
        w = liza(repo, "watch", "--once", "--json", agent=None)
        alarms = [json.loads(x) for x in w.stdout.splitlines() if x.strip()]
    finally:
        ok(liza(repo, "abort", agent=None))
        try:
            sup.wait()
        finally:
            sup.kill()
            print(sup.output())
    got = [a for a in alarms if a["kind"] == "PROVIDER"]
    assert got and "all of claude, codex waiting" in json.dumps(got), (alarms, sup.output())
    assert (tmp_path / "runs").read_text().strip() == "1"
    assert (tmp_path / "runs-2").read_text().strip() == "1", sup.output()
    task = json.loads(ok(liza(repo, "show", "t1", "--json", agent=None)))
    assert task["status"] == "CLAIMED" and not task.get("failed_by"), task
