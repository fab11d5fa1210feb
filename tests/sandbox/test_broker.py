"""The broker (the supervisor's end of an agent's channel) and its client, over a real unix
socket, with real `git liza` and `git liza mcp` processes behind it: the agent acts as itself
whatever it claims, only with its role's ops; refusals are one line, exit 1, and recorded.
No sandbox is needed for this part (tests/sandbox/test_rogue.py runs it inside one)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from gitliza.access import mcp_config
from gitliza.core.states import Role
from gitliza.sandbox.broker import Broker
from tests.access.mcp_client import setup_board
from tests.conftest import git

PY = sys.executable


def _connect(path: str) -> tuple[Any, Any]:
    from gitliza.sandbox.client import _connect as connect
    return connect(path)


@pytest.fixture
def coder(repo: Path) -> Iterator[tuple[Broker, list[tuple[str, bool]]]]:
    setup_board(repo)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIZA_")}
    env["PATH"] = f"{Path(PY).parent}{os.pathsep}{env['PATH']}"
    refused: list[tuple[str, bool]] = []
    b = Broker("c1", Role.CODER, env, repo, (PY, "-m", "gitliza"),
               mcp_config.server(repo, "c1", "coder", python=PY), lambda: None,
               lambda line, anomaly: refused.append((line, anomaly)))
    yield b, refused
    b.close()


def client(b: Broker, *argv: str, env: dict[str, str] | None = None
           ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-I", "-m", "gitliza.sandbox.client", str(b.path), *argv],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def test_commands_run_as_the_agent_in_its_role_and_refusals_are_recorded(
        repo: Path, coder: tuple[Broker, list[tuple[str, bool]]]) -> None:
    b, refused = coder
    state = git(repo, "rev-parse", "refs/liza/state")
    r = client(b, "status")
    assert r.returncode == 0 and "t1" in r.stdout
    # Impersonation by environment changes nothing; by flag, and another role's op, refused.
    for argv, rule in ((["verdict", "t1", "approve"], "`verdict` is not an op of a coder"),
                       (["claim", "t1", "--agent", "r1"], "identity is bound by the supervisor"),
                       (["merge", "t1"], "the supervisor's or the human's"),
                       (["config", "lease_duration", "9"], "the supervisor's or the human's")):
        r = client(b, *argv, env={"LIZA_AGENT_ID": "r1"})
        assert r.returncode == 1 and r.stderr.count("\n") == 1 and rule in r.stderr, r.stderr
    assert git(repo, "rev-parse", "refs/liza/state") == state
    assert len(refused) == 4 and [a for _l, a in refused] == [True, True, True, False]
    # An allowed write is made as the agent (the board names c1, not the environment's r1).
    r = client(b, "discover", "flaky clock", "--severity", "low", "--urgency", "deferred",
               env={"LIZA_AGENT_ID": "r1"})
    assert r.returncode == 0, r.stderr
    log = json.loads(subprocess.run([PY, "-m", "gitliza", "log", "--json"], cwd=repo,
                                    capture_output=True, text=True, check=True).stdout)
    assert log[0]["op"] == "discover" and log[0]["actor"] == "c1"
    # A malformed request is one line, not a crash of the channel; so is JSON nested past the
    # parser's depth.
    for junk in (b"{not json\n", b"[" * 200_000 + b"\n"):
        r, w = _connect(str(b.path))
        assert w is not None
        with r, w:
            w.write(junk)
            w.flush()
            assert b"malformed" in r.readline()
    assert client(b, "status").returncode == 0


def test_the_broker_bounds_connections_and_opens_no_planted_link(
        repo: Path, tmp_path: Path, coder: tuple[Broker, list[tuple[str, bool]]]) -> None:
    """Issue 35: idle connections past MAX_CONNECTIONS are answered "busy" (no thread, no
    process per connection beyond the cap); a name in the door whose FIFOs are links to files
    outside is not opened: the files stay as they were."""
    import threading
    from gitliza.sandbox.fifos import DOOR, MAX_CONNECTIONS
    b, _ = coder
    before = threading.active_count()
    idle = [_connect(str(b.path)) for _ in range(MAX_CONNECTIONS)]
    r, w = _connect(str(b.path))
    assert b"more than 16 calls at once" in r.readline()
    assert threading.active_count() - before <= MAX_CONNECTIONS + 1
    for f in [r, w, *(x for pair in idle for x in pair)]:
        if f is not None:
            f.close()
    victim = tmp_path / "victim"
    victim.write_text("precious")
    conn = Path(str(b.path) + "-conn")
    name = "ab" * 16
    (conn / f"{name}.down").symlink_to(victim)
    (conn / f"{name}.up").symlink_to(victim)
    with open(b.path / DOOR, "wb", buffering=0) as door:
        door.write(name.encode() + b"\n")
    assert client(b, "status").returncode == 0  # served after the planted name
    assert victim.read_text() == "precious"


def test_the_channel_works_in_a_process_with_descriptors_past_1023(
        coder: tuple[Broker, list[tuple[str, bool]]]) -> None:
    """A supervisor that has run for days (or a test worker) holds descriptors numbered past
    1023, which select() refuses ("filedescriptor out of range"): both ends of the channel wait
    on poll instead, so a connection opened there is served and answered."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 1100
    if hard != resource.RLIM_INFINITY and hard < want + 64:
        pytest.skip(f"the hard limit on open files ({hard}) is below {want + 64}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want + 64), hard))
    filler = []
    try:
        while not filler or filler[-1] < want:
            filler.append(os.open(os.devnull, os.O_RDONLY))
        b, _ = coder
        r, w = _connect(str(b.path))
        assert w is not None and r.fileno() > 1023 and w.fileno() > 1023
        w.write(json.dumps({"argv": ["status"]}).encode() + b"\n")
        w.flush()
        answer = json.loads(r.readline())
        assert answer["exit"] == 0 and answer["out"], answer
        r.close()
        w.close()
    finally:
        for fd in filler:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_add_from_relays_the_content_read_inside_and_opens_no_path_outside(
        repo: Path, tmp_path: Path) -> None:
    """Issue 35: a planner's `git liza add --from FILE` works through the broker: its client
    reads FILE (inside the agent's view, in a real sandbox) and relays the content as `--from -`;
    a FIFO is refused at once instead of hanging, a file past the bound is refused, and a
    request that names a path itself (not through the client) is refused with nothing opened."""
    from gitliza.sandbox.client import MAX_FROM
    setup_board(repo)
    subprocess.run([PY, "-m", "gitliza", "register", "planner-1", "--role", "planner"], cwd=repo,
                   check=True, capture_output=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIZA_")}
    refused: list[tuple[str, bool]] = []
    b = Broker("planner-1", Role.PLANNER, env, repo, (PY, "-m", "gitliza"), None,
               lambda: None, lambda line, anomaly: refused.append((line, anomaly)))
    try:
        tasks = tmp_path / "tasks.yaml"
        tasks.write_text("- id: r1\n  description: relayed one\n  done_when: it is\n"
                         "- id: r2\n  description: relayed two\n  done_when: it is\n")
        r = client(b, "add", "--from", str(tasks))
        assert r.returncode == 0, r.stderr
        log = json.loads(subprocess.run([PY, "-m", "gitliza", "log", "--json"], cwd=repo,
                                        capture_output=True, text=True, check=True).stdout)
        assert log[0]["op"] == "add-tasks" and log[0]["actor"] == "planner-1"
        shown = subprocess.run([PY, "-m", "gitliza", "show", "r2"], cwd=repo,
                               capture_output=True, text=True)
        assert shown.returncode == 0 and "relayed two" in shown.stdout
        state = git(repo, "rev-parse", "refs/liza/state")
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        big = tmp_path / "big.yaml"
        big.write_text("#" * (MAX_FROM + 1))
        for name, why in ((fifo, "not a regular file"), (big, "KiB"),
                          (tmp_path / "absent.yaml", "No such file")):
            r = client(b, "add", f"--from={name}")
            assert r.returncode == 1 and r.stderr.count("\n") == 1 and why in r.stderr, r.stderr
        # Past the client: a raw request naming a path is refused by the broker itself.
        secret = tmp_path / "secret.yaml"
        secret.write_text("- id: s1\n  description: never read\n")
        answer = b.run(["add", "--from", str(secret)])
        assert answer["exit"] == 1 and "--from FILE" in answer["err"]
        assert git(repo, "rev-parse", "refs/liza/state") == state
    finally:
        b.close()


def test_mcp_relay_refuses_what_no_agent_may_call(
        repo: Path, coder: tuple[Broker, list[tuple[str, bool]]]) -> None:
    b, refused = coder

    async def main() -> dict[str, Any]:
        params = StdioServerParameters(
            command=PY, args=["-I", "-m", "gitliza.sandbox.client", str(b.path), "--mcp"],
            env={"LIZA_AGENT_ID": "r1"})
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                names = {t.name for t in (await s.list_tools()).tools}
                merge = await s.call_tool("merge", {"task": "t1"})
                config = await s.call_tool("config", {"key": "lease_duration", "value": "9"})
                other = await s.call_tool("status", {"agent": "r1"})
                status = await s.call_tool("status", {})
                return {"names": names, "merge": merge, "config": config, "other": other,
                        "status": status}
    out = anyio.run(main)
    assert "submit" in out["names"] and "verdict" not in out["names"]
    for k in ("merge", "config", "other"):
        assert out[k].is_error, k
    assert "supervisor's or the human's" in out["merge"].content[0].text
    assert "identity is bound" in out["other"].content[0].text
    assert not out["status"].is_error
    assert len(refused) == 3


def test_a_failure_before_a_write_is_answered_in_one_line_and_the_channel_lives(
        repo: Path, tmp_path: Path) -> None:
    """Bringing the coder's commits in fails with what no one foresaw (a file gone, a bug): the
    agent is answered as the CLI answers, errors.classify's one line and exit code, nothing is
    written, and its next command is served (before, the serving thread died: the agent read
    "no answer from the supervisor", exit 5)."""
    from gitliza.errors import EXIT_GIT, EXIT_INCONSISTENT
    setup_board(repo)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIZA_")}
    faults: list[BaseException] = [FileNotFoundError(2, "No such file or directory",
                                                     str(tmp_path / "gone")),
                                   RuntimeError("the\nimport broke")]

    def before_write() -> None:
        if faults:
            raise faults.pop(0)

    b = Broker("c1", Role.CODER, env, repo, (PY, "-m", "gitliza"), None, before_write,
               lambda line, anomaly: None)
    try:
        state = git(repo, "rev-parse", "refs/liza/state")
        for code, words in ((EXIT_GIT, "git operation failed: FileNotFoundError"),
                            (EXIT_INCONSISTENT, "internal error: RuntimeError: the import broke")):
            r = client(b, "discover", "flaky clock", "--severity", "low", "--urgency", "deferred")
            assert r.returncode == code, r.stderr
            assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"gitliza: error: {words}")
        assert git(repo, "rev-parse", "refs/liza/state") == state
        r = client(b, "discover", "flaky clock", "--severity", "low", "--urgency", "deferred")
        assert r.returncode == 0, r.stderr
        # A refusal goes the same way: one line, the CLI's form, exit 1.
        r = client(b, "verdict", "t1", "approve")
        assert r.returncode == 1 and r.stderr.count("\n") == 1
        assert r.stderr.startswith("gitliza: error: sandbox: refused `git liza verdict t1 approve`")
    finally:
        b.close()
