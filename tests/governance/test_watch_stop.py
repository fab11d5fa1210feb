"""`git liza watch` stops on SIGINT or SIGTERM at a point of its own choosing, whatever it was
doing: a stop is a flag the loop reads between two looks (team/stopping.py), never a
KeyboardInterrupt raised inside a threading.Event's wait or the ref watcher's observer, which left
a Ctrl-C'd `watch` hung for good on a loaded machine. It exits as a shell reports the signal: 130
after SIGINT, 143 after SIGTERM (before, SIGTERM killed it outright, with no drain)."""
from __future__ import annotations

import signal
import subprocess
import threading
from pathlib import Path

import pytest

from tests.governance.test_pulse import Watch
from tests.services.test_lifecycle import ok, setup_board


def _stopped(w: Watch, sig: signal.Signals) -> int:
    w.proc.send_signal(sig)
    try:
        return w.proc.wait(timeout=90)
    except subprocess.TimeoutExpired:
        w.proc.kill()
        raise AssertionError(f"watch never ended after {sig.name}; it said {w.seen}") from None


@pytest.mark.timeout(300)
def test_sigterm_is_a_clean_stop_with_143(repo: Path) -> None:
    setup_board(repo, tasks=("t1",))
    w = Watch(repo)
    w.expect("watching: goal")
    assert _stopped(w, signal.SIGTERM) == 143


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_stop_in_the_middle_of_a_look_ends_watch(repo: Path) -> None:
    """The board changes without pause, so the signals land while `watch` reads and evaluates,
    not only while it waits."""
    setup_board(repo, tasks=("t1",))
    busy = threading.Event()
    added: list[str] = []
    failed: list[BaseException] = []

    def churn() -> None:
        try:
            while not busy.is_set():
                ok(repo, "add", f"c{len(added)}", "--desc", "churn", agent="p1")
                added.append(f"c{len(added)}")
        except BaseException as e:  # the test says it, rather than a silent thread
            failed.append(e)

    writer = threading.Thread(target=churn, daemon=True)
    writer.start()
    try:
        for round_ in range(6):
            w = Watch(repo)
            w.expect("watching: goal")
            sig = signal.SIGINT if round_ % 2 == 0 else signal.SIGTERM
            assert _stopped(w, sig) == 128 + int(sig), (round_, w.seen)
    finally:
        busy.set()
        writer.join(timeout=120)
    assert not failed, failed
    assert len(added) >= 6, added  # the board did move under every round
