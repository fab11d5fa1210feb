"""Why one agent run ended, as its supervisor reads it (gitliza/core/agents/faults.py judges).

Every line of the CLI's output goes through its profile's reader (agentcli `Profile.reads`):
while the agent runs for a CLI whose JSON stream the usage meter reads (team/usage.py), after
its end from the tail of its log for the others (Mistral Vibe, a `-- COMMAND`). A sign the
supervisor must not wait out inside the CLI (a refused login; the third retry of a rate limit)
stops the agent at once (`stop`), instead of letting the CLI retry on its own for minutes.
"""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from gitliza.agentcli.base import Reader
from gitliza.core.agents import faults
from gitliza.core.agents.faults import End, Ending, Sign

TAIL = 16 * 1024  # bytes of a log read after the run (a CLI's last words are at its end)
KEEP = 64  # signs kept per run (a CLI that retries all day says the same thing each time)


class Watch:
    def __init__(self, reads: Reader, stop: Callable[[Sign], None] | None = None,
                 exits: Mapping[int, End] | None = None) -> None:
        self.reads, self.exits = reads, exits
        self.signs: list[Sign] = []
        self.last = ""  # the last line of plain text the CLI wrote (its error, for people)
        self._stop = stop
        self._stopped = False
        self._lock = threading.Lock()

    def feed(self, raw: bytes | str, event: Any = None, now: float | None = None) -> None:
        """One line of output (`event`: its JSON object when the caller parsed it already)."""
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        text = text.strip()
        if not text:
            return
        if event is None and text.startswith("{"):
            try:
                event = json.loads(text)
            except ValueError:
                event = None
        e = event if isinstance(event, dict) else None
        now = time.time() if now is None else now
        try:
            sign = self.reads(e, text, now)
        except (TypeError, ValueError, AttributeError, KeyError):
            sign = None  # a line we cannot read (a forged or new event) explains nothing
        with self._lock:
            if e is None:
                self.last = text[:300]
            if sign is None:
                return
            self.signs = [*self.signs[-(KEEP - 1):], sign]
            stop = faults.stop_now(self.signs, now) if not self._stopped else None
            if stop is not None:
                self._stopped = True
        if stop is not None and self._stop is not None:
            self._stop(stop)

    def feed_tail(self, path: Path | None, now: float | None = None) -> None:
        """The last lines of a log written without us reading along."""
        if path is None:
            return
        try:
            with open(path, "rb") as f:
                f.seek(0, 2)
                size = f.tell()
                f.seek(max(0, size - TAIL))
                data = f.read()
        except OSError:
            return
        lines = data.splitlines()
        if size > TAIL:
            lines = lines[1:]  # cut mid-line
        for line in lines:
            if not line.startswith(b"# "):  # the log's own header
                self.feed(line, now=now)

    def ending(self, code: int, stopped_by: str | None) -> Ending:
        with self._lock:
            return faults.judge(list(self.signs), code, stopped_by, self.last, self.exits)
