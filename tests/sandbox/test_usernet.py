"""Round 3 (issue 46), each agent its own network in `on` (gitliza/sandbox/usernet.py): two
sandboxed coders under real supervisors each listen on 127.0.0.1:18765 at once, while this
machine's own 18765 is taken too, and each reads its own server; a host port named in
`sandbox_host_ports` is reached, another port of the host's loopback is not."""
from __future__ import annotations

import shutil
import socket
import tempfile
from pathlib import Path

import pytest

from gitliza.sandbox import usernet
from tests.cli.test_board import liza, ok
from tests.sandbox.test_rogue import PRELUDE, PY, _agent_log, _attempts, _Http, needs_bwrap
from tests.team.procs import WAIT, Sup, add_task, make_board, script, until

pytestmark = [needs_bwrap, pytest.mark.slow,
              pytest.mark.skipif(usernet.find() is None, reason="slirp4netns is not installed")]
PORT = 18765

SERVE = r'''
import socket, sys, threading, time, os
name, go = sys.argv[1], sys.argv[2]
srv = socket.socket()
srv.bind(("127.0.0.1", %d))
srv.listen(8)
def serve():
    while True:
        c, _ = srv.accept()
        c.sendall(name.encode())
        c.close()
threading.Thread(target=serve, daemon=True).start()
print("LISTENING", name, flush=True)
while not os.path.exists(go):  # both agents listen at once (the test says when)
    time.sleep(0.05)
got = socket.create_connection(("127.0.0.1", %d), 5).recv(100).decode()
print("READ", name, got, flush=True)
''' % (PORT, PORT)


def test_two_agents_listen_on_the_same_port_and_reach_only_named_host_ports(
        repo: Path, tmp_path: Path) -> None:
    make_board(repo)
    add_task(repo, "t1")
    add_task(repo, "t2")
    named, other = _Http("127.0.0.1", "HOST-NAMED"), _Http("127.0.0.1", "HOST-OTHER")
    ok(liza(repo, "config", "sandbox_host_ports", f"{named.port}", agent=None))
    host = socket.socket()  # this machine's own 18765: no agent's
    host.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        host.bind(("127.0.0.1", PORT))
        host.listen(1)
    except OSError:
        host.close()
        host = None  # taken by something else here: the agents must not reach it all the same
    # Where the test says "go": outside /tmp (the sandbox replaces it), shown read-only.
    shared = Path(tempfile.mkdtemp(prefix="gitliza-net-", dir="/var/tmp"))
    go = shared / "go"
    serve = shared / "serve.py"
    serve.write_text(SERVE)
    sups = []
    try:
        for agent in ("coder-1", "coder-2"):
            body = PRELUDE.format() + f"""
{PY} -c "import urllib.request as u; print('NAMED', u.urlopen('http://127.0.0.1:{named.port}/', timeout=10).read().decode())"
try host-other {PY} -c "import socket; socket.create_connection(('127.0.0.1', {other.port}), 5)"
try host-gateway {PY} -c "import socket; socket.create_connection(('10.0.2.2', {other.port}), 5)"
{PY} {serve} {agent} {go}
"""
            sups.append(Sup(repo, "coder", agent, "--once", "--sandbox", "on", "--",
                            str(script(tmp_path, f"{agent}.sh", body))))
        def listening() -> bool:
            if any(s.proc.poll() is not None for s in sups):  # a supervisor ended before
                go.touch()  # (the other agent ends too)
                for s in sups:
                    s.wait(120)  # (drains its output)
                raise AssertionError([s.output() for s in sups] + [
                    _agent_log(repo, a) for a in ("coder-1", "coder-2")])
            return all(f"LISTENING {a}" in _agent_log(repo, a) for a in ("coder-1", "coder-2"))
        until(listening, lambda: "both agents listening: " + str(
            [_agent_log(repo, a) for a in ("coder-1", "coder-2")]), 4 * WAIT)
        go.touch()
        for s in sups:
            s.wait(120)
        if host is not None:
            host.setblocking(False)
            with pytest.raises(BlockingIOError):  # no agent ever connected to this machine's
                host.accept()
    finally:
        for srv in (named, other):
            srv.close()
        if host is not None:
            host.close()
        shutil.rmtree(shared)
    for a in ("coder-1", "coder-2"):
        log = _agent_log(repo, a)
        assert f"READ {a} {a}" in log, log  # its own server, not the other agent's
        assert "NAMED HOST-NAMED" in log, log
        assert _attempts(log) == {"host-other": 1, "host-gateway": 1}, log
    assert named.hits == 2 and other.hits == 0


def test_sandbox_host_ports_is_a_human_key_of_ports(repo: Path) -> None:
    make_board(repo)
    r = liza(repo, "config", "sandbox_host_ports", "11434,abc", agent=None)
    assert r.returncode == 1 and "sandbox_host_ports" in r.stderr
    ok(liza(repo, "config", "sandbox_host_ports", "5432, 11434", agent=None))
    assert "5432 11434" in liza(repo, "config", agent=None).stdout


def test_a_port_below_1024_is_not_forwarded_said_once_and_the_launch_goes_on(
        repo: Path, tmp_path: Path) -> None:
    """No process of the sandbox may listen below 1024: such a port among those to forward (a
    model URL or `sandbox_host_ports` naming 127.0.0.1:80) is left out where the list is made,
    said in one line, and the agent's connection to it is refused as to a server that is down,
    while the other forwarded port works (the forwarder inside ended the launch at exit 5 on it)."""
    make_board(repo)
    add_task(repo, "t1")
    named = _Http("127.0.0.1", "HOST-NAMED")
    ok(liza(repo, "config", "sandbox_host_ports", f"80 {named.port}", agent=None))
    body = PRELUDE.format() + f"""
{PY} -c "import urllib.request as u; print('NAMED', u.urlopen('http://127.0.0.1:{named.port}/', timeout=10).read().decode())"
try low {PY} -c "import socket; socket.create_connection(('127.0.0.1', 80), 5)"
"""
    try:
        sup = Sup(repo, "coder", "coder-1", "--once", "--sandbox", "on", "--",
                  str(script(tmp_path, "coder-1.sh", body)))
        sup.wait(120)  # (--once: it ends after the session, which made no progress)
    finally:
        named.close()
    log = _agent_log(repo, "coder-1")
    assert "agent exited 0" in sup.output() and "NAMED HOST-NAMED" in log, sup.output() + log
    assert _attempts(log) == {"low": 1}, log
    said = [x for x in sup.output().splitlines() if "127.0.0.1:80 is not forwarded" in x]
    assert len(said) == 1, sup.output()
