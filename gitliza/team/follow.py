"""What `git liza team` prints besides its supervisors' lines: the board's transitions as they land
(as `python3 dev.py example` does), with the reason of a rejection, a block or a failed merge, so
the human sees a verdict and why without `git liza show`. Bookkeeping (supervise, usage, liveness:
core/encoding/record.py) is left out; `git liza log --all` has it. After each change it seals the history
when a seal is due (services/autoseal.py): the team runs as the human."""
from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable

# The transitions whose reason is the news (its Liza-Args `reason`).
WITH_REASON = frozenset({"REJECTED", "BLOCKED", "INTEGRATION_FAILED"})
CATCH_UP = 200
REMEMBER = 4 * CATCH_UP  # commits (and transitions) the feed remembers having shown


def key(entry: dict[str, Any]) -> tuple[str, ...]:
    """A transition whatever commit carries it: a sync that replays a local op writes a new commit
    with the same op, actor, task, time and arguments (Liza-Time is kept)."""
    import json
    if "error" in entry:
        return (entry["state"],)
    return (entry["op"], entry["actor"], str(entry.get("task")), entry["time"],
            json.dumps(entry["args"], sort_keys=True))


def _remember(seen: OrderedDict[Any, None], item: Any) -> None:
    seen[item] = None
    seen.move_to_end(item)
    while len(seen) > REMEMBER:
        seen.popitem(last=False)


def line(entry: dict[str, Any]) -> str:
    """One transition as the team prints it: its summary, and the reason where it is the news."""
    from gitliza.core.terminal import safe_line
    if "error" in entry:
        return f"board: {entry['state'][:12]}: {entry['error']}"
    text = f"board: {entry['summary']}"
    reason = (entry.get("args") or {}).get("reason")
    if entry.get("to") in WITH_REASON and isinstance(reason, str) and reason:
        text += f": {reason}"
    return safe_line(text)


class Follower:
    """A thread printing the board's new transitions until `stop`."""

    def __init__(self, root: Path, write: Callable[[str], None]) -> None:
        self.root = root
        self.write = write
        self._stop = threading.Event()
        self._watcher: Any = None
        self._thread = threading.Thread(target=self._run, name="liza-team-follow", daemon=True)

    def start(self) -> Follower:
        from gitliza.git.refwatch import RefWatcher
        from gitliza.services.api import Liza
        from gitliza.services.autoseal import Sealer
        self._liza = Liza.open(self.root)
        # `team` runs as the human: it seals every seal_every commits (services/autoseal.py).
        self._sealer = Sealer(self._liza, lambda s: self.write(f"team: {s}\n"))
        self._watcher = RefWatcher(self.root).start()
        self._seen = self._watcher.tip()  # what was there before the team: not news
        self._commits: OrderedDict[str, None] = OrderedDict()  # walked: the walk stops there
        self._shown: OrderedDict[tuple[str, ...], None] = OrderedDict()  # transitions shown
        if self._seen is not None:
            from gitliza.services.views.data import log_entry
            for n, c in enumerate(self._liza.store.history(self._seen)):
                if n >= CATCH_UP:
                    break
                _remember(self._commits, str(c.id))
                _remember(self._shown, key(log_entry(c)))
        self._thread.start()
        # The team is a candidate remote follower of its clone too (services/sync/follower.py).
        from gitliza.services.sync import follower
        self._remote = follower.start_for(self._liza, lambda s: self.write(f"team: {s}\n"))
        return self

    def stop(self) -> None:
        """Print what landed up to now, then end."""
        self._stop.set()
        remote = getattr(self, "_remote", None)
        if remote is not None:
            remote.stop()
        if self._watcher is not None:
            self._watcher.poke()
        self._thread.join(5)
        if self._watcher is not None:
            self._watcher.close()

    def _run(self) -> None:
        while True:
            stopping = self._stop.is_set()
            try:
                self._show_new()
            except Exception as e:  # noqa: BLE001 - the follower never takes the team down
                self.write(f"team: cannot follow the board: {e}\n")
                return
            if stopping:
                return
            self._watcher.wait(5)

    def _show_new(self) -> None:
        from gitliza.core.encoding import record
        from gitliza.services.views.data import log_entry
        tip = self._watcher.tip()
        if tip is None or tip == self._seen:
            return
        new: list[dict[str, Any]] = []
        for c in self._liza.store.history(tip):
            # A sync that replayed local ops moved what was seen off the chain: the walk stops
            # at the newest commit already walked (the merge base), and of the transitions
            # above it only those not shown yet are news (a replayed op was, under its old
            # commit).
            if str(c.id) in self._commits or len(new) >= CATCH_UP:
                break
            new.append(log_entry(c))
            _remember(self._commits, str(c.id))
        for e in reversed(new):
            k = key(e)
            if k in self._shown:
                continue
            _remember(self._shown, k)
            if "error" in e or not record.is_bookkeeping(e["op"], e["args"]):
                self.write(line(e) + "\n")
        self._seen = tip
        self._sealer.maybe()
