"""One real Prism process (`prism mock` or `prism proxy`, `--errors` on) and its log.

Prism 5.16's CLI has no JSON log output: its logger writes pino's JSON, but the CLI always pipes
it through signale into lines like

    [7:07:35 AM] ›     [VALIDATOR] ✖  error     Violation: request.body Request body must ...
    [7:07:35 AM] › [HTTP SERVER] get /nope ✖  error     Request terminated with error: ...

(prism-cli dist/util/createServer.js, both in single- and multi-process mode), so we read those
lines (colour off: FORCE_COLOR=0) and keep the ones at level `error` or `fatal`: every request and
response violation of severity Error, every request Prism refused (route not in the description,
422 for an invalid request, 406, ...). Per request, Prism also sends the same violations as JSON
in an `sl-violations` response header, which the fronts (front.py) record with the request.

Prism listens on port 0 (the kernel picks a free port: no race with another worker) and says
where in its "Prism is listening on http://127.0.0.1:PORT" line, which is also when it is ready.
"""
from __future__ import annotations

import ctypes
import os
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

SYNC = "/__harness_sync/"
# Straight to 127.0.0.1 whatever http_proxy the environment sets (urllib would honour it).
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
START_TIMEOUT = 180.0  # the full description takes ~10 s on a quiet 2-core machine

_LINE = re.compile(r"›\s+\[(?P<name>[A-Z ]+)\]\s*(?P<req>[a-z]+ \S+)?\s+\S+\s+"
                   r"(?P<level>[a-z]+)\s+(?P<msg>.*)$")
_LISTENING = re.compile(r"Prism is listening on (http://\S+)")


def _die_with_parent() -> None:
    """Prism ends when the pytest process that started it ends, however it ends (a killed
    xdist worker would otherwise leave a 300 MB node process listening forever)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@dataclass(frozen=True)
class LogLine:
    name: str  # Prism's component: HTTP SERVER, VALIDATOR, NEGOTIATOR, PROXY, CLI
    request: str  # "post /repos/o/r/pulls" on the lines that name their request, else ""
    level: str  # info, success, warning, error, fatal, start, ...
    message: str

    def __str__(self) -> str:
        where = f" {self.request}" if self.request else ""
        return f"[{self.name}]{where} {self.level}: {self.message}"


class PrismError(RuntimeError):
    pass


class Prism:
    """A running Prism; `url` is where it listens. `mark()`/`lines(since)` read its log."""

    def __init__(self, prism: Path, argv: list[str], log: Path) -> None:
        self.log_path = log
        self._lines: list[LogLine] = []
        self._raw: list[str] = []
        self._cond = threading.Condition()
        self.url = ""
        env = {**os.environ, "FORCE_COLOR": "0", "NO_COLOR": "1", "NODE_ENV": "test"}
        self._proc = subprocess.Popen(
            [str(prism), *argv, "--host", "127.0.0.1", "--port", "0", "--errors"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=env, start_new_session=True, preexec_fn=_die_with_parent)
        self._reader = threading.Thread(target=self._read, daemon=True, name="prism-log")
        self._reader.start()
        deadline = time.monotonic() + START_TIMEOUT
        with self._cond:
            while not self.url:
                if self._proc.poll() is not None:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(min(left, 1.0))
        if not self.url:
            self.stop()
            tail = "\n".join(self._raw[-20:])
            raise PrismError(f"prism {argv[0]} did not start in {START_TIMEOUT:.0f}s:\n{tail}")

    def _read(self) -> None:
        assert self._proc.stdout is not None
        with open(self.log_path, "a", encoding="utf-8") as out:
            for raw in self._proc.stdout:
                text = raw.decode("utf-8", "replace").rstrip("\n")
                out.write(text + "\n")
                out.flush()
                m = _LINE.search(text)
                with self._cond:
                    self._raw.append(text)
                    if m:
                        self._lines.append(LogLine(m["name"].strip(), m["req"] or "",
                                                   m["level"], m["msg"].strip()))
                        if not self.url and (u := _LISTENING.search(m["msg"])):
                            self.url = u.group(1)
                    self._cond.notify_all()

    def mark(self) -> int:
        """A position in the log: `lines(since=mark)` reads what came after it."""
        with self._cond:
            return len(self._lines)

    def lines(self, since: int = 0) -> list[LogLine]:
        with self._cond:
            return list(self._lines[since:])

    def sync(self) -> None:
        """Wait until the log holds everything Prism logged for the requests answered so far.

        Prism answers before its log line reaches us (through signale, a pipe and our reader
        thread), so a test reading the log right after a response could miss that response's
        violations. Prism logs in order in one process: we send it a request for a path the
        description does not have and wait for its last line (the refusal); every earlier
        request's lines came before it."""
        token = f"{SYNC}{uuid.uuid4().hex}"
        start = self.mark()
        try:
            DIRECT.open(f"{self.url}{token}", timeout=60).close()
        except urllib.error.HTTPError:
            pass  # Prism's 404: the path is not in the description, as meant
        deadline = time.monotonic() + 60
        with self._cond:
            while not any(token in x.request and x.level in ("error", "warning")
                          for x in self._lines[start:]):
                left = deadline - time.monotonic()
                if left <= 0 or self._proc.poll() is not None:
                    raise PrismError(f"Prism's log did not show the sync request {token}")
                self._cond.wait(min(left, 1.0))

    def errors(self, since: int = 0) -> list[str]:
        """The log's lines at level error or fatal since `since`, one string each (after
        `sync()`: complete for every request answered before the call)."""
        self.sync()
        return [str(x) for x in self.lines(since)
                if x.level in ("error", "fatal") and SYNC not in x.request]

    def warnings(self, since: int = 0) -> list[str]:
        self.sync()
        return [str(x) for x in self.lines(since)
                if x.level == "warning" and SYNC not in x.request]

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None

    def stop(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=15)
        self._reader.join(timeout=5)


def start_mock(prism: Path, description: Path, log: Path) -> Prism:
    """`prism mock --errors --ignoreExamples` of `description`: request and response validation,
    bodies built from the schemas (with their properties' `example` values: PR number 42, ...).

    Not GitHub's whole-response examples: 5 of the 15 contract endpoints' examples fail GitHub's
    own schemas in @octokit/openapi 23.0.2 (the pull-request example's `requested_teams[0]` has no
    `type`; GET /repos/{o}/{r}, GET/POST /pulls, GET/PATCH /pulls/{n}), and Prism `--errors`
    answers those with its 500 VIOLATIONS, whatever the client sent."""
    return Prism(prism, ["mock", str(description), "--ignoreExamples"], log)


def start_proxy(prism: Path, description: Path, upstream: str, log: Path) -> Prism:
    """`prism proxy --errors` of `description` in front of `upstream`: a request that violates the
    description gets Prism's 422 and never reaches upstream; upstream's answer is validated too
    (Prism's proxy always validates responses) and one with an Error violation becomes Prism's
    500 (the `--errors` flag)."""
    return Prism(prism, ["proxy", str(description), upstream, "--validate-request"], log)
