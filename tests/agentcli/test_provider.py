"""The four real agent CLIs in gitliza's sandbox (bubblewrap) against the scripted model server
answering as each provider does when in trouble (tests/agentcli/modelserver.py `Trouble`: 429
with retry-after and the provider's rate-limit headers, Anthropic's 529 overloaded_error, OpenAI's
insufficient_quota, Gemini's RESOURCE_EXHAUSTED, 401 / a bad key, a connection refused): a coder
supervisor classifies the run's end from the CLI's own output (docs/agents.md "When the provider
is in trouble"), waits instead of hammering, never blocks the task nor counts it failed, and a
refused login is an alarm naming the CLI within a minute. No timed assertions: the waits are
bounded by the test's timeouts; what is counted is launches and requests."""
from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable

import pytest

from tests.agentcli import clis
from tests.agentcli.conftest import BIN, liza
from tests.agentcli.modelserver import Server, Trouble
from tests.team.procs import Sup

pytestmark = pytest.mark.slow

# (cli, trouble) -> the words the supervisor says of it ("claude rate limited until ...")
CASES = {
    ("claude", "auth"): "not logged in",
    ("claude", "rate_limit"): "rate limited",
    ("claude", "overloaded"): "provider overloaded",
    ("claude", "refused"): "provider unreachable",
    ("codex", "auth"): "not logged in",
    ("codex", "quota"): "quota spent",
    ("codex", "rate_limit"): "rate limited",
    ("codex", "refused"): "provider unreachable",
    ("gemini", "auth"): "not logged in",
    ("gemini", "rate_limit"): "rate limited",
    ("gemini", "quota"): "quota spent",
    ("gemini", "overloaded"): "provider overloaded",
    ("mistral", "auth"): "not logged in",
    ("mistral", "nokey"): "not logged in",
}


def _coder(board: Path, env: dict[str, str], name: str) -> Sup:
    liza(board, env, "add", "hello", "--desc", "Create hello.txt holding the line: Hello",
         "--spec-ref", "specs/vision.md", "--done-when", "hello.txt exists", "--scope",
         "hello.txt", "--ready")
    return Sup(board, "coder", "coder-1", "--cli", name, "--sandbox", "on",
               env={**env, "LIZA_SANDBOX": "on"})


def _env_for(kind: str, env: dict[str, str], home: Path) -> dict[str, str]:
    e = dict(env)
    if kind == "refused":  # nothing listens there
        for k in ("ANTHROPIC_BASE_URL", "GOOGLE_GEMINI_BASE_URL"):
            e[k] = "http://127.0.0.1:9"
        clis.configure_home(home, "http://127.0.0.1:9")
    if kind == "nokey":
        e.pop("MISTRAL_API_KEY", None)
    return e


@pytest.mark.parametrize("name,kind", list(CASES))
def test_a_provider_in_trouble_is_waited_out_never_counted(
        name: str, kind: str, agent_cli: Callable[[str], clis.Cli], board: Path,
        agent_env: dict[str, str], server: Server) -> None:
    agent_cli(name)
    if kind not in ("refused", "nokey"):
        server.trouble = Trouble(kind, retry_after=20)
    env = _env_for(kind, agent_env, Path(agent_env["HOME"]))
    liza(board, env, "config", "max_no_progress_runs", "1")  # one counted run would give up
    sup = _coder(board, env, name)
    try:
        line = sup.expect(f"{name} {CASES[name, kind]}", timeout=240)
        print(line)
        if CASES[name, kind] == "not logged in":
            w = liza(board, env, "watch", "--once", "--json", check=False)
            got = [json.loads(x) for x in w.stdout.splitlines() if x.strip()]
            assert any(a["kind"] == "PROVIDER" and a["subject"] == name for a in got), w.stdout
    finally:
        liza(board, env, "abort")
        code = sup.wait(60)
    assert code == 0, sup.output()
    show = json.loads(liza(board, env, "show", "hello", "--json").stdout)
    assert show["status"] == "CLAIMED" and not show.get("failed_by"), show
    assert "giving up" not in sup.output()
    print(f"{name} {kind}: {sum('started agent' in x for x in sup.lines)} launches, "
          f"{sum(1 for e in server.log if e.method == 'POST')} POSTs")


def test_a_rate_limited_claude_launches_at_most_3_times_in_2_minutes_then_resumes(
        agent_cli: Callable[[str], clis.Cli], board: Path, agent_env: dict[str, str],
        server: Server) -> None:
    """The provider says "retry after 5 s" at every request for 2 minutes, then answers: the
    supervisor launches at most 3 times in those 2 minutes (each launch saves a prompt) and
    the task is done after, never counted failed."""
    agent_cli("claude")
    server.trouble = Trouble("rate_limit", retry_after=5)
    liza(board, agent_env, "config", "max_no_progress_runs", "1")
    sup = _coder(board, agent_env, "claude")
    prompts = board / ".liza" / "agent-prompts"
    try:
        sup.expect("claude rate limited", timeout=240)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 120:
            time.sleep(2)
        launched = len(list(prompts.glob("coder-1-*.txt")))
        refused = sum(1 for e in server.log if str(e.answer).startswith("refused"))
        server.trouble = None  # the limit lifts
        resumed = time.monotonic()
        # The next launch comes after the backoff in force when the limit lifted (up to 2x
        # the last wait: minutes), not at once: `wait`'s own timeout, not the helper's 120 s.
        liza(board, agent_env, "wait", "status", "--task", "hello", "--status",
             "READY_FOR_REVIEW", "--timeout", "600", timeout=660)
        print(f"claude under a rate limit: {launched} launches and {refused} refused requests "
              f"in the first 2+ minutes; done {time.monotonic() - resumed:.0f} s after it lifted")
    finally:
        liza(board, agent_env, "abort")
        sup.wait(60)
    assert 1 <= launched <= 3, sup.output()
    show = json.loads(liza(board, agent_env, "show", "hello", "--json").stdout)
    assert not show.get("failed_by"), show
    assert "provider answering again" in sup.output()


def test_team_names_a_logged_out_cli_before_it_starts(
        agent_cli: Callable[[str], clis.Cli], board: Path, agent_env: dict[str, str]) -> None:
    agent_cli("mistral")
    env = dict(agent_env)
    env.pop("MISTRAL_API_KEY")
    p = subprocess.Popen([str(BIN / "git-liza"), "team", "--cli", "mistral", "--coders", "1",
                          "--planners", "0", "--reviewers", "0"], cwd=board, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    try:
        assert p.stdout is not None
        for line in p.stdout:
            lines.append(line)
            if "started `git liza agent" in line:
                break
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(30)
    out = "".join(lines)
    assert "team: mistral not ready: MISTRAL_API_KEY is not set" in out, out
    assert out.index("not ready") < out.index("started `git liza agent")  # before any start
