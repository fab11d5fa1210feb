"""A stop on SIGINT/SIGTERM that cannot deadlock, and that ends within a deadline.

Python runs a signal handler in the main thread, between two bytecodes of whatever the main
thread was doing. A handler that takes a lock the main thread already holds (an agent process's
lock, a threading.Event's condition, stdout's buffer) hangs the process for good: a supervisor
was seen sitting in a futex wait with a zombie child. So the Python handler here does nothing at
all. The interpreter's C-level handler writes the signal number to a wakeup pipe
(`signal.set_wakeup_fd`, async-signal-safe), and a relay thread, an ordinary thread free to take
locks, log and signal children, reads it and calls `on_stop` once. The main thread is woken by
what `on_stop` does (it stops the agent, sets the events the main thread waits on), never
interrupted in the middle of a transition.

The relay then keeps the deadline, the way systemd escalates a stop to SIGKILL: if the process
has not closed the stop `deadline` seconds after the first signal (the main loop is stuck),
`on_deadline` runs (it kills what is left and ends the process), so a stop always ends.

A second signal changes nothing (a terminal's Ctrl-C reaches the whole group and `git liza team`
forwards a SIGTERM too): one stop, one line.
"""
from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from types import FrameType
from typing import Callable, TypeVar

T = TypeVar("T")
SIGNALS = (signal.SIGINT, signal.SIGTERM)
OnSignal = Callable[[signal.Signals], None]


def _ignore(_signum: int, _frame: FrameType | None) -> None:
    """The Python-level handler: nothing (the relay thread acts on the wakeup byte)."""


class StopSignal:
    """SIGINT/SIGTERM turned into one call of `on_stop` on a relay thread, and a deadline."""

    def __init__(self, deadline: float | None = None) -> None:
        self.deadline = deadline
        self.signum: signal.Signals | None = None  # the first signal, once one came
        self._lock = threading.Lock()  # taken by the relay and by attach/close, never a handler
        self._on_stop: OnSignal | None = None
        self._on_deadline: OnSignal | None = None
        self._closed = threading.Event()
        self._old: dict[signal.Signals, object] = {}
        self._old_fd = -1
        self._r = self._w = -1
        self._installed = False

    def install(self) -> StopSignal:
        """Catch SIGINT and SIGTERM (main thread only; elsewhere, e.g. a supervisor embedded in
        a test's thread, nothing is installed and `stop` is the caller's business)."""
        if threading.current_thread() is not threading.main_thread() or self._installed:
            return self
        inherited_ignored()  # before our handlers replace what the process started with
        self._r, self._w = os.pipe()
        os.set_blocking(self._w, False)  # set_wakeup_fd requires it; a full pipe loses nothing
        self._old_fd = signal.set_wakeup_fd(self._w, warn_on_full_buffer=False)
        self._old = {s: signal.signal(s, _ignore) for s in SIGNALS}
        self._installed = True
        threading.Thread(target=self._relay, args=(self._r,), name="liza-stop-relay",
                         daemon=True).start()
        # A supervisor that `git liza team` starts begins with SIGINT and SIGTERM blocked
        # (`spawn_blocked`): a signal during its start-up waited, pending, for this moment.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
        return self

    def attach(self, on_stop: OnSignal, on_deadline: OnSignal | None = None) -> None:
        """What a stop does; called at once if a signal came before it was attached."""
        with self._lock:
            self._on_stop, self._on_deadline = on_stop, on_deadline
            came = self.signum
        if came is not None:
            self._fire(came)

    @property
    def stopping(self) -> bool:
        return self.signum is not None

    def exit_code(self) -> int:
        """128 + the first signal's number, as a shell reports a process it killed."""
        return 128 + int(self.signum) if self.signum is not None else 0

    def close(self) -> None:
        """Done: the deadline no longer applies; the old handlers and wakeup fd are back."""
        self._closed.set()
        if not self._installed:
            return
        self._installed = False
        if threading.current_thread() is threading.main_thread():
            signal.set_wakeup_fd(self._old_fd)
            for s, h in self._old.items():
                signal.signal(s, h)  # type: ignore[arg-type]
        os.close(self._w)  # the relay reads end-of-file and closes its end

    # -- the relay thread -----------------------------------------------------------------------
    def _relay(self, fd: int) -> None:
        try:
            while True:
                try:
                    data = os.read(fd, 64)
                except OSError:
                    return
                if not data:
                    return
                for b in data:
                    if b in (int(s) for s in SIGNALS):
                        self._got(signal.Signals(b))
        finally:
            os.close(fd)

    def _got(self, sig: signal.Signals) -> None:
        with self._lock:
            if self.signum is not None:
                return  # one stop: a second signal (the group's, then the team's) adds nothing
            self.signum = sig
            attached = self._on_stop is not None
        if attached:
            self._fire(sig)

    def _fire(self, sig: signal.Signals) -> None:
        on_stop = self._on_stop
        if on_stop is not None:
            on_stop(sig)
        if self.deadline is not None and self._on_deadline is not None:
            threading.Thread(target=self._expire, args=(sig,), name="liza-stop-deadline",
                             daemon=True).start()

    def _expire(self, sig: signal.Signals) -> None:
        assert self.deadline is not None
        if self._closed.wait(self.deadline):
            return
        on_deadline = self._on_deadline
        if on_deadline is not None:
            on_deadline(sig)


def spawn_blocked(start: Callable[[], T]) -> T:
    """Run `start` (a Popen) with SIGINT and SIGTERM blocked in this thread, so that the child
    starts with them blocked (the mask survives fork and exec) and unblocks them once its stop is
    in place (`StopSignal.install`): a signal that reaches a supervisor while its interpreter
    starts is kept pending instead of killing it half-way or raising KeyboardInterrupt in an
    import. Our own signals meanwhile go to our other threads (the C handler runs in any)."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        return start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


_INHERITED_IGNORED: frozenset[int] | None = None


def inherited_ignored() -> frozenset[int]:
    """The stop signals this process started with ignored. git runs `git-liza` with the
    dispositions it inherited (a signal ignored stays ignored across fork and exec): a background
    job of a non-interactive shell ignores SIGINT, and so do git and `git-liza` then. Recorded on
    the first call, which must come before any handler is installed (`StopSignal.install`, `git
    liza web`)."""
    global _INHERITED_IGNORED
    if _INHERITED_IGNORED is None:
        _INHERITED_IGNORED = frozenset(
            int(s) for s in SIGNALS if signal.getsignal(s) is signal.SIG_IGN)
    return _INHERITED_IGNORED


def nudge_git_parent(sig: signal.Signals | None) -> None:
    """Make `git liza ...` end as `gitliza ...` does after signal `sig`, without git's error.

    git runs `git-liza` as a child and, on SIGINT or SIGTERM, forwards the signal, reaps the child
    inside its handler, restores the disposition it started with and re-raises the signal on
    itself. With the default action there, git dies of the same signal: the caller reads 130
    after SIGINT, 143 after SIGTERM, as from `gitliza` itself, and nothing is to be done here.
    Where git started with the signal ignored (a background job's SIGINT: `inherited_ignored`),
    git survives its own raise, finds its child already reaped and exits 128 with "waitpid for
    git-liza failed: No child processes". Only then, when our parent is git and is inside its
    handler (the signal is in its blocked mask), a SIGTERM makes it end as killed by SIGTERM
    (143), the one status a signal it ignores can give; its SIGTERM handler has nobody left to
    wait for."""
    if sig is None or int(sig) not in inherited_ignored():
        return
    ppid = os.getppid()
    proc = Path("/proc", str(ppid))
    try:
        if proc.joinpath("comm").read_text().strip() != "git":
            return
        blocked = next(int(line.split()[1], 16) for line in proc.joinpath("status")
                       .read_text().splitlines() if line.startswith("SigBlk:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return
    if any(blocked & (1 << (int(s) - 1)) for s in SIGNALS):
        try:
            os.kill(ppid, signal.SIGTERM)
        except OSError:
            pass


_PROCESS: StopSignal | None = None


def for_process() -> StopSignal:
    """The process's StopSignal, installed on first call. The entry point calls it before its
    imports for `git liza agent` and `git liza team` (gitliza/__main__.py), so that a signal
    during start-up is kept for the stop instead of raising KeyboardInterrupt in an import."""
    global _PROCESS
    if _PROCESS is None or not _PROCESS._installed:
        _PROCESS = StopSignal().install()
    return _PROCESS
