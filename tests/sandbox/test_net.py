"""The pure parts of `--sandbox model`'s network (gitliza/sandbox/net.py): what an agent may
reach, and how a proxy request names where it wants to go. The gate and the forwarder at work are
tests/sandbox/test_rogue.py's (a real sandbox, real sockets)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gitliza.errors import ValidationError
from gitliza.sandbox import net
from tests.cli.test_board import liza, ok
from tests.conftest import git


def test_endpoints_from_urls_and_host_ports() -> None:
    assert net.endpoint("https://api.anthropic.com") == ("api.anthropic.com", 443)
    assert net.endpoint("http://127.0.0.1:8080/v1") == ("127.0.0.1", 8080)
    assert net.endpoint("http://Model.Example:80") == ("model.example", 80)
    assert net.endpoint("api.mistral.ai:443") == ("api.mistral.ai", 443)
    assert net.endpoint("[::1]:9000") == ("::1", 9000)
    for bad in ("", "api.mistral.ai", "host:0", "host:70000", "http://", "a b:80",
                "http://evil\x1b]0;title\x07.example/"):  # a host is logged: nothing else in it
        assert net.endpoint(bad) is None, bad


def test_the_allow_list_is_the_clis_model_hosts_and_what_the_human_named() -> None:
    assert net.allowed("claude", {}) == {("api.anthropic.com", 443)}
    assert net.allowed(None, {}) == frozenset()  # a `-- COMMAND` agent: nothing by default
    env = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:5000", net.ALLOW_ENV: "mcp.example:8443, junk",
           "SOME_URL": "http://not-a-model.example"}
    got = net.allowed("vibe", env, ["https://llm.internal:9443/v1"])
    assert got == {("api.mistral.ai", 443), ("127.0.0.1", 5000), ("mcp.example", 8443),
                   ("llm.internal", 9443)}
    assert net.loopback_ports(got) == [5000]
    assert net.proxy_port([3128, 3129]) == 3130 and net.proxy_port([5000]) == net.PROXY_PORT


def test_the_model_endpoints_of_codex_and_vibe_configuration(tmp_path: Path) -> None:
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text(
        'model_provider = "x"\n[model_providers.x]\nbase_url = "http://127.0.0.1:7000/v1"\n')
    (tmp_path / ".vibe").mkdir()
    (tmp_path / ".vibe" / "config.toml").write_text(
        '[[providers]]\nname = "m"\napi_base = "https://eu.mistral.example/v1"\n')
    assert net.config_urls("codex", tmp_path) == ["http://127.0.0.1:7000/v1"]
    assert net.config_urls("vibe", tmp_path) == ["https://eu.mistral.example/v1"]
    assert net.config_urls("claude", tmp_path) == []
    (tmp_path / ".codex" / "config.toml").write_text("not = [toml")
    assert net.config_urls("codex", tmp_path) == []


def test_a_proxy_request_names_its_target() -> None:
    assert net.request_target(b"CONNECT api.openai.com:443 HTTP/1.1\r\nHost: x\r\n\r\n") == \
        ("CONNECT", ("api.openai.com", 443), b"")
    method, target, send = net.request_target(
        b"POST http://127.0.0.1:9/v1/x?a=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n"
        b"Proxy-Connection: keep-alive\r\nConnection: keep-alive\r\nProxy-Authorization: x\r\n"
        b"Content-Length: 2\r\n\r\n{}")
    assert (method, target) == ("POST", ("127.0.0.1", 9))
    # origin form, the proxy's headers dropped, and one request per connection (the next one,
    # perhaps for another host, comes on a new connection the gate judges again)
    assert send == (b"POST /v1/x?a=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\nContent-Length: 2\r\n"
                    b"Connection: close\r\n\r\n{}")
    assert net.request_target(b"GET /relative HTTP/1.1\r\n\r\n")[1] is None
    assert net.request_target(b"garbage\r\n\r\n") == ("", None, b"")


def test_the_agents_proxy_variables() -> None:
    env = net.proxy_env(3128)
    assert env["HTTPS_PROXY"] == env["http_proxy"] == "http://127.0.0.1:3128"
    assert env["NO_PROXY"] == "127.0.0.1,localhost,::1"


def test_the_forwarder_refuses_a_malformed_command_line() -> None:
    for argv in ([], ["sock", "3128"], ["sock", "--", "true"], ["sock", "3128", "--"]):
        r = subprocess.run([sys.executable, "-I", "-m", "gitliza.sandbox.netin", *argv],
                           capture_output=True, text=True)
        assert r.returncode == 1 and r.stderr.startswith("usage:"), argv


def test_a_bad_allow_entry_is_refused_before_anything_starts(repo: Path) -> None:
    """LIZA_SANDBOX_ALLOW with an entry that is not host:port: one line, exit 1, the board as
    it was (the supervisor checks it before it claims anything)."""
    with pytest.raises(ValidationError, match="'junk' is not host:port"):
        net.check_allow({net.ALLOW_ENV: "api.example:443, junk"})
    net.check_allow({net.ALLOW_ENV: "api.example:443, https://x.example ,"})
    ok(liza(repo, "init", "Build hello", agent=None))
    before = git(repo, "rev-parse", "refs/liza/state")
    r = liza(repo, "agent", "coder", "--once", "--sandbox", "model", "--", "true",
             agent="coder-1", env={net.ALLOW_ENV: "junk"})
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "'junk'" in r.stderr, r.stderr
    assert git(repo, "rev-parse", "refs/liza/state") == before
