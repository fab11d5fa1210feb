"""The escalation webhook: the watcher's events sent to the human, off the terminal.

The watcher (`git liza watch`, and the one `git liza team` runs beside its supervisors) hands each
report to `Notifier.submit`, which finds the board commit that caused it (core/reports/escalations.py's
matcher, walking back from the tip), derives the delivery's id from that commit and the event, and
queues it. A worker thread claims the delivery and sends it; the watcher never waits for it.

One sender per event, across processes and machines: the claim is the ref
`refs/liza/notify/<id>`, pointing at a commit of the sender's whose parent is the causing commit,
created with compare-and-swap, locally
(libgit2's create without force: one process of this machine wins) and then on the sync remote
(`git push --force-with-lease=<ref>:` with an empty expectation: the server creates it only if it
does not exist, so one machine wins). A remote that cannot be reached does not stop the sending:
delivery is at least once, and the id lets the receiver drop a second copy.

Sending: an HTTP POST of one JSON document to the board's `escalation_webhook`, or the document on
the standard input of this clone's `git config liza.escalationCommand` (never a board value: a
command read from the board would let whoever writes the board run code on the human's machines).
Retries back off 1, 2, 4 ... 60 s (core/reports/escalations.py); a delivery out of retries is one line in
`.liza/alerts.log` and the NOTIFY_FAILED alarm.
"""
from __future__ import annotations

import heapq
import json
import os
import subprocess
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Callable

from gitliza.core.reports import escalations
from gitliza.core.reports.alarms import Report
from gitliza.core.board import Board
from gitliza.errors import LizaError
from gitliza.git.store import Store

NOTIFY_REFS = "refs/liza/notify/"
COMMAND_KEY = "liza.escalationCommand"
WEBHOOK_KEY = "liza.escalationWebhook"
WEB_KEY = "liza.webUrl"
CAUSE_WALK = 5000  # state commits walked back for a cause; past that, the tip is the cause
SEND_TIMEOUT = 10.0
COMMAND_TIMEOUT = 30.0


@dataclass(order=True)
class Delivery:
    due: float
    seq: int
    ident: str = field(compare=False)
    cause: str = field(compare=False)
    doc: dict[str, Any] = field(compare=False)
    url: str | None = field(compare=False)
    command: str | None = field(compare=False)
    attempt: int = field(default=0, compare=False)
    claimed: bool = field(default=False, compare=False)


def _git_config(store: Store, key: str) -> str | None:
    try:
        value = str(store.repo.config[key]).strip()
    except (KeyError, ValueError):
        return None
    return value or None


class Notifier:
    """Claims and sends the deliveries of one watcher, in a thread of its own."""

    def __init__(self, store: Store, *, log: Callable[[str], None],
                 failed: Callable[[str, str], None], succeeded: Callable[[str], None],
                 remote: bool = True) -> None:
        self.store = store
        self._log = log  # one line in alerts.log (and the watcher's output)
        self._failed = failed  # (target, why): the NOTIFY_FAILED alarm
        self._succeeded = succeeded  # target: the alarm resolves
        self._remote = remote
        self._heap: list[Delivery] = []
        self._seq = 0
        self._busy = 0
        self._cond = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._work, name="liza-notify", daemon=True)
        self._thread.start()
        self.sent: list[str] = []  # ids delivered by this notifier, oldest first

    # -- the watcher's side ---------------------------------------------------------------------
    def submit(self, board: Board, report: Report, tip: str | None) -> str | None:
        """Queue `report` if it goes out and a target is set; its id, or None."""
        if not escalations.notified(report) or not board.initialized:
            return None
        # This clone's own URL first: a secret one (a Slack webhook) kept off the board, which
        # every agent and clone can read.
        url = _git_config(self.store, WEBHOOK_KEY) or board.config.escalation_webhook
        command = _git_config(self.store, COMMAND_KEY)
        if not url and not command:
            return None
        cause = self._cause(report, tip) or tip or ""
        ident = escalations.delivery_id(cause, report)
        doc = escalations.document(board, report, ident=ident, cause=cause, tip=tip,
                              web_url=_git_config(self.store, WEB_KEY),
                              repository=str(self.store.repo.workdir or self.store.repo.path))
        with self._cond:
            self._seq += 1
            heapq.heappush(self._heap, Delivery(time.monotonic(), self._seq, ident, cause, doc,
                                                url, command))
            self._cond.notify()
        return ident

    def _cause(self, report: Report, tip: str | None) -> str | None:
        task, ops = escalations.cause_matcher(report.alert)
        to, task_ops = escalations.cause_state(report.alert)
        if tip is None or (task is None and not ops):
            return tip
        try:
            commit = self.store.commit(tip)
            for _ in range(CAUSE_WALK):
                if escalations.matches(commit.message, task, ops, to, task_ops):
                    return str(commit.id)
                if not commit.parents:
                    break
                commit = commit.parents[0]
        except (LizaError, KeyError, ValueError):
            pass  # a shallow or damaged history: the tip names the event well enough
        return tip

    def drain(self, timeout: float) -> bool:
        """Wait (bounded) until every delivery due now is done; True if none is left."""
        end = time.monotonic() + timeout
        with self._cond:
            while self._heap or self._busy:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.5))
        return True

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    # -- the worker -------------------------------------------------------------------------
    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._closed and (not self._heap or self._heap[0].due > time.monotonic()):
                    wait = None if not self._heap else self._heap[0].due - time.monotonic()
                    self._cond.wait(wait)
                if self._closed:
                    return
                d = heapq.heappop(self._heap)
                self._busy += 1
            try:
                self._one(d)
            except Exception as e:  # noqa: BLE001 - the worker outlives any one delivery
                self._log(f"notify: {d.ident}: {type(e).__name__}: {e}")
            finally:
                with self._cond:
                    self._busy -= 1
                    self._cond.notify_all()

    def _one(self, d: Delivery) -> None:
        if not d.claimed:
            if not self._claim(d):
                return  # another process or machine sends it
            d.claimed = True
        d.attempt += 1
        target = d.url or f"command {d.command!r}"
        why = self._send(d)
        if why is None:
            self.sent.append(d.ident)
            self._succeeded(target)
            return
        if why.startswith("!") or d.attempt >= escalations.ATTEMPTS:
            self._log(f"notify: gave up on {d.doc.get('event')} {d.doc.get('task') or ''} "
                      f"(id {d.ident}) after {d.attempt} attempt(s) to {target}: {why.lstrip('!')}")
            self._failed(target, why.lstrip("!"))
            return
        d.due = time.monotonic() + escalations.backoff(d.attempt)
        with self._cond:
            heapq.heappush(self._heap, d)
            self._cond.notify()

    def _claim(self, d: Delivery) -> bool:
        """Take the delivery: True if this process is its one sender (see the module's doc)."""
        import pygit2
        ref = NOTIFY_REFS + d.ident
        repo = self.store.repo
        try:
            oid = self._claim_commit(d)
            repo.references.create(ref, oid, force=False)
        except (pygit2.AlreadyExistsError, ValueError):
            return False  # this machine claimed it already (another watcher, a team)
        except (KeyError, pygit2.GitError) as e:
            self._log(f"notify: cannot claim {d.ident} locally ({e}); sending anyway")
            return True
        if self._remote:
            return self._claim_remote(ref, str(oid))
        return True

    def _claim_commit(self, d: Delivery) -> Any:
        """The claim's own commit: a child of the causing commit (its tree, no new objects but
        itself) naming the sender. Each claimant's differs, which the remote's compare-and-swap
        needs: a push of a ref to the value it already has is "up to date", never refused."""
        import socket

        import pygit2
        repo = self.store.repo
        cause = repo.get(pygit2.Oid(hex=d.cause))
        if not isinstance(cause, pygit2.Commit):
            raise KeyError(d.cause)
        who = pygit2.Signature("gitliza-notify", "notify@gitliza.invalid")
        msg = (f"notify {d.ident}\n\nevent: {d.doc.get('event')} {d.doc.get('change')}\n"
               f"sender: {socket.gethostname()} pid {os.getpid()} at {time.time():.6f}\n")
        return repo.create_commit(None, who, who, msg, cause.tree_id, [cause.id])

    def _claim_remote(self, ref: str, oid: str) -> bool:
        from gitliza.git.remotes import remote as remotes
        from gitliza.git.gitcmd import run_git
        from gitliza.git.repository import repo_path
        path = repo_path(self.store.repo)
        try:
            rem = remotes.resolve(path, None)
        except LizaError:
            return True  # no remote: this machine is the only one
        tracking = remotes.tracking_of(rem, ref)
        try:
            self.store.repo.lookup_reference(tracking)
            return False  # fetched already: another machine claimed it
        except KeyError:
            pass
        try:
            run = run_git(path, ["push", "--no-verify", "--porcelain", rem.arg,
                                 f"--force-with-lease={ref}:", f"{oid}:{ref}"], timeout=30.0)
        except LizaError as e:
            self._log(f"notify: cannot claim {ref} on {rem.arg} ({e}); sending anyway")
            return True
        if run.returncode == 0:
            return True
        # Refused: "stale info" when the other claim was there first, a lock or old-value
        # failure when both pushes met in the remote's ref transaction. Whose claim is there now
        # decides; none: the remote refused for another reason.
        try:
            there = run_git(path, ["ls-remote", rem.arg, ref], timeout=30.0)
        except LizaError:
            there = None
        if there is not None and there.returncode == 0 and there.stdout.strip():
            return there.stdout.split()[0] == oid
        last = (run.stderr or run.stdout).strip().splitlines()[-1:] or ["?"]
        self._log(f"notify: cannot claim {ref} on {rem.arg} ({last[0]}); sending anyway")
        return True

    def _send(self, d: Delivery) -> str | None:
        """None on success; else why (a leading '!' means retrying cannot help)."""
        body = json.dumps(d.doc, ensure_ascii=False).encode("utf-8")
        if d.url:
            req = urllib.request.Request(d.url, data=body, method="POST", headers={
                "Content-Type": "application/json", "Idempotency-Key": d.ident,
                "X-Liza-Event": str(d.doc.get("event")), "User-Agent": "gitliza-notify"})
            try:
                with urllib.request.urlopen(req, timeout=SEND_TIMEOUT) as resp:  # noqa: S310
                    resp.read(4096)
                return None
            except urllib.error.HTTPError as e:
                permanent = 400 <= e.code < 500 and e.code not in (408, 425, 429)
                return f"{'!' if permanent else ''}HTTP {e.code} {e.reason}"
            except (urllib.error.URLError, OSError, ValueError) as e:
                reason = getattr(e, "reason", e)
                return f"{'!' if isinstance(e, ValueError) else ''}{reason}"
        assert d.command is not None
        env = {**os.environ, "LIZA_EVENT": str(d.doc.get("event")),
               "LIZA_LINE": str(d.doc.get("line")), "LIZA_TASK": str(d.doc.get("task") or ""),
               "LIZA_LINK": str(d.doc.get("link") or ""), "LIZA_NOTIFY_ID": d.ident}
        try:
            p = subprocess.run(["/bin/sh", "-c", d.command], input=body, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               timeout=COMMAND_TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            return f"timed out after {COMMAND_TIMEOUT:g} s"
        except OSError as e:
            return f"!{e}"
        if p.returncode == 0:
            return None
        last = p.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        return f"exit {p.returncode}: {last[0][:200]}"
