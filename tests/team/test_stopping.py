"""The stop primitive (gitliza/team/stopping.py) in real processes: a signal that lands while the
main thread holds the very lock the stop needs still stops (the handler takes no lock), one stop
per process whatever the number of signals, a stop that does not end by its deadline ends the
process anyway, and git's exit code through `git liza` when git ignored SIGINT."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gitliza.services import procinfo
from tests.team.procs import WAIT

linux = pytest.mark.skipif(not sys.platform.startswith("linux"),
                           reason="/proc and the wakeup fd semantics used here are Linux's")


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=WAIT)


def test_a_signal_while_the_main_thread_holds_the_stops_lock_still_stops() -> None:
    """The hang of issue 27: the handler ran in the main thread, which held the agent process's
    lock, and waited for that lock for ever. Here the main thread holds the lock the stop takes,
    signals itself twice (the group's SIGINT, then the team's SIGTERM) and only then lets go."""
    r = _python("""
        import os, signal, threading, time
        from gitliza.team.stopping import StopSignal
        lock = threading.Lock()
        stopped = threading.Event()
        calls = []
        def on_stop(sig):
            with lock:  # what AgentProcess.stop does
                calls.append(sig.name)
                stopped.set()
        s = StopSignal(deadline=30).install()
        s.attach(on_stop, lambda sig: os._exit(99))
        with lock:
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.3)  # the signals arrive while the lock is held
        assert stopped.wait(30), "never stopped"
        s.close()
        print(",".join(calls), s.exit_code())
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["SIGINT", "130"]  # one stop, for the first signal


def test_a_signal_before_the_stop_is_attached_is_kept() -> None:
    r = _python("""
        import os, signal, time
        from gitliza.team.stopping import StopSignal
        s = StopSignal().install()
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.3)
        got = []
        s.attach(lambda sig: got.append(sig.name))
        s.close()
        print(got, s.exit_code())
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "['SIGTERM'] 143"


def test_a_stop_past_its_deadline_ends_the_process() -> None:
    r = _python("""
        import os, signal, threading
        from gitliza.team.stopping import StopSignal
        s = StopSignal(deadline=0.5).install()
        s.attach(lambda sig: None, lambda sig: (print("deadline", sig.name, flush=True),
                                                os._exit(128 + int(sig))))
        os.kill(os.getpid(), signal.SIGINT)
        threading.Event().wait()  # a main loop that never notices the stop
    """)
    assert r.returncode == 130 and r.stdout.strip() == "deadline SIGINT"


def test_closing_restores_the_previous_handlers() -> None:
    r = _python("""
        import signal
        from gitliza.team.stopping import StopSignal
        before = signal.getsignal(signal.SIGINT)
        s = StopSignal().install()
        assert signal.getsignal(signal.SIGINT) is not before
        s.close()
        print(signal.getsignal(signal.SIGINT) is before, signal.set_wakeup_fd(-1))
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "-1"]


@linux
def test_a_process_start_time_tells_a_reused_pid() -> None:
    me = os.getpid()
    started = procinfo.start_time(me)
    assert started is not None and procinfo.alive(me, started)
    assert not procinfo.alive(me, started + 1)  # the same pid, another process
    assert procinfo.alive(me, None)  # an old token without a start time: the pid alone
    p = subprocess.Popen(["true"])
    p.wait()
    assert procinfo.start_time(p.pid) is None and not procinfo.alive(p.pid, None)
    assert procinfo.dead_here(procinfo.host(), p.pid, None)
    assert not procinfo.dead_here("another-host", p.pid, None)  # unknowable from here


def _ignoring_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a background job of a non-interactive shell


def _default_sigint() -> None:
    """A terminal's foreground job, whatever this test runs under: pytest started as a background
    job of a non-interactive shell (`nohup ... &`) ignores SIGINT, and every child inherits it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@linux
@pytest.mark.slow
def test_git_liza_team_through_git_that_ignored_sigint_reports_the_stop(
        repo: Path, tmp_path: Path) -> None:
    """git forwards the group's SIGINT, reaps its child in its handler and, with SIGINT ignored,
    used to exit 128 ("waitpid for git-liza failed: No child processes")."""
    from tests.team.procs import add_task, env_for, make_board, script
    make_board(repo)
    add_task(repo, "t1")
    agent = script(tmp_path, "hang.sh", "exec sleep 600\n")
    out = tmp_path / "out.txt"
    with out.open("wb") as f:
        team = subprocess.Popen(["git", "liza", "team", "--planners", "0", "--reviewers", "0",
                                 "--coders", "1", "--", str(agent)], cwd=repo, env=env_for(),
                                stdout=f, stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=_ignoring_sigint)
    try:
        from tests.team.procs import wait_status
        wait_status(repo, "t1", "CLAIMED")
        os.killpg(team.pid, signal.SIGINT)
        code = team.wait(WAIT)
    finally:
        if team.poll() is None:
            team.kill()
    text = out.read_text()
    assert code == -signal.SIGTERM, text  # git ended as stopped, not with its exit 128
    assert "waitpid" not in text, text
    # One stop line: for the group's SIGINT or the team's SIGTERM, whichever came first (the team
    # forwards within microseconds, so the two race).
    stops = [x for x in text.splitlines() if x.startswith("[coder-1] SIG")]
    assert len(stops) == 1 and stops[0].endswith(": stopping the agent and exiting"), text


def _team_stopped_by_sigint(repo: Path, tmp_path: Path, argv: list[str]) -> tuple[int, str]:
    from tests.team.procs import add_task, env_for, make_board, script, wait_status
    make_board(repo)
    add_task(repo, "t1")
    agent = script(tmp_path, "hang.sh", "exec sleep 600\n")
    out = tmp_path / "out.txt"
    with out.open("wb") as f:
        team = subprocess.Popen([*argv, "team", "--planners", "0", "--reviewers", "0",
                                 "--coders", "1", "--", str(agent)], cwd=repo, env=env_for(),
                                stdout=f, stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=_default_sigint)
    try:
        wait_status(repo, "t1", "CLAIMED")
        os.killpg(team.pid, signal.SIGINT)  # a terminal's Ctrl-C: the whole group
        code = team.wait(WAIT)
    finally:
        if team.poll() is None:
            team.kill()
    return code, out.read_text()


@linux
@pytest.mark.slow
@pytest.mark.parametrize("through_git", [True, False], ids=["git liza", "git-liza"])
def test_sigint_gives_one_status_whichever_way_team_is_started(
        repo: Path, tmp_path: Path, through_git: bool) -> None:
    """Issue 36: 130 after Ctrl-C both ways. Through git (SIGINT not ignored), git re-raises the
    signal on itself once it reaped `git-liza`: it dies of SIGINT, which a shell reports as 130;
    nudging it with a SIGTERM, as was done, turned that into 143."""
    from tests.team.procs import BIN
    argv = ["git", "liza"] if through_git else [str(BIN / "git-liza")]
    code, text = _team_stopped_by_sigint(repo, tmp_path, argv)
    assert code == (-signal.SIGINT if through_git else 130), text
    assert "waitpid" not in text and "team: stopped by SIGINT" in text, text


def _wait_answering(out: Path) -> None:
    import re
    import time
    import urllib.error
    import urllib.request
    end = time.monotonic() + WAIT
    while time.monotonic() < end:
        m = re.search(r"http://\S+", out.read_text())
        if m:
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            try:
                with opener.open(m.group(0), timeout=5):
                    return
            except urllib.error.HTTPError:
                return  # an answer all the same
            except OSError:
                pass
        time.sleep(0.1)
    raise AssertionError(out.read_text())


def _web(repo: Path, out: Path, argv: list[str], **kw: object) -> subprocess.Popen[bytes]:
    from tests.team.procs import env_for
    with out.open("wb") as f:
        return subprocess.Popen([*argv, "web", "--no-open", "--port", "0"], cwd=repo,
                                env=env_for(), stdout=f, stderr=subprocess.STDOUT,
                                start_new_session=True, **kw)  # type: ignore[call-overload]


@linux
@pytest.mark.slow
@pytest.mark.parametrize("ignored", [False, True], ids=["foreground", "background job"])
def test_git_liza_web_stops_on_sigint_without_gits_waitpid_error(
        repo: Path, tmp_path: Path, ignored: bool) -> None:
    """`git liza web &` then `kill -INT`: git used to print "waitpid for git-liza failed: No
    child processes" and exit 128 (SIGINT ignored in a background job). Now: 143 (git ends as
    stopped) there; 130 after a Ctrl-C of the group, with no traceback (git forwards the SIGINT,
    which uvicorn would take for a second Ctrl-C)."""
    pytest.importorskip("uvicorn", reason="the web extra (gitliza[web]) is not installed")
    from tests.cli.test_board import liza, ok
    ok(liza(repo, "init", "Build hello", agent=None))
    out = tmp_path / "web.txt"
    web = _web(repo, out, ["git", "liza"],
               preexec_fn=_ignoring_sigint if ignored else _default_sigint)
    try:
        _wait_answering(out)  # uvicorn's handlers are in place once it serves, not before
        if ignored:
            os.kill(web.pid, signal.SIGINT)  # `kill -INT $!`: git's pid
        else:
            os.killpg(web.pid, signal.SIGINT)
        code = web.wait(WAIT)
    finally:
        if web.poll() is None:
            web.kill()
    text = out.read_text()
    assert code == (-signal.SIGTERM if ignored else -signal.SIGINT), text
    assert "waitpid" not in text and "Traceback" not in text, text
