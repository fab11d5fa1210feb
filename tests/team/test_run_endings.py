"""Why a run ended, per CLI, from the lines each real CLI printed (recorded against the scripted
model server in trouble: tests/agentcli/modelserver.py `Trouble`, tests/agentcli/test_provider.py)
and its exit code: each profile's reader (gitliza/agentcli/) and core/agents/faults.py's judgement,
pure (no process)."""
from __future__ import annotations

import pytest

from gitliza import agentcli
from gitliza.core.agents import faults
from gitliza.core.agents.faults import End, Ending, Sign
from gitliza.team.ending import Watch

NOW = 1_800_000_000.0

CLAUDE_RETRY = ('{"type":"system","subtype":"api_retry","attempt":%d,"max_retries":10,'
                '"retry_delay_ms":%s,"error_status":%s,"error":"%s","session_id":"e7"}')
# name -> (cli, output lines, exit code, expected end, expected reset offset or None)
RECORDED: dict[str, tuple[str, list[str], int, End, float | None]] = {
    "claude not logged in": ("claude", [
        '{"type":"result","subtype":"success","is_error":true,"api_error_status":null,'
        '"duration_ms":136,"num_turns":1,"result":"Not logged in \u00b7 Please run /login"}'],
        1, End.NOT_LOGGED_IN, None),
    "claude 401": ("claude", [CLAUDE_RETRY % (1, "511.7", "401", "authentication_failed")],
                   1, End.NOT_LOGGED_IN, None),
    "claude 429": ("claude", [CLAUDE_RETRY % (n, "30000", "429", "rate_limit")
                              for n in (1, 2)], 1, End.RATE_LIMITED, 30),
    "claude 529": ("claude", [CLAUDE_RETRY % (n, "518.9", "529", "overloaded")
                              for n in (1, 2, 3)], 1, End.OVERLOADED, 1),
    "claude refused": ("claude", [CLAUDE_RETRY % (1, "611.3", "null", "unknown")], 1,
                       End.NETWORK, 1),
    "claude 5-hour limit": ("claude", [
        '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":%d,'
        '"rateLimitType":"five_hour"}}' % (NOW + 3600),
        '{"type":"result","subtype":"success","is_error":true,"api_error_status":429,'
        '"result":"Claude AI usage limit reached"}'], 1, End.RATE_LIMITED, 3600),
    "claude done": ("claude", [
        '{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1}}',
        '{"type":"result","subtype":"success","is_error":false,"result":"Done."}'], 0,
        End.DONE, None),
    "claude max turns": ("claude", [
        '{"type":"result","subtype":"error_max_turns","is_error":true,"result":""}'], 1,
        End.AGENT_ERROR, None),
    "codex 401": ("codex", [
        '{"type":"error","message":"Reconnecting... 1/5 (unexpected status 401 Unauthorized: '
        'Incorrect API key provided: sk-liza-****.)"}',
        '{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized: '
        'Incorrect API key provided: sk-liza-****."}}'], 1, End.NOT_LOGGED_IN, None),
    "codex no key": ("codex", [
        '{"type":"error","message":"Missing environment variable: `SCRIPTED_MODEL_KEY`."}',
        '{"type":"turn.failed","error":{"message":"Missing environment variable: '
        '`SCRIPTED_MODEL_KEY`."}}'], 1, End.NOT_LOGGED_IN, None),
    "codex insufficient_quota": ("codex", [
        '{"type":"error","message":"Quota exceeded. Check your plan and billing details."}',
        '{"type":"turn.failed","error":{"message":"Quota exceeded. Check your plan and billing '
        'details."}}'], 1, End.QUOTA, None),
    "codex 429": ("codex", [
        '{"type":"error","message":"Reconnecting... 1/5 (exceeded retry limit, last status: '
        '429 Too Many Requests)"}'], 1, End.RATE_LIMITED, None),
    "codex refused": ("codex", [
        '{"type":"error","message":"Reconnecting... waiting for network (Connection failed: '
        'error sending request)"}'], 1, End.NETWORK, None),
    "codex failed turn": ("codex", [
        '{"type":"turn.failed","error":{"message":"the tool call was malformed"}}'], 1,
        End.AGENT_ERROR, None),
    "gemini bad key": ("gemini", [
        '{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: '
        '{\\"error\\":{\\"code\\":400,\\"status\\":\\"INVALID_ARGUMENT\\",\\"message\\":\\"API '
        'key not valid. Please pass a valid API key.\\"}}]"}}'], 144, End.NOT_LOGGED_IN, None),
    "gemini no key": ("gemini", [
        "When using Gemini API, you must specify the GEMINI_API_KEY environment variable."],
        41, End.NOT_LOGGED_IN, None),
    "gemini exit 41": ("gemini", ["something else"], 41, End.NOT_LOGGED_IN, None),
    "gemini RESOURCE_EXHAUSTED": ("gemini", [
        "Attempt 1 failed: Resource has been exhausted (e.g. check quota).",
        "Suggested retry after 30s.. Retrying after 33271ms..."], 1, End.RATE_LIMITED, 30),
    "gemini quota": ("gemini", [
        "Attempt 1 failed: You exceeded your current quota, please check your plan and billing "
        "details.", "Suggested retry after 30s.. Retrying after 32347ms..."], 1, End.QUOTA, 30),
    "gemini 503": ("gemini", [
        'Attempt 1 failed with status 503. Retrying with backoff... _ApiError: {"error":'
        '{"code":503,"status":"UNAVAILABLE","message":"The model is overloaded."}}'], 1,
        End.OVERLOADED, None),
    "gemini refused": ("gemini", [
        "Attempt 1 failed. Retrying with backoff... Error: exception TypeError: fetch failed "
        "sending request"], 1, End.NETWORK, None),
    "vibe bad key": ("mistral", [
        "Error: Invalid API key (from env var MISTRAL_API_KEY). Please check your API key and "
        "try again."], 1, End.NOT_LOGGED_IN, None),
    "vibe no key": ("mistral", [
        "Reading API keys from the system keyring (set them as environment variables to skip "
        "this)", "Error: Missing MISTRAL_API_KEY environment variable for mistral provider"], 1,
        End.NOT_LOGGED_IN, None),
    "vibe agent error": ("mistral", ["Error: the tool bash failed"], 1, End.AGENT_ERROR, None),
    "command line": ("command", [
        "working...", "gitliza-end: quota until=2027-01-15T12:00:00Z monthly credit"], 1,
        End.QUOTA, faults.parse_time("2027-01-15T12:00:00Z") - NOW),  # type: ignore[operator]
    "command 75": ("command", ["busy"], 75, End.RATE_LIMITED, None),
    "command 77": ("command", ["who am i"], 77, End.NOT_LOGGED_IN, None),
    "command crash": ("command", ["Segmentation fault"], 139, End.CRASHED, None),
    "command error": ("command", ["AssertionError: boom"], 1, End.AGENT_ERROR, None),
}


def _ending(cli: str, lines: list[str], code: int, stopped_by: str | None = None) -> Ending:
    p = agentcli.find(cli) if cli != "command" else agentcli.PLAIN
    assert p is not None
    w = Watch(p.reads, exits=p.exits)
    for line in lines:
        w.feed(line, now=NOW)
    return w.ending(code, stopped_by)


@pytest.mark.parametrize("name", list(RECORDED))
def test_each_cli_s_recorded_end_is_classified(name: str) -> None:
    cli, lines, code, end, reset = RECORDED[name]
    e = _ending(cli, lines, code)
    assert e.end == end, (e, name)
    if reset is None:
        assert e.reset is None or end in (End.RATE_LIMITED, End.OVERLOADED), e
    else:
        assert e.reset is not None and abs(e.reset - (NOW + reset)) <= 1, e
    if end not in (End.DONE, End.CRASHED):
        assert e.line, "a failed run says why"


def test_a_5_hour_limit_is_said_with_its_window_and_reset() -> None:
    e = _ending("claude", RECORDED["claude 5-hour limit"][1], 1)
    assert e.window == "5-hour limit"
    assert e.text("claude") == f"claude rate limited until " \
                               f"{faults.clock.from_epoch(NOW + 3600)} (5-hour limit)"


def test_a_run_that_retried_past_a_429_and_finished_is_done() -> None:
    lines = [CLAUDE_RETRY % (1, "30000", "429", "rate_limit"),
             '{"type":"result","subtype":"success","is_error":false,"result":"ok"}']
    assert _ending("claude", lines, 0).end == End.DONE


def test_our_stop_is_ours_unless_it_was_on_the_provider_s_sign() -> None:
    lines = [CLAUDE_RETRY % (1, "511", "401", "authentication_failed")]
    assert _ending("claude", lines, -15, "task budget spent").end == End.KILLED
    e = _ending("claude", lines, -15, faults.PROVIDER_STOP + "authentication_failed")
    assert e.end == End.NOT_LOGGED_IN


def test_the_agent_is_stopped_at_once_on_a_refused_login_and_on_the_third_rate_limit() -> None:
    p = agentcli.profile("claude")
    stopped: list[Sign] = []
    w = Watch(p.reads, stopped.append)
    w.feed(CLAUDE_RETRY % (1, "511", "401", "authentication_failed"))
    assert [s.end for s in stopped] == [End.NOT_LOGGED_IN]
    stopped.clear()
    w = Watch(p.reads, stopped.append)
    for n in (1, 2):
        w.feed(CLAUDE_RETRY % (n, "30000", "429", "rate_limit"))
    assert stopped == []  # the CLI's own retries, as long as they are few
    w.feed(CLAUDE_RETRY % (3, "30000", "429", "rate_limit"))
    w.feed(CLAUDE_RETRY % (4, "30000", "429", "rate_limit"))
    assert [s.end for s in stopped] == [End.RATE_LIMITED]  # once


def test_agent_chatter_about_401_in_a_json_event_does_not_classify() -> None:
    """The agent's own text (assistant messages, tool output) is not read: only the CLI's
    error events and plain lines."""
    line = ('{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":'
            '"fixed the 401 and rate limit handling"}]}}')
    assert _ending("claude", [line], 1).end == End.AGENT_ERROR


def test_a_forged_or_odd_event_explains_nothing() -> None:
    for line in ('{"type":"system","subtype":"api_retry","retry_delay_ms":"x","error_status":'
                 '"429"}', '{"type":"rate_limit_event","rate_limit_info":[]}', '[1,2]', '{'):
        e = _ending("claude", [line], 1)
        assert e.end in (End.AGENT_ERROR, End.NETWORK, End.RATE_LIMITED), e


@pytest.mark.parametrize("attempt,lo,hi", [(1, 24, 36), (2, 48, 72), (3, 96, 144),
                                           (10, 720, 1080)])
def test_backoff_without_a_reset_is_capped_and_jittered(attempt: int, lo: float,
                                                        hi: float) -> None:
    e = Ending(End.OVERLOADED, 1)
    got = [faults.wait_seconds(e, NOW, attempt, r) for r in (0.0, 0.5, 0.999)]
    assert all(lo <= g <= hi for g in got), got
    assert got[0] < got[2]


def test_the_wait_is_the_reset_given_but_not_a_year() -> None:
    assert 3600 <= faults.wait_seconds(Ending(End.RATE_LIMITED, 1, reset=int(NOW) + 3600),
                                         NOW, 1, 0.5) <= 3612
    far = faults.wait_seconds(Ending(End.QUOTA, 1, reset=int(NOW) + 400 * 86400), NOW, 1, 0.5)
    assert far <= faults.BACKOFF_CAP


def test_a_provider_that_says_retry_in_5s_every_time_gets_3_launches_in_2_minutes() -> None:
    t, launches, attempt = 0.0, [0.0], 0
    while t < 600:
        attempt += 1
        e = Ending(End.RATE_LIMITED, 1, reset=int(NOW + t) + 5)
        t += 1 + faults.wait_seconds(e, NOW + t, attempt, 0.0)  # each run: 1 s
        launches.append(t)
    assert max(sum(1 for x in launches if s <= x < s + 120) for s in launches) <= 3


def test_the_board_record_of_a_wait_round_trips() -> None:
    w = faults.Wait("claude", End.RATE_LIMITED, "2026-12-05T13:00:00Z", "2026-12-05T14:05:00Z",
                      "5-hour limit")
    assert faults.parse_wait(w.record()) == w
    assert faults.parse_wait("claude sleepy since x") is None
    assert faults.parse_wait(None) is None


@pytest.mark.parametrize("cli,env,files,ready", [
    ("claude", {}, {}, False),
    ("claude", {"ANTHROPIC_API_KEY": "k"}, {}, True),
    ("claude", {}, {".claude/.credentials.json": '{"claudeAiOauth":{"accessToken":"x"}}'}, True),
    ("codex", {}, {}, False),
    ("codex", {"OPENAI_API_KEY": "k"}, {}, True),
    ("codex", {"OPENAI_API_KEY": "k"}, {".codex/config.toml": 'model_provider = "p"\n'
                                        '[model_providers.p]\nenv_key = "MYKEY"\n'}, False),
    ("codex", {}, {".codex/auth.json": "{}"}, True),
    ("gemini", {"GEMINI_API_KEY": "k"}, {}, True),
    ("gemini", {}, {}, False),
    ("mistral", {}, {}, False),
    ("mistral", {}, {".vibe/.env": "MISTRAL_API_KEY=abc\n"}, True),
])
def test_each_cli_s_login_is_checked_without_a_request(cli: str, env: dict[str, str],
                                                        files: dict[str, str],
                                                        ready: bool) -> None:
    p = agentcli.find(cli)
    assert p is not None and p.logged_in is not None
    why = p.logged_in(env, files.get)
    assert (why is None) == ready, why
    if not ready and cli == "codex" and files:
        assert why is not None and "MYKEY" in why


def test_a_long_limit_stops_the_cli_at_once_a_short_one_after_three() -> None:
    p = agentcli.profile("claude")
    stopped: list[Sign] = []
    w = Watch(p.reads, stopped.append)
    w.feed(CLAUDE_RETRY % (1, "3600000", "429", "rate_limit"), now=NOW)  # retry in an hour
    assert [s.end for s in stopped] == [End.RATE_LIMITED]
    assert stopped[0].reset == NOW + 3600


def test_the_web_task_page_lists_the_runs_with_their_end() -> None:
    from gitliza.web.taskpage import runs_panel
    html = runs_panel([{"timestamp": "2026-12-05T04:00:00Z", "run": "coder-1.1.1", "cli": "claude",
                        "model": "opus", "input_tokens": 10, "output_tokens": 5, "duration": 3,
                        "end": "rate_limited"}, {"run": "coder-1.1.2", "cli": "codex"}])
    assert "coder-1.1.1" in html and "claude/opus" in html and "rate limited" in html
    assert "coder-1.1.2" in html
    assert runs_panel([]) == ""


def test_gemini_s_own_message_is_said_not_its_retry_notice() -> None:
    e = _ending("gemini", RECORDED["gemini RESOURCE_EXHAUSTED"][1], 1)
    assert e.line.startswith("Attempt 1 failed: Resource has been exhausted"), e
    assert e.reset == NOW + 30


@pytest.mark.parametrize("line", [
    "[MCP] gitliza: tool call refused (permission denied)", "fixed bug 401 in parser",
    "see https://example.com/login for details", "processed 429 files", "billing.py updated",
    "line 503 of app.js"])
def test_ordinary_lines_are_no_provider_sign(line: str) -> None:
    """A plain line the agent's work may print is not read as the provider's refusal (the
    supervisor would stop a working agent on it)."""
    assert faults.text_sign(line, NOW) is None
