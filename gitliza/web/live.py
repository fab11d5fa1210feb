"""Live pages without polling: one thread follows refs/liza/state the way `git liza events
--follow` does (gitliza/access/events.py over gitliza/git/refwatch.py: inotify, no timer) and
hands every new transition to each open page's server-sent event stream, whose script then
re-fetches the part of the page that shows the board.

The same thread keeps `verify`'s verdict current: the whole history is replayed once at start,
then each new stretch of commits from the last verified tip (the whole history again when a sync
rewrote it). One watcher serves every open page, so the server's open files do not grow with
its visitors.
"""
from __future__ import annotations

import asyncio
import json
import threading
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable

if TYPE_CHECKING:
    from gitliza.services.api import Liza

KEEPALIVE = 20.0  # seconds between comment lines, so a closed page is noticed and dropped


class _Stopped(Exception):
    pass


class Broadcaster:
    def __init__(self, open_liza: Callable[[], Any]) -> None:
        self._open = open_liza
        self._subs: set[asyncio.Queue[dict[str, Any]]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop = threading.Event()
        self._watcher: Any = None
        self._thread: threading.Thread | None = None
        self._verifier: threading.Thread | None = None
        self._verify_wanted = threading.Event()
        self.verify: dict[str, Any] = {"ok": None}
        self.events_seen = 0
        self.closing: asyncio.Event | None = None  # set when the server stops: streams end

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        from gitliza.git.refwatch import RefWatcher
        self._loop = loop
        self.closing = asyncio.Event()
        liza = self._open()
        # Started before the first read of the tip, so no commit in between is missed.
        self._watcher = RefWatcher(liza.store.repo.path, control_files=False).start()
        self._thread = threading.Thread(target=self._run, args=(liza,), daemon=True,
                                        name="gitliza-web-events")
        self._thread.start()
        # verify on a thread of its own: replaying a long history at start takes a while (~250
        # commits a second), and the pages must go on following the board meanwhile.
        self._verifier = threading.Thread(target=self._verify_loop, daemon=True,
                                          name="gitliza-web-verify")
        self._verifier.start()

    def close(self) -> None:
        self._stop.set()
        self._verify_wanted.set()
        if self._watcher is not None:
            self._watcher.poke()
        for t in (self._thread, self._verifier):
            if t is not None:
                t.join(timeout=5)
        if self._watcher is not None:
            self._watcher.close()

    def shutdown(self) -> None:
        """End every open stream (the server is stopping: it waits for its connections to close
        before it runs the app's shutdown, so the streams must end first). Any thread."""
        loop = self._loop
        if loop is not None and not loop.is_closed() and self.closing is not None:
            loop.call_soon_threadsafe(self.closing.set)
            self._publish({"kind": "bye"})

    def subscribe(self) -> asyncio.Queue[dict[str, Any]]:
        q: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=1000)
        self._subs.add(q)
        return q

    def unsubscribe(self, q: asyncio.Queue[dict[str, Any]]) -> None:
        self._subs.discard(q)

    @property
    def subscribers(self) -> int:
        return len(self._subs)

    # -- the thread -----------------------------------------------------------------------------
    def _wait(self) -> None:
        self._watcher.wait()
        if self._stop.is_set():
            raise _Stopped

    def _run(self, liza: Liza) -> None:
        """Each round: wait for the ref, then the commits since the last one seen, as `events`
        gives them (gitliza/access/events.py), read through a fresh handle: libgit2 keeps every
        pack file a handle has read open for the handle's life (even once gitliza's pack merging
        removed it), and the board writes a pack per transition, so one long-lived handle would
        hold one more open file per transition."""
        from gitliza.access.events import events
        tip = liza.store.tip()
        self._verify_wanted.set()
        seen = None if tip is None else str(tip)
        liza.repo.free()
        try:
            while True:
                self._wait()
                fresh = self._open()
                for e in events(fresh, seen):
                    self.events_seen += 1
                    self._publish({"kind": "change", **e})
                    seen = e["state"]
                self._verify_wanted.set()
                fresh.repo.free()  # its pack files closed now, not when the cycle collector runs
        except _Stopped:
            return

    def _verify_loop(self) -> None:
        """Verify up to the tip whenever asked; asks that come while a replay runs are served by
        one more round after it (the flag is cleared before the tip is read)."""
        while True:
            self._verify_wanted.wait()
            self._verify_wanted.clear()
            if self._stop.is_set():
                return
            liza = self._open()
            tip = liza.store.tip()
            if tip is None or self.verify.get("tip") != str(tip):
                self._verify(liza, tip)
            liza.repo.free()

    def _verify(self, liza: Liza, tip: Any) -> None:
        from gitliza.errors import LizaError
        from gitliza.services.verify.engine import replay
        if tip is None:
            self.verify = {"ok": None}
            return
        store, old = liza.store, self.verify.get("tip")
        if old is not None and not (old == str(tip) or store.repo.descendant_of(tip, old)):
            old = None  # the history was rewritten under us: replay it whole
        try:
            report = replay(store, tip, old)
            total = (self.verify.get("commits", 0) if old is not None else 0) + report.commits
            self.verify = {"ok": True, "tip": str(tip), "commits": total}
        except LizaError as bad:
            self.verify = {"ok": False, "tip": None, "error": str(bad)}
        self._publish({"kind": "verify", **self.verify})

    def _publish(self, event: dict[str, Any]) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(self._deliver, event)
        except RuntimeError:  # the loop closed between the check and the call
            pass

    def _deliver(self, event: dict[str, Any]) -> None:
        for q in list(self._subs):
            if q.full():  # a page that stopped reading: it reloads the board on the next event
                continue
            q.put_nowait(event)


async def event_stream(bus: Broadcaster) -> AsyncIterator[str]:
    """The server-sent events of one page: `change` per transition, `verify` per verdict."""
    q = bus.subscribe()
    try:
        yield "retry: 2000\n\n"
        while True:
            try:
                event = await asyncio.wait_for(q.get(), KEEPALIVE)
            except asyncio.TimeoutError:
                yield ": keepalive\n\n"
                continue
            if event["kind"] == "bye":
                return
            yield f"event: {event['kind']}\ndata: {json.dumps(event, default=str)}\n\n"
    finally:
        bus.unsubscribe(q)


async def log_stream(path: Any, offset: int, closing: asyncio.Event | None = None
                     ) -> AsyncIterator[str]:
    """An agent log's new lines as they are written (inotify on its directory, no timer)."""
    from watchdog.events import FileSystemEventHandler
    from watchdog.observers import Observer

    from gitliza.web.sources import redact
    loop = asyncio.get_running_loop()
    changed = asyncio.Event()

    class Handler(FileSystemEventHandler):
        def on_modified(self, event: Any) -> None:
            loop.call_soon_threadsafe(changed.set)

    obs = Observer()
    obs.schedule(Handler(), str(path.parent), recursive=False)
    obs.daemon = True
    obs.start()
    try:
        yield "retry: 2000\n\n"
        while True:
            with open(path, "rb") as f:
                f.seek(offset)
                data = f.read()
            if data:
                offset += len(data)
                text = redact(data.decode("utf-8", "replace"))
                yield "".join(f"data: {line}\n" for line in text.split("\n")) + "\n"
            if closing is not None and closing.is_set():
                return
            waits = [asyncio.ensure_future(changed.wait())]
            if closing is not None:
                waits.append(asyncio.ensure_future(closing.wait()))
            try:
                done, _ = await asyncio.wait(waits, timeout=KEEPALIVE,
                                             return_when=asyncio.FIRST_COMPLETED)
            finally:  # also when the stream is cancelled (a Ctrl-C of `web`): no task left
                for w in waits:  # pending at the loop's close ("Task was destroyed")
                    w.cancel()
            if not done:
                yield ": keepalive\n\n"
            changed.clear()
    finally:
        obs.stop()
        obs.join(timeout=5)
