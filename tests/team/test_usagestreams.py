"""Each CLI's machine-readable output as the supervisor reads it: through a real pipe and its
reader thread (gitliza/team/usage.py Meter), the log gets readable lines, not JSON, and the
usage counted is what the events say (the shapes are the CLIs' own, from their sources; the real
CLIs are checked end to end in tests/agentcli/test_usage.py)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gitliza.errors import ValidationError
from gitliza.team import usage


def _run(tmp: Path, cli: str, events: list[Any], extra: bytes = b"") -> tuple[usage.Counted, str]:
    m = usage.Meter.start(tmp, "coder-1.1.1", cli, False)
    log = (tmp / "run.log").open("wb")
    w = m.output(log)
    assert w is not None and w is not log  # a pipe: the reader renders into the log
    w.write(b"".join(json.dumps(e).encode() + b"\n" for e in events) + extra)
    w.close()
    got, reports, bad = m.finish()
    assert bad == 0 and reports == []
    return got, (tmp / "run.log").read_text()


def test_claude_counts_every_model_and_its_cost(tmp_path: Path) -> None:
    events = [
        {"type": "system", "subtype": "init", "session_id": "s1", "model": "claude-x"},
        {"type": "assistant", "message": {"id": "m1", "content": [
            {"type": "text", "text": "Reading the task."},
            {"type": "tool_use", "name": "Bash", "input": {"command": "git liza show t1"}}],
            "usage": {"input_tokens": 10, "output_tokens": 5}}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "content": "t1 [CLAIMED]"}]}},
        {"type": "result", "subtype": "success", "num_turns": 2, "result": "Done.",
         "total_cost_usd": 0.012345, "usage": {"input_tokens": 10, "output_tokens": 5},
         "modelUsage": {"claude-x": {"inputTokens": 300, "outputTokens": 40,
                                     "cacheReadInputTokens": 700, "cacheCreationInputTokens": 50},
                        "claude-haiku": {"inputTokens": 20, "outputTokens": 3}}}]
    got, log = _run(tmp_path, "claude", events, b"a warning on stderr\n")
    assert (got.input, got.output, got.cached, got.cost, got.model) == \
        (300 + 700 + 50 + 20, 43, 700, 12345, "claude-x")
    assert "Reading the task." in log and "-> Bash" in log and "<- t1 [CLAIMED]" in log
    assert "a warning on stderr" in log and '"type"' not in log


def test_claude_killed_before_its_result_counts_each_message_once(tmp_path: Path) -> None:
    msg = {"id": "m1", "content": [{"type": "text", "text": "a"}],
           "usage": {"input_tokens": 100, "cache_read_input_tokens": 10, "output_tokens": 7}}
    # stream-json repeats a message's usage on each of its content blocks
    got, _ = _run(tmp_path, "claude", [{"type": "assistant", "message": msg}] * 3)
    assert (got.input, got.output, got.cached, got.cost) == (110, 7, 10, None)


def test_codex_adds_its_turns(tmp_path: Path) -> None:
    turn = {"type": "turn.completed",
            "usage": {"input_tokens": 1000, "cached_input_tokens": 400, "output_tokens": 30}}
    got, log = _run(tmp_path, "codex", [
        {"type": "thread.started", "thread_id": "th"},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "On it."}},
        {"type": "item.completed", "item": {"type": "command_execution", "command": "ls",
                                            "aggregated_output": "a b", "exit_code": 0}},
        turn, turn])
    assert (got.input, got.output, got.cached, got.cost) == (2000, 60, 800, None)
    assert "On it." in log and "$ ls (exit 0)" in log


def test_gemini_reads_the_result_stats_and_joins_deltas(tmp_path: Path) -> None:
    got, log = _run(tmp_path, "gemini", [
        {"type": "init", "session_id": "g", "model": "gemini-x"},
        {"type": "message", "role": "assistant", "content": "Hel", "delta": True},
        {"type": "message", "role": "assistant", "content": "lo.", "delta": True},
        {"type": "tool_use", "tool_name": "run_shell_command", "parameters": {"command": "ls"}},
        {"type": "result", "status": "success",
         "stats": {"total_tokens": 130, "input_tokens": 100, "output_tokens": 30, "cached": 40,
                   "models": {"gemini-x": {}}}}])
    assert (got.input, got.output, got.cached, got.model) == (100, 30, 40, "gemini-x")
    assert "Hello.\n-> run_shell_command" in log


def test_vibe_export_adds_subagents(tmp_path: Path) -> None:
    m = usage.Meter.start(tmp_path, "coder-1.1.1", "mistral", False)
    assert m.argv(["vibe", "--agent", "x", "--prompt-file", "p"], "vibe", ()) == \
        ["vibe", "--output-dir", str(m.export_to), "--agent", "x", "--prompt-file", "p"]
    assert m.export_to is not None
    m.export_to.mkdir(parents=True)
    (m.export_to / "export.json").write_text(json.dumps({
        "usage": {"input_tokens": 500, "output_tokens": 50, "cached_input_tokens": 100,
                  "total_tokens": 550}, "cost_usd": 0.5,
        "subagents": [{"usage": {"input_tokens": 10, "output_tokens": 1,
                                 "cached_input_tokens": 0, "total_tokens": 11},
                       "cost_usd": 0.25}]}))
    got, _, _ = m.finish()
    assert (got.input, got.output, got.cached, got.cost) == (510, 51, 100, 750000)
    assert not m.export_to.exists()  # the export and its journal copy do not pile up


def test_flags_go_after_the_headless_words_wherever_the_executable_is(tmp_path: Path) -> None:
    m = usage.Meter.start(tmp_path, "coder-1.1.1", "codex", False)
    assert m.argv(["wrapper", "--", "/x/codex", "exec", "--sandbox", "w", "-"], "codex",
                  ("exec",)) == ["wrapper", "--", "/x/codex", "exec", "--json", "--sandbox",
                                 "w", "-"]
    assert usage.Meter.start(tmp_path, "coder-1.1.2", "claude", True).argv(
        ["claude"], "claude", ("-p",)) == ["claude"]  # interactive: nothing added


def test_reports_are_added_and_a_malformed_line_is_skipped(tmp_path: Path) -> None:
    m = usage.Meter.start(tmp_path, "coder-1.1.1", "command", False)
    env = {usage.RUN_ENV: "coder-1.1.1"}
    usage.report(tmp_path, env, input_tokens=800, output_tokens=200, cached_tokens=100,
                 cost="0.01", model="m")
    usage.report(tmp_path, env, input_tokens=1, output_tokens=2)
    with usage.reports_path(tmp_path, "coder-1.1.1").open("a") as f:
        f.write('{"input": -5}\nnot json\n')
    with pytest.raises(ValidationError):
        usage.report(tmp_path, env, input_tokens=5, output_tokens=1, cached_tokens=6)
    got, reports, bad = m.finish()
    for r in reports:
        got.add(r)
    assert (got.input, got.output, got.cached, got.cost, got.model, bad) == \
        (801, 202, 100, 10000, "m", 2)
    with pytest.raises(ValidationError, match="not running"):  # the run is over
        usage.report(tmp_path, env, input_tokens=1, output_tokens=1)
    with pytest.raises(ValidationError, match="not inside an agent run"):
        usage.report(tmp_path, {}, input_tokens=1, output_tokens=1)
    with pytest.raises(ValidationError, match="not running"):
        usage.report(tmp_path, {usage.RUN_ENV: "../x"}, input_tokens=1, output_tokens=1)
