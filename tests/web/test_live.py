"""Live without reload or polling: a transition made by another process (the CLI) arrives on the
page's event stream, once, in order, fed by the ref watch `events --follow` uses; the verify
badge follows the tip. And the command itself: the missing extra (exit 5), and a start-up that
imports no web module."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.web.board import cli
from tests.web.conftest import authed, client, state


def read_events(r: Any, want: int) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    kind = None
    for line in r.iter_lines():
        if line.startswith("event: "):
            kind = line[7:]
        elif line.startswith("data: ") and kind is not None:
            out.append((kind, json.loads(line[6:])))
            if sum(k == "change" for k, _ in out) >= want:
                return out
    return out


@pytest.mark.timeout(180)
def test_cli_transitions_arrive_on_the_stream_in_order(small: Path) -> None:
    with client(small) as c:
        authed(c)
        with c.stream("GET", "/events") as r:
            assert r.headers["content-type"].startswith("text/event-stream")

            def write() -> None:
                cli(small, "note", "first")
                cli(small, "note", "second", "--for", "t2")
            t = threading.Thread(target=write)
            t.start()
            got = read_events(r, 2)
            t.join()
    changes = [d for k, d in got if k == "change"]
    assert [d["op"] for d in changes] == ["note", "note"]
    assert changes[-1]["state"] == state(small)
    assert changes[1]["parent"] == changes[0]["state"]
    verdicts = [d for k, d in got if k == "verify"]
    assert verdicts and verdicts[0]["ok"] is True


def inotify_fds() -> int:
    import os
    return sum(os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify"
               for fd in os.listdir("/proc/self/fd") if os.path.exists(f"/proc/self/fd/{fd}"))


def test_one_watcher_serves_every_page(small: Path) -> None:
    """Five open pages share the server's one ref watch: no inotify instance per visitor."""
    from contextlib import ExitStack
    with client(small) as c:
        authed(c)
        bus = c.app.app.state.bus  # type: ignore[attr-defined]
        with c.stream("GET", "/events"):
            one = inotify_fds()
            with ExitStack() as pages:
                for _ in range(4):
                    pages.enter_context(c.stream("GET", "/events"))
                assert bus.subscribers == 5
                assert inotify_fds() == one


def test_missing_extra_says_what_to_install_and_exits_5(repo: Path, tmp_path: Path) -> None:
    """Run with starlette made unimportable (a module that raises ImportError first on the path)."""
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "starlette.py").write_text("raise ImportError('no starlette here')\n")
    env_path = f"{blocker}:{Path(__file__).resolve().parents[2]}"
    r = subprocess.run([sys.executable, "-m", "gitliza", "web", "--no-open"], cwd=repo,
                       env={**__import__("os").environ, "PYTHONPATH": env_path},
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 5
    assert r.stderr.strip() == ("gitliza: error: git liza web needs starlette "
                                "(pip install 'gitliza[web]')")


def test_cli_start_up_imports_no_web_module(repo: Path) -> None:
    code = ("import sys\nfrom gitliza.cli.app import main\ntry:\n    main(['status'])\n"
            "except SystemExit:\n    pass\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('starlette', 'uvicorn') "
            "or m.startswith('gitliza.web')]\nprint(bad)")
    r = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True,
                       timeout=60)
    assert r.stdout.strip().splitlines()[-1] == "[]", r.stdout + r.stderr


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_servers_open_files_stay_flat_over_many_transitions(small: Path) -> None:
    """The board writes one pack per transition and libgit2 keeps every pack a handle read open:
    the server reopens its handles, so 300 transitions with pages and a stream open leave its
    open files bounded (without that: one more per transition)."""
    import os
    import urllib.request

    from gitliza.core.ops.journal import Note
    from gitliza.services.api import Liza
    from tests.web.browser import Served
    served = Served(small)
    try:
        pid = served.proc.pid
        token = served.url.split("token=")[1]

        def get(path: str) -> bytes:
            req = urllib.request.Request(served.base + path,
                                         headers={"Authorization": f"Bearer {token}"})
            with urllib.request.urlopen(req, timeout=60) as r:
                return bytes(r.read())
        stream = urllib.request.urlopen(urllib.request.Request(
            served.base + "/events", headers={"Authorization": f"Bearer {token}"}), timeout=120)
        get("/")
        start = len(os.listdir(f"/proc/{pid}/fd"))
        human = Liza.open(small, "human")
        samples = []
        for i in range(300):
            human.do(Note, message=f"n{i}", ordered=True)
            if i % 30 == 29:
                human.repo.free()  # the test's own handle: same reason
                for path in ("/", "/task/t1", "/log", "/pictures"):
                    get(path)
                samples.append(len(os.listdir(f"/proc/{pid}/fd")))
        stream.close()
    finally:
        served.close()
    assert max(samples) < start + 64, (start, samples)


@pytest.mark.timeout(120)
def test_an_agent_log_streams_what_is_written_after_the_page_opened(small: Path) -> None:
    logs = small / ".liza" / "agent-logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / "c1--t1--20260101T000000Z.log"
    log.write_text("old line\n")
    size = log.stat().st_size
    with client(small) as c:
        authed(c)
        assert "old line" in c.get("/task/t1").text
        with c.stream("GET", f"/task/t1/log/0/stream?offset={size}") as r:
            lines = r.iter_lines()
            assert next(lines).startswith("retry:")

            def write() -> None:
                with open(log, "a") as f:
                    f.write("new line while running\n")
            threading.Timer(0.5, write).start()
            got = []
            for line in lines:
                got.append(line)
                if "new line" in line:
                    break
    assert "data: new line while running" in got
    assert not any("old line" in g for g in got)  # from the offset on, not again


@pytest.mark.timeout(120)
def test_another_host_serves_with_a_warning_and_still_wants_the_token(small: Path) -> None:
    import urllib.error
    import urllib.request

    from tests.web.browser import Served
    served = Served(small, "--host", "0.0.0.0")
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(served.base + "/api/board", timeout=30)
        assert refused.value.code == 401
        token = served.url.split("token=")[1]
        ok = urllib.request.urlopen(urllib.request.Request(
            served.base + "/api/board", headers={"Authorization": f"Bearer {token}"}), timeout=30)
        assert ok.status == 200
        # A page left open: stopping the server ends its stream instead of waiting on it.
        stream = urllib.request.urlopen(urllib.request.Request(
            served.base + "/events", headers={"Authorization": f"Bearer {token}"}), timeout=60)
        assert stream.readline().startswith(b"retry:")
    finally:
        served.close()
    assert served.proc.stderr is not None
    err = served.proc.stderr.read()
    assert err.startswith("gitliza: warning: serving on 0.0.0.0")
    assert "Traceback" not in err and "ERROR" not in err, err
    assert served.proc.returncode in (0, -15)  # uvicorn re-raises SIGTERM once it stopped


@pytest.mark.timeout(180)
def test_a_transition_from_another_clone_arrives_when_it_is_fetched(small: Path,
                                                                     tmp_path: Path) -> None:
    """Another machine's transition reaches the page at the next sync (a fetch of the board ref
    is what sync does underneath)."""
    from gitliza.core.ops.journal import Note
    from gitliza.services.api import Liza
    from tests.conftest import git
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(small), str(clone))
    git(clone, "fetch", "-q", "origin", "refs/liza/state:refs/liza/state")
    Liza.open(clone, "p1").do(Note, message="from afar", ordered=True)
    with client(small) as c:
        authed(c)
        with c.stream("GET", "/events") as r:
            threading.Timer(0.5, lambda: git(small, "fetch", "-q", str(clone),
                                             "refs/liza/state:refs/liza/state")).start()
            got = read_events(r, 1)
    change = next(d for k, d in got if k == "change")
    assert change["op"] == "note" and change["actor"] == "p1"
    assert change["state"] == state(small)


@pytest.mark.timeout(180)
def test_verify_follows_the_tip_and_counts_every_commit(small: Path) -> None:
    from tests.conftest import git
    with client(small) as c:
        authed(c)
        with c.stream("GET", "/events") as r:
            threading.Timer(0.5, lambda: cli(small, "note", "one more")).start()
            tip = None
            kind = None
            for line in r.iter_lines():
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: ") and kind == "verify":
                    v = json.loads(line[6:])
                    if tip is None and v["tip"] != state(small):
                        continue
                    tip = v
                    if v["tip"] == state(small) and "one more" in git(
                            small, "log", "-1", "--format=%B", "refs/liza/state"):
                        break
    assert tip is not None and tip["ok"] is True
    assert tip["commits"] == len(git(small, "rev-list", "refs/liza/state").split())


@pytest.mark.timeout(120)
def test_ctrl_c_with_an_agent_log_open_stops_without_a_traceback(small: Path) -> None:
    """Issue 49: a Ctrl-C of `web` while a page streams an agent's log: "Task was destroyed but
    it is pending" was printed (the stream's waits were left pending at the loop's close)."""
    import signal
    import urllib.request

    from tests.web.browser import Served
    logs = small / ".liza" / "agent-logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "c1--t1--20260101T000000Z.log").write_text("a line\n")
    served = Served(small)
    token = served.url.split("token=")[1]
    try:
        streams = [urllib.request.urlopen(urllib.request.Request(
            served.base + path, headers={"Authorization": f"Bearer {token}"}), timeout=60)
            for path in ("/task/t1/log/0/stream?offset=0", "/events")]
        for s in streams:
            assert s.readline().startswith(b"retry:")
        served.proc.send_signal(signal.SIGINT)
        served.proc.wait(timeout=60)
    finally:
        served.close()
    assert served.proc.stderr is not None
    err = served.proc.stderr.read()
    assert "Traceback" not in err and "destroyed" not in err and "ERROR" not in err, err
    assert served.proc.returncode == 130
